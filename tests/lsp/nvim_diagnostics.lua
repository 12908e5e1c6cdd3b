-- Run by tests/test_lsp_neovim.py inside `nvim --headless`: the README's Neovim setup
-- (editors/neovim/rankdoctor.lua, RD_PLUGIN) with its command RD_CMD, then RD_FILE opened from
-- the run's log folder (the current folder: the workspace). Waits for an error diagnostic and
-- those of RD_FILES files, hovers on RD_HOVER_LINE, runs :RankdoctorDiagnose on the buffer,
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
  error_name = vim.diagnostic.severity.ERROR, info_name = vim.diagnostic.severity.INFO }) }, out)
for _, c in pairs((vim.lsp.get_clients or vim.lsp.get_active_clients)()) do
  c.stop()
end
vim.cmd('qall!')
