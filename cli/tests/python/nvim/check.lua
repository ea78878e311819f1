-- Run by cli/tests/python/lsp_neovim.py inside `nvim --headless`, after docs/editors.md's Neovim setup has
-- been sourced, with the Python file of a workspace (holding a pysplice.toml) open.
-- What an editor user does: wait for the hook diagnostics, take the quick fix "Apply recipe ID",
-- apply its edit, see the diagnostics say "applied", hover a marker, write the file.
-- Prints one line per check; the first failure ends Neovim with exit code 1.

local TIMEOUT = 15000
local recipe = vim.env.PYSPLICE_TEST_RECIPE

local function fail(message)
  io.stdout:write("FAIL " .. message .. "\n")
  vim.cmd("cquit 1")
end

local function ok(message)
  io.stdout:write("ok   " .. message .. "\n")
end

local function client()
  return vim.lsp.get_clients({ bufnr = 0, name = "pysplice" })[1]
end

if not vim.wait(TIMEOUT, function() return client() ~= nil end, 50) then
  fail("the pysplice client did not attach to " .. vim.api.nvim_buf_get_name(0))
end
ok("client attached from docs/editors.md's setup")

local function messages()
  local out = {}
  for _, d in ipairs(vim.diagnostic.get(0)) do
    table.insert(out, d.message)
  end
  return out
end

local function all_say(word)
  local found = messages()
  if #found == 0 then
    return false
  end
  for _, m in ipairs(found) do
    if not m:find(word, 1, true) then
      return false
    end
  end
  return true
end

if not vim.wait(TIMEOUT, function() return all_say("can be applied") end, 50) then
  fail("no 'can be applied' diagnostics: " .. vim.inspect(messages()))
end
ok(#messages() .. " hook diagnostics say 'can be applied'")

-- The code actions at the first diagnostic, as `vim.lsp.buf.code_action()` asks for them.
local first = vim.diagnostic.get(0)[1]
local params = vim.lsp.util.make_range_params(0, "utf-16")
params.range = {
  start = { line = first.lnum, character = 0 },
  ["end"] = { line = first.lnum, character = 0 },
}
params.context = { diagnostics = vim.lsp.diagnostic.from(vim.diagnostic.get(0, { lnum = first.lnum })) }
local answers = vim.lsp.buf_request_sync(0, "textDocument/codeAction", params, TIMEOUT) or {}
local action
for _, answer in pairs(answers) do
  for _, a in ipairs(answer.result or {}) do
    if a.kind == "quickfix" and a.title:find("Apply recipe " .. recipe, 1, true) then
      action = a
    end
  end
end
if not action then
  fail("no quick fix 'Apply recipe " .. recipe .. "': " .. vim.inspect(answers))
end
ok("quick fix offered: " .. action.title)

-- Neovim resolves an action without an edit through codeAction/resolve, as here.
if not action.edit then
  local resolved = client():request_sync("codeAction/resolve", action, TIMEOUT, 0)
  if not resolved or resolved.err or not resolved.result.edit then
    fail("codeAction/resolve gave no edit: " .. vim.inspect(resolved))
  end
  action = resolved.result
  ok("resolved into an edit")
end
vim.lsp.util.apply_workspace_edit(action.edit, "utf-16")
local text = table.concat(vim.api.nvim_buf_get_lines(0, 0, -1, false), "\n")
if not text:find("pysplice " .. recipe .. "/", 1, true) then
  fail("the edit placed no marker of recipe " .. recipe)
end
ok("edit applied: the buffer carries the recipe's markers")

if not vim.wait(TIMEOUT, function() return all_say("applied: ") end, 50) then
  fail("the diagnostics do not say 'applied' after the edit: " .. vim.inspect(messages()))
end
ok("diagnostics say 'applied' after the edit")

-- Hover on a marker line names its hook.
local lines = vim.api.nvim_buf_get_lines(0, 0, -1, false)
local marker
for i, l in ipairs(lines) do
  if l:find("pysplice " .. recipe .. "/", 1, true) then
    marker = i - 1
    break
  end
end
local hover_params = {
  textDocument = vim.lsp.util.make_text_document_params(0),
  position = { line = marker, character = #lines[marker + 1] - 1 },
}
local hovers = vim.lsp.buf_request_sync(0, "textDocument/hover", hover_params, TIMEOUT) or {}
local hover_text
for _, answer in pairs(hovers) do
  if answer.result and answer.result.contents then
    hover_text = vim.inspect(answer.result.contents)
  end
end
if not hover_text or not hover_text:find(recipe, 1, true) then
  fail("hover on the marker line " .. marker .. " says nothing of the recipe: " .. vim.inspect(hovers))
end
ok("hover on a marker names the recipe")

vim.cmd("write")
ok("written")
vim.cmd("qall!")
