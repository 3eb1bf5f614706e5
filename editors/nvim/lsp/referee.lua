-- referee language server for Neovim 0.11+ (the `lsp/` convention).
--
-- Put editors/nvim on 'runtimepath' (or copy this file to ~/.config/nvim/lsp/), then:
--
--   vim.lsp.enable('referee')
--
-- Override any setting with vim.lsp.config('referee', { settings = { referee = { ... } } }).
-- Every setting is described in docs/editors.md.

-- The server's defaults (server/options.py). `select`, `configuration` and `python` are unset by
-- default: the project's own `select` and the nearest referee.toml / pyproject.toml apply.
local defaults = {
  extendSelect = {}, -- rule codes or prefixes added to the project's selection
  ignore = {}, -- rule codes or prefixes left out
  run = 'onType', -- 'onType', 'onSave' or 'off'
  debounceMs = 50, -- quiet time after a change before checking (0-5000)
  -- select = { 'REF1' },                  -- replaces the project's `select`
  -- configuration = '/path/to/referee.toml', -- instead of the nearest one
  -- python = '.venv/bin/python',             -- runs the project's tests (docs/configuration.md)
}

---@type vim.lsp.Config
return {
  cmd = { 'referee', 'serve' },
  filetypes = { 'python', 'markdown', 'text' },
  root_markers = { 'referee.toml', '.referee.toml', 'pyproject.toml', '.git' },
  -- Used until the server has read `settings` (workspace/configuration).
  init_options = vim.deepcopy(defaults),
  -- What the server asks for in workspace/configuration; these win over init_options.
  settings = {
    referee = vim.deepcopy(defaults),
  },
}
