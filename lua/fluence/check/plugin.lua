-- `fluence check` of a plugin file (*.lua in a policies/ or providers/
-- directory, or a file named on the command line that returns a plugin):
-- Lua syntax, loading in the sandbox, the name equal to the file's, and
-- every export against the plugin contract (fluence.plugin_contract): a
-- wrong type is an error, a likely typo of an export's name a warning.
local errors = require "fluence.errors"
local plugins = require "fluence.plugins"
local contract = require "fluence.plugin_contract"

local M = {}

-- A name that is no export but looks like a typo of one.  Names written
-- in capitals are a plugin's own constants (braket-live's LIVE), never a
-- misspelt export: the exports are all lower case.
local function typo(kind, k)
  if contract.export(kind, k) or k:match("^[%u%d_]+$") then return nil end
  local names = {}
  for i, e in ipairs(contract.kinds[kind].exports) do names[i] = e.name end
  return require("fluence.suggest").closest(k, names)
end

-- Every problem of a loaded plugin's exports (read raw: no metamethod of
-- the plugin runs): { {severity = "error" | "warning", message}, ... }
function M.problems(kind, plugin)
  local out = {}
  for _, e in ipairs(contract.kinds[kind].exports) do
    local why = contract.wrong(kind, e.name, rawget(plugin, e.name))
    if why then out[#out + 1] = { severity = "error", message = why } end
  end
  local keys = {}
  for k in next, plugin do
    if type(k) == "string" then keys[#keys + 1] = k end
  end
  table.sort(keys)
  for _, k in ipairs(keys) do
    local s = typo(kind, k)
    if s then
      out[#out + 1] = { severity = "warning",
                        message = errors.format("%s plugin export %q is not one fluence reads (did you mean %q?)",
                                                kind, k, s) }
    end
  end
  return out
end

function M.check(s, path, text, kind)
  s.stats.plugin = s.stats.plugin + 1
  local ok, plugin = errors.try(plugins.load_file, kind, path, { api = s.api })
  if not ok then return s:error(plugin, path) end
  local why = plugins.misnamed(kind, plugin, path:match("([^/]*)%.lua$"))
  if why then return s:error({ file = path, message = why }) end
  for _, p in ipairs(M.problems(kind, plugin)) do
    s:add(p.severity, { file = path, message = p.message })
  end
end

return M
