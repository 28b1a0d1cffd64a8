-- Attribute files in the Go client's format (YAML or JSON) as backend
-- records, for the file provider (providers/file.lua) and any provider that
-- reads the format (api.catalog.decode):
--
--   catalog.decode(text, name) -> { record, ... }    raises "name:LINE:COL: message"
--     record = { name = "gpu-l4",
--                attrs = { ... },     -- attributes, strings over them, then the
--                                     -- top-level provider, region, device_arn,
--                                     -- graph, cost_per_task, cost_per_shot,
--                                     -- cost_per_minute, qubits over both
--                cost = { task =, shot =, minute = } | nil }
--                                     -- the top-level cost fields, when given
--   (a relative top-level graph is made relative to name's directory)
--   catalog.latest({ records, ... }) -> { record, ... }   one per name, the last given
--
-- Two readers give the same records.  fluence.attrfile (C) decodes the text
-- straight from libyaml's events and decides what it can: a well-formed
-- file without anchors, aliases or merge keys.  Anything else -- every
-- error among it -- is decoded here, by catalog.reference: fluence.yaml's
-- values and marks, each field checked, each problem located at its key.
-- spec/attrfile_spec.lua holds both to the same answers on a generated corpus.
local attrfile = require "fluence.attrfile"

local catalog = {}

local STRING_FIELDS = { "provider", "region", "device_arn", "graph" }
local NUMBER_FIELDS = { "cost_per_task", "cost_per_shot", "cost_per_minute", "qubits" }

-- The reference reader: the file as fluence.yaml decodes it, checked field
-- by field; errors at the offending key (or its mapping).
function catalog.reference(text, path)
  local yaml, sys = require "fluence.yaml", require "fluence.sys"
  local function fail(container, key, msg)
    local marks = yaml.marks(container)
    local m = marks and (key and marks.keys and marks.keys[key] or marks)
    if m then error(sys.locate(path, text, m.line, m.col, msg), 0) end
    error(path .. ": " .. msg, 0)
  end
  local doc, err = yaml.decode(text, path)   -- JSON is YAML too
  if doc == nil then error(err, 0) end
  if type(doc) ~= "table" then fail(nil, nil, "expected a mapping with a backends list") end
  local list = doc.backends
  if type(list) ~= "table" or #list == 0 then
    fail(doc, doc.backends ~= nil and "backends" or nil, "no backends defined")
  end
  local dir = path:match("^(.*)/[^/]*$") or "."
  local out = {}
  for i, b in ipairs(list) do
    local where = ("backends[%d]"):format(i - 1)
    if type(b) ~= "table" then fail(list, nil, where .. ": must be a mapping") end
    if type(b.name) ~= "string" or b.name == "" then
      fail(b, b.name ~= nil and "name" or nil, where .. ".name: required (a non-empty string)")
    end
    for _, f in ipairs(STRING_FIELDS) do
      if b[f] ~= nil and type(b[f]) ~= "string" then
        fail(b, f, ("%s.%s: must be a string"):format(where, f))
      end
    end
    for _, f in ipairs(NUMBER_FIELDS) do
      if b[f] ~= nil and (type(b[f]) ~= "number" or b[f] ~= b[f] or math.abs(b[f]) == math.huge) then
        fail(b, f, ("%s.%s: must be a finite number"):format(where, f))
      end
    end
    for _, sec in ipairs{ "attributes", "strings" } do
      local t = b[sec]
      if t ~= nil and (type(t) ~= "table" or (#t > 0)) then
        fail(b, sec, ("%s.%s: must be a mapping"):format(where, sec))
      end
      for k, v in pairs(t or {}) do
        local ok = sec == "attributes" and type(v) == "number" and v == v and math.abs(v) ~= math.huge
                   or sec == "strings" and type(v) == "string"
        if not ok then
          fail(t, k, ("%s.%s.%s: must be %s"):format(where, sec, k,
               sec == "attributes" and "a finite number" or "a string"))
        end
      end
    end
    -- the record: sections, then the top-level fields, when given
    local a = {}
    for k, v in pairs(b.attributes or {}) do a[k] = v end
    for k, v in pairs(b.strings or {}) do a[k] = v end
    for _, f in ipairs(STRING_FIELDS) do if b[f] ~= nil then a[f] = b[f] end end
    for _, f in ipairs(NUMBER_FIELDS) do if b[f] ~= nil then a[f] = b[f] end end
    -- graph: the backend's resource graph (JGF) for the fits policy, a path
    -- relative to the attribute file
    if b.graph and not b.graph:match("^/") then a.graph = dir .. "/" .. b.graph end
    local r = { name = b.name, attrs = a }
    if b.cost_per_task ~= nil or b.cost_per_shot ~= nil or b.cost_per_minute ~= nil then
      r.cost = { task = b.cost_per_task, shot = b.cost_per_shot, minute = b.cost_per_minute }
    end
    out[#out + 1] = r
  end
  return out
end

-- catalog.latest({ records, ... }) -> { record, ... }: one record per name,
-- the last one given, where the name first appeared (later files override
-- earlier ones; fluence.attrfile, in C)
catalog.latest = attrfile.latest

function catalog.decode(text, path)
  if type(text) ~= "string" then error("catalog.decode: text must be a string", 2) end
  path = tostring(path or "<attributes>")
  return attrfile.decode(text, path) or catalog.reference(text, path)
end

return catalog
