-- Drives a real Neovim for tests/test_nvim.py:
--
--   nvim --headless --clean -u init.lua -l nvim_driver.lua SCENARIO FILE OUT.json [USER.lua]
--
-- init.lua only puts editors/nvim on 'runtimepath' and calls vim.lsp.enable('referee');
-- everything referee gets comes from editors/nvim/lsp/referee.lua. This script opens
-- FILE, does what SCENARIO says, waits on conditions (never a fixed sleep, never longer
-- than TIMEOUT_MS per wait) and writes what it saw to OUT.json for the test to assert.
-- USER.lua, if given, is sourced first: the snippets of docs/editors.md a user would put
-- in their init.lua.

local scenario, file, out, user_config = arg[1], arg[2], arg[3], arg[4]
local TIMEOUT_MS = 15000

local result = { scenario = scenario, notifications = {}, progress = {} }

-- Anything Neovim would have shown the user ("No code actions available", errors).
vim.notify = function(msg, level)
  table.insert(result.notifications, { message = tostring(msg), level = level })
end
vim.lsp.log.set_level('debug')
result.log = vim.lsp.log.get_filename()

local function referee_diagnostics(buf)
  local items = {}
  for _, d in ipairs(vim.diagnostic.get(buf)) do
    if d.source == 'referee' then
      table.insert(items, {
        code = d.code,
        lnum = d.lnum,
        col = d.col,
        end_lnum = d.end_lnum,
        end_col = d.end_col,
        message = d.message,
      })
    end
  end
  table.sort(items, function(a, b)
    return a.lnum < b.lnum or (a.lnum == b.lnum and a.col < b.col)
  end)
  return items
end

local function codes(buf)
  local set = {}
  for _, d in ipairs(referee_diagnostics(buf)) do
    set[d.code] = true
  end
  return set
end

local function wait_for(what, condition)
  if not vim.wait(TIMEOUT_MS, condition, 10) then
    error(('timed out after %d ms waiting for %s'):format(TIMEOUT_MS, what), 0)
  end
end

local function lines(buf)
  return vim.api.nvim_buf_get_lines(buf, 0, -1, false)
end

local scenarios = {}

-- Diagnostics appear on open, and go away when the text is fixed by an edit.
function scenarios.diagnostics(buf)
  wait_for('referee diagnostics after opening the file', function()
    return #referee_diagnostics(buf) > 0
  end)
  result.opened = referee_diagnostics(buf)

  -- Fix both findings: give the placeholder test a body and the other an assertion.
  vim.api.nvim_buf_set_lines(buf, 1, 2, true, { '    assert int("90") == 90' })
  vim.api.nvim_buf_set_lines(buf, 5, 6, true, { '    assert sum([1, 2]) == 3' })
  result.edited_lines = lines(buf)
  wait_for('the diagnostics to be cleared after the edit', function()
    return #referee_diagnostics(buf) == 0
  end)
  result.fixed = referee_diagnostics(buf)
  -- Cleared because the server said so, not because it went away.
  result.still_attached = #vim.lsp.get_clients({ bufnr = buf, name = 'referee' }) > 0
end

-- "Ignore REF110 on this line", chosen and applied through vim.lsp.buf.code_action.
function scenarios.ignore_action(buf)
  wait_for('REF110 after opening the file', function()
    return codes(buf).REF110
  end)
  result.opened = referee_diagnostics(buf)
  local target
  for _, d in ipairs(result.opened) do
    if d.code == 'REF110' then
      target = d
    end
  end
  -- Where a user would put the cursor: on the underlined name (1-based row, 0-based col).
  vim.api.nvim_win_set_cursor(0, { target.lnum + 1, target.col })
  vim.lsp.buf.code_action({
    apply = true,
    filter = function(action)
      return action.title == 'Ignore REF110 on this line'
    end,
  })
  wait_for('REF110 to disappear after applying the code action', function()
    return not codes(buf).REF110
  end)
  result.after = referee_diagnostics(buf)
  result.after_lines = lines(buf)
end

-- Only what the diagnostics are, once they are there (for the settings snippet).
function scenarios.open(buf)
  wait_for('referee diagnostics after opening the file', function()
    return #referee_diagnostics(buf) > 0
  end)
  result.opened = referee_diagnostics(buf)
end

-- :RefereeCheckWorkspace and the LspProgress autocmd, as docs/editors.md defines them.
function scenarios.check_workspace(buf)
  vim.api.nvim_create_autocmd('LspProgress', {
    callback = function(ev)
      local value = ev.data.params.value
      local event = { kind = value.kind, title = value.title, message = value.message }
      table.insert(result.progress, event)
    end,
  })
  wait_for('referee to attach', function()
    return #vim.lsp.get_clients({ bufnr = buf, name = 'referee' }) > 0
  end)
  vim.cmd('RefereeCheckWorkspace')
  wait_for('the command to report its result', function()
    for _, n in ipairs(result.notifications) do
      if n.message:match('^referee: %d+ files') then
        return true
      end
    end
    return false
  end)
  wait_for('the progress to end', function()
    local last = result.progress[#result.progress]
    return last ~= nil and last.kind == 'end'
  end)
end

local ok, err = xpcall(function()
  if user_config and user_config ~= '' then
    vim.cmd.source(vim.fn.fnameescape(user_config))
  end
  vim.cmd.edit(vim.fn.fnameescape(file))
  local buf = vim.api.nvim_get_current_buf()
  result.filetype = vim.bo[buf].filetype
  local run = assert(scenarios[scenario], 'no such scenario: ' .. tostring(scenario))
  -- A server that fails to start says so in a notification: stop waiting then.
  local attached = vim.wait(TIMEOUT_MS, function()
    return #vim.lsp.get_clients({ bufnr = buf }) > 0 or #result.notifications > 0
  end, 10) and #vim.lsp.get_clients({ bufnr = buf }) > 0
  for _, client in ipairs(vim.lsp.get_clients({ bufnr = buf })) do
    result.client = { name = client.name, cmd = client.config.cmd, root_dir = client.root_dir }
  end
  if not attached then
    error('no language server attached to ' .. file, 0)
  end
  run(buf)
end, debug.traceback)
if not ok then
  result.error = tostring(err)
end

local handle = assert(io.open(out, 'w'))
handle:write(vim.json.encode(result))
handle:close()

-- Shut the server down cleanly rather than leave it to the exit.
for _, client in ipairs(vim.lsp.get_clients()) do
  client:stop()
end
vim.wait(TIMEOUT_MS, function()
  return #vim.lsp.get_clients() == 0
end, 10)
