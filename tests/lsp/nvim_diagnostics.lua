-- Run by tests/test_lsp_neovim.py inside `nvim --headless`: start `rankdoctor lsp` with
-- Neovim's own LSP client (0.7's API: vim.lsp.start_client), on the log folder RD_ROOT as the
-- workspace, attach it to the opened buffer, wait for an error diagnostic and those of RD_FILES files, hover on RD_HOVER_LINE
-- of the buffer, and write what the client holds as JSON to RD_OUT.
local root, out = os.getenv('RD_ROOT'), os.getenv('RD_OUT')
local cmd = vim.fn.json_decode(os.getenv('RD_CMD'))
local id = vim.lsp.start_client({
  name = 'rankdoctor',
  cmd = cmd,
  root_dir = root,
  workspace_folders = { { uri = vim.uri_from_fname(root), name = 'logs' } },
})
vim.lsp.buf_attach_client(0, id)

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
local ok = vim.wait(tonumber(os.getenv('RD_WAIT_MS') or '90000'), arrived, 100)

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
  local params = { textDocument = { uri = vim.uri_from_bufnr(0) }, position = { line = line, character = 2 } }
  local res = vim.lsp.buf_request_sync(0, 'textDocument/hover', params, 20000) or {}
  for _, r in pairs(res) do
    if r.result then
      hover = r.result.contents.value
    end
  end
end

vim.fn.writefile({ vim.fn.json_encode({ ok = ok, diagnostics = rows, hover = hover,
  error_name = vim.diagnostic.severity.ERROR, info_name = vim.diagnostic.severity.INFO }) }, out)
vim.lsp.stop_client(id)
vim.cmd('qall!')
