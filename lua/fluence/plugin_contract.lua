-- The plugin contract, declared once: the kinds of plugin, where each is
-- found, and every export a plugin file may define -- its type, whether it
-- is required, what it means.  Everything that knows the contract reads it
-- from here:
--
--   fluence.plugins    loading: the required exports, the name rule, the
--                      lists the host walks (read raw)
--   fluence check      every export's type, and a name that is probably a
--                      typo of one (a warning)
--   fluence new        the kinds, their directories and the name rule
--   tools/embed.lua    what a built-in provider declares (declared = true),
--                      recorded at build time so a run loads only what it needs
--   docs/plugins.md    its tables of exports (tools/gen-contract-doc.lua;
--                      spec/plugin_contract_spec.lua holds them equal)
--
-- Plain Lua, requiring nothing at load: tools/embed.lua runs it under the
-- bare interpreter at build time.
--
--   contract.kinds.policy | .provider  -> { dir, env, option, entry, exports = { export, ... } }
--   contract.export(kind, name) -> { name, type, required, declared, doc } | nil
--   contract.check_name(kind, name) -> nil | why name is no plugin name
--   contract.wrong(kind, export, value) -> nil | why value is not what export takes
--   contract.declared(kind, plugin) -> the declared exports, normalised
--   contract.TYPES[type] -> { test = f(v), wants = "how a message says it" }
local contract = {}

-- What each type of export accepts: test(v), and how a message says it.
-- "names": a list of strings (attribute names, or ATTR=VALUE for enriches);
-- "args": a policy's argument rule.
local TYPES = {
  string = { test = function(v) return type(v) == "string" end, wants = "a string" },
  ["function"] = { test = function(v) return type(v) == "function" end, wants = "a function" },
  boolean = { test = function(v) return type(v) == "boolean" end, wants = "true or false" },
  names = { wants = "a list of attribute names", test = function(v)
    if type(v) ~= "table" then return false end
    for i = 1, rawlen(v) do
      if type(rawget(v, i)) ~= "string" then return false end
    end
    return true
  end },
  args = { test = function(v) return v == false or v == "required" end, wants = 'false, "required" or absent' },
}

-- Exports, in the order a check reports them.  required: loading refuses
-- the plugin without it.  declared: known before the plugin loads (what a
-- run needs to choose its providers).
contract.TYPES = TYPES

contract.kinds = {
  policy = {
    dir = "policies", env = "FLUENCE_POLICY_PATH", option = "--policy-dir", entry = "compile",
    exports = {
      { name = "name", type = "string", required = true, doc = "the stage head in a policy text; equal to the file's name" },
      { name = "description", type = "string", required = true, doc = "one line for `fluence policies`" },
      { name = "compile", type = "function", required = true,
        doc = "`compile(stage, ctx)`: the stage closure, and optionally the attributes it reads" },
      { name = "suffix", type = "boolean", doc = "written `NAME-SUFFIX` (`min-cost`: suffix `cost`)" },
      { name = "tolerance", type = "boolean", doc = "accepts `NAME~0.05` and `NAME~5%`" },
      { name = "alternatives", type = "boolean", doc = "accepts `|` between keyed arguments (`NAME:a=1|b=2`)" },
      { name = "args", type = "args", doc = "`false`: takes no arguments; `\"required\"`: must have `NAME:...`; absent: may have them" },
    },
  },
  provider = {
    dir = "providers", env = "FLUENCE_PROVIDER_PATH", option = "--provider-dir", entry = "candidates",
    exports = {
      { name = "name", type = "string", required = true, doc = "equal to the file's name" },
      { name = "description", type = "string", required = true, doc = "one line for `fluence providers`" },
      { name = "candidates", type = "function", required = true, doc = "`candidates(ctx)`: backends, and optionally notes" },
      { name = "family", type = "string", declared = true, doc = "the `select-backend` annotation value that selects it" },
      { name = "live", type = "boolean", declared = true,
        doc = "with `provides`: runs only when the policy reads one of those attributes" },
      { name = "provides", type = "names", declared = true, doc = "the attributes a live provider gives" },
      { name = "enriches", type = "names", declared = true,
        doc = "a live provider runs only when some backend has one of these attributes (`ATTR`, or `ATTR=VALUE`)" },
    },
  },
}

-- The export of kind named name, or nil.
function contract.export(kind, name)
  for _, e in ipairs(contract.kinds[kind].exports) do
    if e.name == name then return e end
  end
end

contract.NAME = "^[%a_][%w_.%-]*$"
contract.NAME_RULE = "letters, digits, _ . -; not starting with a digit"

-- Go's %q (fluence.sys.quote): whatever a plugin wrote stays on one line.
local function quote(s) return require("fluence.sys").quote(s) end

function contract.check_name(kind, name)
  if type(name) ~= "string" or name == "" or not name:match(contract.NAME) then
    return ("bad %s name %s (%s)"):format(kind, quote(tostring(name)), contract.NAME_RULE)
  end
end

-- Why a plugin named name is not the one its file FILE.lua must hold, or nil.
function contract.misnamed(kind, name, file)
  if name ~= file then
    return ("%s plugin is named %s but its file is %s.lua (they must match)"):format(kind, quote(tostring(name)), file)
  end
end

-- A value as a message shows what it got: a string quoted, else its type.
local function got(v)
  if type(v) == "string" then return quote(v) end
  return type(v)
end

-- "KIND plugin export NAME must be ..., got ...", or nil when v is right.
function contract.wrong(kind, export, v)
  local e = contract.export(kind, export)
  if v == nil and not e.required then return nil end
  local t = TYPES[e.type]
  if t.test(v) then return nil end
  return ("%s plugin export %s must be %s, got %s"):format(kind, quote(export), t.wants, got(v))
end

-- The first way plugin (its exports, read raw) breaks kind's contract: a
-- required export missing or of the wrong type, then a bad name; nil when
-- none.  fluence.plugins asks it of a plugin from a file as it loads,
-- tools/embed.lua of each built-in when the binary is built.
function contract.problem(kind, plugin)
  for _, e in ipairs(contract.kinds[kind].exports) do
    if e.required then
      local why = contract.wrong(kind, e.name, rawget(plugin, e.name))
      if why then return why end
    end
  end
  return contract.check_name(kind, rawget(plugin, "name"))
end

-- The declared exports of a plugin as the host reads them: raw, lists as
-- plain lists of strings, booleans as booleans, a string only as one.
function contract.declared(kind, plugin)
  local out = {}
  for _, e in ipairs(contract.kinds[kind].exports) do
    local v = rawget(plugin, e.name)
    if e.declared and v ~= nil then
      if e.type == "names" then
        if type(v) == "table" then
          local list = {}
          for i = 1, rawlen(v) do list[i] = tostring(rawget(v, i)) end
          out[e.name] = list
        end
      elseif e.type == "boolean" then
        out[e.name] = v and true or false
      elseif type(v) == e.type then
        out[e.name] = v
      end
    end
  end
  return out
end

return contract
