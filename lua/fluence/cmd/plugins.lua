-- `fluence policies` and `fluence providers`: every plugin the search path
-- finds, where it comes from and what it does, in search order's winner.
--
--   fluence policies [--policy-dir DIR]... [-o json|name]
--   fluence providers [--provider-dir DIR]... [-o json|name]
--
-- The table goes to stdout in one write; the search path is printed under it
-- so a user can see why a file was (not) picked up.
local sys = require "fluence.sys"
local errors = require "fluence.errors"
local json = require "fluence.json"
local plugins = require "fluence.plugins"

local M = {}

local ORDER = { __order = { "name", "origin", "description", "overrides", "shadows" } }

local function provider_api()
  local ok, api_mod = pcall(require, "fluence.provider_api")
  if ok and type(api_mod) == "table" and api_mod.new then
    local ok2, api = pcall(api_mod.new, {})
    if ok2 then return api end
  end
  return {}
end

local function table_text(reg)
  local rows = { { "NAME", "ORIGIN", "DESCRIPTION" } }
  for _, e in ipairs(reg.list) do
    local origin = e.origin
    if e.overrides then origin = origin .. " (overrides built-in)" end
    rows[#rows + 1] = { e.name, origin, e.description }
  end
  local w1, w2 = 0, 0
  for _, r in ipairs(rows) do
    w1 = math.max(w1, #r[1])
    w2 = math.max(w2, #r[2])
  end
  local out = {}
  for _, r in ipairs(rows) do
    out[#out + 1] = (("%-" .. w1 .. "s  %-" .. w2 .. "s  %s"):format(r[1], r[2], r[3]):gsub("%s+$", ""))
  end
  out[#out + 1] = ""
  out[#out + 1] = "search order: " .. (function()
    local parts = {}
    for _, d in ipairs(reg.dirs) do parts[#parts + 1] = d.dir end
    parts[#parts + 1] = "built-in"
    return table.concat(parts, ", ")
  end)()
  return table.concat(out, "\n") .. "\n"
end

function M.run(args)
  local verb = args.verb
  local opts = args.opts or {}
  local reg
  if verb == "providers" then
    reg = plugins.load_providers{ dirs = opts["provider-dir"], api = provider_api() }
  else
    reg = plugins.load_policies{ dirs = opts["policy-dir"] }
  end
  local fmt = opts.output
  local text
  if fmt == "json" then
    local arr = {}
    for i, e in ipairs(reg.list) do
      arr[i] = setmetatable({ name = e.name, origin = e.origin, description = e.description,
                              overrides = e.overrides,
                              shadows = #e.shadows > 0 and json.array(e.shadows) or nil }, ORDER)
    end
    text = json.encode(json.array(arr), { indent = 2 }) .. "\n"
  elseif fmt == "name" then
    local names = {}
    for i, e in ipairs(reg.list) do names[i] = e.name end
    text = #names > 0 and table.concat(names, "\n") .. "\n" or ""
  elseif fmt == nil or fmt == "table" or fmt == "wide" then
    text = table_text(reg)
  else
    errors.raise("USAGE", "%s: unknown output format %q (json, name or the default table)", verb, fmt)
  end
  sys.write(1, text)
  return sys.EXIT.OK
end

return M
