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

-- -o wide adds what a provider declares (live, family, the attributes it
-- provides) and the files each plugin shadows.
local function table_text(reg, wide)
  local header = { "NAME", "ORIGIN" }
  if wide then
    header[#header + 1] = "DECLARES"
    header[#header + 1] = "SHADOWS"
  end
  header[#header + 1] = "DESCRIPTION"
  local rows = { header }
  for _, e in ipairs(reg.list) do
    local origin = e.origin
    if e.overrides then origin = origin .. " (overrides built-in)" end
    local row = { e.name, origin }
    if wide then
      local d, parts = e.decl or {}, {}
      if d.live then parts[#parts + 1] = "live" end
      if d.family then parts[#parts + 1] = "family=" .. d.family end
      if d.provides and #d.provides > 0 then parts[#parts + 1] = "provides=" .. table.concat(d.provides, ",") end
      row[#row + 1] = #parts > 0 and table.concat(parts, " ") or "-"
      row[#row + 1] = #e.shadows > 0 and table.concat(e.shadows, ",") or "-"
    end
    row[#row + 1] = e.description
    rows[#rows + 1] = row
  end
  local widths = {}
  for _, r in ipairs(rows) do
    for i = 1, #r - 1 do widths[i] = math.max(widths[i] or 0, #r[i]) end
  end
  local out = {}
  for _, r in ipairs(rows) do
    local parts = {}
    -- padded by hand: string.format's widths stop at 99 (a provider may
    -- declare a long list of attributes)
    for i = 1, #r - 1 do parts[i] = r[i] .. (" "):rep(widths[i] - #r[i]) end
    parts[#parts + 1] = r[#r]
    out[#out + 1] = (table.concat(parts, "  "):gsub("%s+$", ""))
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
  if fmt == "json" or fmt == "yaml" then
    local arr = {}
    for i, e in ipairs(reg.list) do
      arr[i] = setmetatable({ name = e.name, origin = e.origin, description = e.description,
                              overrides = e.overrides,
                              shadows = #e.shadows > 0 and json.array(e.shadows) or nil }, ORDER)
    end
    if fmt == "yaml" then text = require("fluence.yaml_out").encode(json.array(arr))
    else text = json.encode(json.array(arr), { indent = 2 }) .. "\n" end
  elseif fmt == "name" then
    local names = {}
    for i, e in ipairs(reg.list) do names[i] = e.name end
    text = #names > 0 and table.concat(names, "\n") .. "\n" or ""
  elseif fmt == nil or fmt == "table" or fmt == "wide" then
    text = table_text(reg, fmt == "wide")
  else
    errors.raise("USAGE", "%s: unknown output format %q (table, wide, name, json or yaml)", verb, fmt)
  end
  sys.write(1, text)
  return sys.EXIT.OK
end

return M
