-- Finding, sandboxing, loading and checking plugins: policies and providers.
--
--   plugins.load_policies{ dirs = {...} }                 -> registry
--   plugins.load_providers{ dirs = {...}, api = api }     -> registry
--
-- Search order (the first file of a name wins, later ones are shadowed):
--   1. opts.dirs, in order                  (--policy-dir / --provider-dir)
--   2. $FLUENCE_POLICY_PATH / $FLUENCE_PROVIDER_PATH, colon-separated
--   3. ~/.fluence/policies / ~/.fluence/providers
--   4. the built-ins: policies/*.lua / providers/*.lua compiled into the
--      binary (with $FLUENCE_SOURCE_DIR set, that tree's files first)
-- A plugin file NAME.lua must return a table whose `name` is NAME.
--
-- A registry: reg.list (sorted by name) of entries
--   { name, description, origin = path | "built-in:policies/x.lua", source,
--     plugin = <the returned table>, overrides = "built-in" | nil,
--     shadows = { origin, ... },
--     decl = { live =, family =, provides =, enriches = } }   -- what a provider declares
-- and reg.get(name) -> entry | nil.
--
-- The built-ins compiled into the binary load on first use (the first read
-- of e.plugin or e.description): a run names two or three of them, and
-- loading all eleven was a tenth of a small selection.  What a built-in
-- provider declares is known without loading it (e.decl, read from its file
-- when the binary was built: tools/embed.lua), so a run can tell which
-- providers it needs.  Plugins from directories load at once, as before: a
-- broken one is reported even when the run does not use it.
--
-- Every plugin is loaded in text mode with chunk name "@"..path into its own
-- sandbox environment (fluence.sandbox; providers also see `api`), under an
-- instruction budget; the built-ins compiled into the binary (binary mode,
-- trusted) share one environment per registry.  A broken plugin raises a structured INPUT error
-- "PATH:LINE: message" (or "PATH: message" for a missing export).
--
-- Options for tests and special callers: path (instead of the environment
-- variable), home (instead of $HOME), source_dir (instead of
-- $FLUENCE_SOURCE_DIR), builtins = false (skip them), budget.
local sys = require "fluence.sys"
local errors = require "fluence.errors"
local sandbox = require "fluence.sandbox"

local plugins = {}

-- The kinds, their exports and the name rule: fluence.plugin_contract.
local contract = require "fluence.plugin_contract"
local KINDS = contract.kinds

local function fail(fmt, ...) errors.raise("INPUT", fmt, ...) end
-- A problem of the plugin file at path, as a location (fluence check
-- reports it as fields).
local function bad_file(path, msg)
  local location = require "fluence.location"
  error(location.error("INPUT", { file = path, message = msg }), 0)
end

-- "PATH:LINE: msg" stays; anything else gets "PATH: " in front.
local function at(path, msg)
  msg = tostring(msg)
  if msg:sub(1, #path + 1) == path .. ":" then return msg end
  return path .. ": " .. msg
end

-- Loads one plugin's source and checks its exports.
-- mode: "t" for every plugin file read from disk; only the built-ins compiled
-- into the binary (trusted, precompiled by tools/embed.lua) load as "b".
local function load_plugin(kind, path, src, extra, budget, mode, name, env)
  env = env or sandbox.env(extra)
  local chunk, err = load(src, "@" .. path, mode or "t", env)
  if not chunk then
    local loc = require("fluence.lua_syntax").location(path, src, at(path, err))
    if loc then error(require("fluence.location").error("INPUT", loc), 0) end
    fail("%s", at(path, err))
  end
  local ok, plugin = sandbox.call(chunk, { kind = kind, name = name or path:match("([^/]*)%.lua$") or path,
                                           file = path, phase = "load", budget = budget, trusted = mode == "b" })
  if not ok then fail("%s", at(path, plugin)) end
  if type(plugin) ~= "table" then
    bad_file(path, ("a %s plugin must return a table, got %s"):format(kind, type(plugin)))
  end
  -- A raw copy: the host then never runs the plugin's metamethods (__index,
  -- __pairs ...) outside the instruction budget.
  local exports = {}
  for k, v in next, plugin do exports[k] = v end
  plugin = exports
  -- what the host walks (provides, enriches ...): read raw too
  for k, v in pairs(contract.declared(kind, plugin)) do plugin[k] = v end
  -- the built-ins' exports and names were checked when the binary was
  -- built (tools/embed.lua)
  if mode == "b" then return plugin end
  local bad = contract.problem(kind, plugin)
  if bad then bad_file(path, bad) end
  return plugin
end

local function basename(file) return file:match("^(.*)%.lua$") end

-- Plugin files of a directory: NAME.lua, sorted, no hidden files.
local function lua_files(dir)
  local names, err = sys.list_dir(dir)
  if not names then return nil, err end
  local out = {}
  for _, f in ipairs(names) do
    if f:sub(1, 1) ~= "." and basename(f) and sys.kind(dir .. "/" .. f) == "file" then
      out[#out + 1] = f
    end
  end
  return out
end

local function split_path(s)
  local out = {}
  for p in (s or ""):gmatch("[^:]+") do out[#out + 1] = p end
  return out
end

-- The directories to search, in order: { {dir =, source =}, ... }
function plugins.search_dirs(kind, opts)
  local spec = KINDS[kind]
  local dirs = {}
  for _, d in ipairs(opts.dirs or {}) do dirs[#dirs + 1] = { dir = d, source = spec.option, explicit = true } end
  local path = opts.path
  if path == nil then path = sys.getenv(spec.env) end
  for _, d in ipairs(split_path(path)) do dirs[#dirs + 1] = { dir = d, source = spec.env } end
  local home = opts.home
  if home == nil then home = sys.home() end
  if home and home ~= "" then
    dirs[#dirs + 1] = { dir = home .. "/.fluence/" .. spec.dir, source = "~/.fluence/" .. spec.dir }
  end
  return dirs
end

-- The built-ins compiled into the binary, by kind, and what the built-in
-- providers declare, by name: listed when the binary was built
-- (tools/embed.lua), entries { name =, path = chunk path, origin =,
-- mode = "b" } sorted by name.
local index = { declared = {}, policy = {}, provider = {} }
do
  local chunk = sys.embedded("builtin-plugins.lua")
  if chunk then index = load(chunk, "=builtin-plugins", "b", {})() end
end
local declared = { provider = index.declared }

-- Built-in plugin files: { {name =, path = chunk path, origin =, src =, mode =}, ... }
-- by name: the compiled-in ones as listed at build time, and with a source
-- tree (development) that tree's files first.
local function builtins(kind, opts)
  local spec = KINDS[kind]
  local src_dir = opts.source_dir
  if src_dir == nil then src_dir = sys.getenv("FLUENCE_SOURCE_DIR") end
  if not (src_dir and src_dir ~= "") then return index[kind] end
  local byname, order = {}, {}
  local files = lua_files(src_dir .. "/" .. spec.dir) or {}
  for _, f in ipairs(files) do
    local path = src_dir .. "/" .. spec.dir .. "/" .. f
    local src, err = sys.read_file(path)
    if not src then fail("%s", err) end
    byname[basename(f)] = { path = path, src = src }
    order[#order + 1] = basename(f)
  end
  for _, b in ipairs(index[kind]) do
    if not byname[b.name] then
      byname[b.name] = b                                -- src: read when loaded
      order[#order + 1] = b.name
    end
  end
  table.sort(order)
  local out = {}
  for _, name in ipairs(order) do
    local b = byname[name]
    out[#out + 1] = { name = name, path = b.path, src = b.src, mode = b.mode,
                      origin = "built-in:" .. spec.dir .. "/" .. name .. ".lua" }
  end
  return out
end

local function load_all(kind, opts)
  opts = opts or {}
  local extra = kind == "provider" and { api = opts.api or {} } or nil
  local budget = opts.budget or sandbox.DEFAULT_BUDGET
  local byname, list = {}, {}

  -- The built-ins compiled into the binary (mode "b": trusted, written
  -- with no globals of their own) share one environment per registry; a
  -- plugin from a file gets its own.  Making one was over half of loading
  -- a built-in (~100,000 instructions), and a select loads three.
  -- spec/plugins_builtin_spec.lua holds the built-ins to writing no globals.
  local builtin_env
  local function loaded(name, path, src, mode)
    if mode == "b" then builtin_env = builtin_env or sandbox.env(extra) end
    local plugin = load_plugin(kind, path, src, extra, budget, mode, name, mode == "b" and builtin_env or nil)
    local why = mode ~= "b" and plugins.misnamed(kind, plugin, name)
    if why then bad_file(path, why) end
    return plugin
  end

  local function add(name, path, origin, source, src, mode)
    local prev = byname[name]
    if prev then
      prev.shadows[#prev.shadows + 1] = origin
      if source == "built-in" then prev.overrides = "built-in" end
      return
    end
    local e = { name = name, origin = origin, source = source, shadows = {} }
    local function set(plugin)
      e.plugin, e.description = plugin, plugin.description:match("^[^\n]*")
      e.decl = e.decl or plugin
    end
    if mode == "b" and not src then
      e.decl = declared[kind] and declared[kind][name]
      setmetatable(e, { __index = function(_, k)
        if k ~= "plugin" and k ~= "description" and k ~= "decl" then return nil end
        setmetatable(e, nil)
        set(loaded(name, path, sys.embedded(path), mode))
        return e[k]
      end })
    else
      set(loaded(name, path, src, mode))
    end
    byname[name] = e
    list[#list + 1] = e
  end

  for _, d in ipairs(plugins.search_dirs(kind, opts)) do
    local files, err = lua_files(d.dir)
    if not files then
      if d.explicit then fail("%s %s: %s", d.source, d.dir, (err:gsub("^.-: ", ""))) end
    else
      for _, f in ipairs(files) do
        local path = d.dir .. "/" .. f
        if byname[basename(f)] then
          add(basename(f), path, path, d.source)
        else
          local src, rerr = sys.read_file(path)
          if not src then fail("%s", rerr) end
          add(basename(f), path, path, d.source, src)
        end
      end
    end
  end
  -- The built-ins compiled into the binary join the registry when a run
  -- first asks for them: get(NAME) adds that one, reading reg.list adds them
  -- all.  A select asks for its two or three policies by name, and making
  -- an entry for every built-in policy was ~60,000 instructions of it
  -- (bench/notes.md).  Either way an entry
  -- ends the same (a built-in adds to a shadowing file's entry only), and
  -- the list is sorted by name once it is whole.  The others (files of a
  -- source tree) are added at once, as they load at once.
  local pending = {}
  if opts.builtins ~= false then
    for _, b in ipairs(builtins(kind, opts)) do
      if b.mode == "b" and not b.src then pending[b.name] = b
      else add(b.name, b.path, b.origin, "built-in", b.src, b.mode) end
    end
  end
  local function join(name)
    local b = pending[name]
    pending[name] = nil
    add(b.name, b.path, b.origin, "built-in", b.src, b.mode)
  end
  local reg = {
    kind = kind,
    dirs = plugins.search_dirs(kind, opts),
    get = function(name)
      if name ~= nil and pending[name] then join(name) end
      return byname[name]
    end,
  }
  return setmetatable(reg, { __index = function(_, k)
    if k ~= "list" then return nil end
    local names = {}
    for name in pairs(pending) do names[#names + 1] = name end
    table.sort(names)
    for _, name in ipairs(names) do join(name) end
    table.sort(list, function(a, b) return a.name < b.name end)
    setmetatable(reg, nil)
    reg.list = list
    return list
  end })
end

-- Why a plugin is not the one its file NAME.lua must hold, or nil.
function plugins.misnamed(kind, plugin, name) return contract.misnamed(kind, plugin.name, name) end

function plugins.load_policies(opts) return load_all("policy", opts) end
function plugins.load_providers(opts) return load_all("provider", opts) end

-- A policy plugin from one file (for `fluence run` and tests), not registered.
function plugins.load_file(kind, path, opts)
  opts = opts or {}
  local src, err = sys.read_file(path)
  if not src then fail("%s", err) end
  local extra = kind == "provider" and { api = opts.api or {} } or nil
  return load_plugin(kind, path, src, extra, opts.budget or sandbox.DEFAULT_BUDGET)
end

return plugins
