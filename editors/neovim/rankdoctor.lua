-- rankdoctor for Neovim: starts `rankdoctor lsp` with Neovim's built-in LSP client on log files
-- (*.log, *.out, *.err, *.txt, a torchrun --log-dir tree), copies the verify command a code
-- action returns, and adds :RankdoctorDiagnose (the buffer, or a range, as a report in a split).
-- Works with Neovim 0.7 (vim.lsp.start_client) and later (vim.lsp.start).
--
--   require('rankdoctor').setup()                         -- `rankdoctor` on PATH
--   require('rankdoctor').setup({ cmd = { '/path/to/.venv/bin/rankdoctor', 'lsp' } })
local M = {}

local PATTERNS = { '*.log', '*.out', '*.err', '*.txt', '*/attempt_*/*/*' }

-- the workspace: the current folder when the log lies under it (`cd logs/ && nvim rank_0.log`),
-- else the log's own folder
local function root_of(path)
  local cwd = vim.fn.getcwd()
  if path:sub(1, #cwd + 1) == cwd .. '/' then
    return cwd
  end
  return vim.fn.fnamemodify(path, ':h')
end

local function copy_verify(command)
  local text = command.arguments[1]
  vim.fn.setreg('"', text)
  pcall(vim.fn.setreg, '+', text) -- the system clipboard, where Neovim has a provider for it
  vim.notify('rankdoctor: verify command copied: ' .. text)
end

-- Client methods are called with ':' from Neovim 0.11 on, with '.' before
local function request(client, method, params, handler, bufnr)
  if vim.fn.has('nvim-0.11') == 1 then
    return client:request(method, params, handler, bufnr)
  end
  return client.request(method, params, handler, bufnr)
end

local function show_report(markdown)
  vim.cmd('vnew')
  vim.bo.buftype = 'nofile'
  vim.bo.bufhidden = 'wipe'
  vim.bo.filetype = 'markdown'
  vim.api.nvim_buf_set_name(0, 'rankdoctor report ' .. vim.api.nvim_get_current_buf())
  vim.api.nvim_buf_set_lines(0, 0, -1, false, vim.split(markdown, '\n'))
end

function M.setup(opts)
  opts = opts or {}
  local cmd = opts.cmd or { 'rankdoctor', 'lsp' }
  local clients = {} -- root -> client id (Neovim 0.7)
  local group = vim.api.nvim_create_augroup('rankdoctor', { clear = true })

  vim.api.nvim_create_autocmd('BufReadPost', {
    group = group,
    pattern = PATTERNS,
    callback = function(args)
      local path = vim.api.nvim_buf_get_name(args.buf)
      local root = root_of(path)
      local config = {
        name = 'rankdoctor',
        cmd = cmd,
        root_dir = root,
        workspace_folders = { { uri = vim.uri_from_fname(root), name = root } },
        init_options = opts.init_options,
        commands = { ['rankdoctor.copyVerifyCommand'] = copy_verify },
      }
      if vim.lsp.start then
        vim.lsp.start(config, { bufnr = args.buf })
      else
        if not clients[root] or not vim.lsp.get_client_by_id(clients[root]) then
          clients[root] = vim.lsp.start_client(config)
        end
        vim.lsp.buf_attach_client(args.buf, clients[root])
      end
    end,
  })

  vim.api.nvim_create_user_command('RankdoctorDiagnose', function(o)
    local text = table.concat(vim.api.nvim_buf_get_lines(0, o.line1 - 1, o.line2, false), '\n')
    local client
    for _, c in pairs((vim.lsp.get_clients or vim.lsp.get_active_clients)()) do
      if c.name == 'rankdoctor' and vim.lsp.buf_is_attached(0, c.id) then
        client = c
      end
    end
    if not client then
      vim.notify('rankdoctor: the language server is not attached to this buffer', vim.log.levels.ERROR)
      return
    end
    local params = { command = 'rankdoctor.diagnoseText', arguments = { text } }
    request(client, 'workspace/executeCommand', params, function(err, markdown)
      if err then
        vim.notify('rankdoctor: ' .. err.message, vim.log.levels.ERROR)
      else
        show_report(markdown)
      end
    end, 0)
  end, { range = '%', desc = 'rankdoctor: diagnose the buffer or the selected lines' })
end

return M
