-- `fluence check` of a .lua file named on the command line, by what it
-- returns: a plugin (checked as one: fluence.check.plugin), or a
-- `fluence run` policy file (a pipeline string, a function, or a table
-- with a pipeline), whose pipeline is compiled.
local errors = require "fluence.errors"
local sandbox = require "fluence.sandbox"
local contract = require "fluence.plugin_contract"

local M = {}

-- Which kind of plugin a file's value is, by its entry point (compile,
-- candidates).
local function kind_of(value)
  if type(value) ~= "table" then return nil end
  for _, kind in ipairs{ "policy", "provider" } do
    if rawget(value, contract.kinds[kind].entry) ~= nil then return kind end
  end
end

function M.check(s, path, text)
  local chunk, err = load(text, "@" .. path, "t", {})
  if not chunk then
    return s:error(require("fluence.lua_syntax").location(path, text, err) or err, path)
  end
  chunk = load(text, "@" .. path, "t", sandbox.env{ api = s.api })
  local ok, value = sandbox.call(chunk, { kind = "plugin", name = path, file = path, phase = "load" })
  if not ok then return s:error(tostring(value), path) end
  local kind = kind_of(value)
  if kind then return require("fluence.check.plugin").check(s, path, text, kind) end
  if type(value) == "string" or type(value) == "function" or (type(value) == "table" and rawget(value, "pipeline")) then
    s.stats.plugin = s.stats.plugin + 1
    local ok2, e = errors.try(function()
      local how = require("fluence.runpolicy").how(path, { opts = {} })
      local reg = s:policies_for(path)
      if reg then how.load_policy{ policies = reg } end
    end)
    if not ok2 then s:error(e, path) end
    return
  end
  s:error({ file = path, message = ("not a plugin: it returns %s (a policy returns {name =, description =, " ..
                                    "compile =}, a provider {name =, description =, candidates =}, a `fluence " ..
                                    "run` file a pipeline or a function)"):format(type(value)) })
end

return M
