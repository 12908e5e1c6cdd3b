-- Run by tests/test_lsp_neovim.py inside `nvim --headless`: the README's Neovim setup
-- (editors/neovim/rankdoctor.lua, RD_PLUGIN) with its command RD_CMD, then RD_FILE opened from
-- the run's log folder (the current folder: the workspace). Waits for an error diagnostic and
-- those of RD_FILES files, hovers on RD_HOVER_LINE, takes the two code actions there, runs
-- :RankdoctorDiagnose on the buffer,
-- and writes what Neovim holds as JSON to RD_OUT.
local out = os.getenv('RD_OUT')
dofile(os.getenv('RD_PLUGIN')).setup({ cmd = vim.fn.json_decode(os.getenv('RD_CMD')) })
vim.cmd('edit ' .. vim.fn.fnameescape(os.getenv('RD_FILE')))
local file_buf = vim.api.nvim_get_current_buf()
local wait_ms = tonumber(os.getenv('RD_WAIT_MS') or '90000')

-- done when an error has come and diagnostics for RD_FILES files
local function arrived()
  local error, files, n = false, {}, 0
  for _, d in ipairs(vim.diagnostic.get()) do
    error = error or d.severity == vim.diagnostic.severity.ERROR
    if not files[d.bufnr] then
      files[d.bufnr], n = true, n + 1
    end
  end
  return error and n >= tonumber(os.getenv('RD_FILES') or '1')
end
local ok = vim.wait(wait_ms, arrived, 100)

local rows = {}
for _, d in ipairs(vim.diagnostic.get()) do
  local lsp = (d.user_data or {}).lsp or {}
  local related = {}
  for _, r in ipairs(lsp.relatedInformation or {}) do
    table.insert(related, { file = vim.uri_to_fname(r.location.uri), lnum = r.location.range.start.line })
  end
  table.insert(rows, {
    file = vim.api.nvim_buf_get_name(d.bufnr),
    lnum = d.lnum,
    severity = d.severity,
    source = d.source,
    code = lsp.code,
    message = d.message,
    related = related,
  })
end

local hover = vim.NIL
local line = tonumber(os.getenv('RD_HOVER_LINE') or '-1')
if line >= 0 then
  local params = { textDocument = { uri = vim.uri_from_bufnr(file_buf) }, position = { line = line, character = 2 } }
  local res = vim.lsp.buf_request_sync(file_buf, 'textDocument/hover', params, 20000) or {}
  for _, r in pairs(res) do
    if r.result then
      hover = r.result.contents.value
    end
  end
end

-- the two code actions on that line, chosen as a user would in vim.ui.select's list: the
-- verify command lands in the unnamed register; the entry's page (Neovim 0.7 cannot show
-- documents) comes as a message with its URL
local messages = {}
vim.lsp.handlers['window/showMessage'] = function(_, result)
  table.insert(messages, result.message)
end
local titles = {}
local function choose(wanted)
  vim.ui.select = function(items, _, on_choice)
    for i, item in ipairs(items) do
      local title = item[2].title
      titles[title] = true
      if title:find(wanted, 1, true) then
        return on_choice(item, i)
      end
    end
    on_choice(nil, nil)
  end
  vim.api.nvim_win_set_cursor(0, { line + 1, 2 })
  vim.lsp.buf.code_action()
end
vim.fn.setreg('"', '')
choose('Copy the verify command')
vim.wait(wait_ms, function() return vim.fn.getreg('"') ~= '' end, 100)
local copied = vim.fn.getreg('"')
choose('Open the encyclopedia entry')
vim.wait(wait_ms, function() return #messages > 0 end, 100)
local action_titles = vim.tbl_keys(titles)
table.sort(action_titles)

-- :RankdoctorDiagnose on the whole buffer opens the report in a split
vim.cmd('RankdoctorDiagnose')
local report = vim.NIL
vim.wait(wait_ms, function()
  for _, b in ipairs(vim.api.nvim_list_bufs()) do
    if vim.api.nvim_buf_get_name(b):find('rankdoctor report', 1, true) then
      report = table.concat(vim.api.nvim_buf_get_lines(b, 0, -1, false), '\n')
      return true
    end
  end
  return false
end, 100)

vim.fn.writefile({ vim.fn.json_encode({ ok = ok, diagnostics = rows, hover = hover, report = report,
  copied = copied, messages = messages, actions = action_titles,
  error_name = vim.diagnostic.severity.ERROR, info_name = vim.diagnostic.severity.INFO }) }, out)
for _, c in pairs((vim.lsp.get_clients or vim.lsp.get_active_clients)()) do
  c.stop()
end
vim.cmd('qall!')
