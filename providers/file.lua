-- The "file" provider: backends from --attributes files, in the earlier Go
-- client's format (YAML or JSON), with its cost rule:
--
--   cost_usd = cost_per_task + shots * cost_per_shot   (either given: always,
--                                                       over attributes.cost_usd)
--   cost_usd = 0.05 * cost_per_minute                  (only when cost_usd is
--                                                       still unknown)
--
-- and a top-level `qubits` overrides attributes.qubits.  A `graph:` entry
-- (a JGF file, relative to the attribute file) is the backend's resource
-- graph for the fits policy.  The recorded Go
-- selections (shared/conformance/go-client) agree with this in all 60 cases.
-- Later files override earlier ones for the same backend name.
local M = {
  name = "file",
  description = "backends and attributes from --attributes files (the Go client's format)",
}

local STRING_FIELDS = { "provider", "region", "device_arn", "graph" }
local NUMBER_FIELDS = { "cost_per_task", "cost_per_shot", "cost_per_minute", "qubits" }

local parsed = {}        -- path -> list of raw backends, parsed once per run

local function fail(api, path, text, container, key, msg)
  local marks = api.yaml.marks and api.yaml.marks(container)
  local m = marks and (key and marks.keys and marks.keys[key] or marks)
  if m then error(api.locate(path, text, m.line, m.col, msg), 0) end
  error(path .. ": " .. msg, 0)
end

local function parse(api, path)
  if parsed[path] then return parsed[path] end
  local text, err = api.read_file(path)
  if not text then error(err, 0) end
  local doc
  doc, err = api.yaml.decode(text, path)   -- JSON is YAML too
  if doc == nil then error(err, 0) end
  if type(doc) ~= "table" then fail(api, path, text, nil, nil, "expected a mapping with a backends list") end
  local list = doc.backends
  if type(list) ~= "table" or #list == 0 then
    fail(api, path, text, doc, doc.backends ~= nil and "backends" or nil, "no backends defined")
  end
  local out = {}
  for i, b in ipairs(list) do
    local where = ("backends[%d]"):format(i - 1)
    if type(b) ~= "table" then fail(api, path, text, list, nil, where .. ": must be a mapping") end
    if type(b.name) ~= "string" or b.name == "" then
      fail(api, path, text, b, b.name ~= nil and "name" or nil, where .. ".name: required (a non-empty string)")
    end
    for _, f in ipairs(STRING_FIELDS) do
      if b[f] ~= nil and type(b[f]) ~= "string" then
        fail(api, path, text, b, f, ("%s.%s: must be a string"):format(where, f))
      end
    end
    for _, f in ipairs(NUMBER_FIELDS) do
      if b[f] ~= nil and (type(b[f]) ~= "number" or b[f] ~= b[f] or math.abs(b[f]) == math.huge) then
        fail(api, path, text, b, f, ("%s.%s: must be a finite number"):format(where, f))
      end
    end
    for _, sec in ipairs{ "attributes", "strings" } do
      local t = b[sec]
      if t ~= nil and (type(t) ~= "table" or (#t > 0)) then
        fail(api, path, text, b, sec, ("%s.%s: must be a mapping"):format(where, sec))
      end
      for k, v in pairs(t or {}) do
        local ok = sec == "attributes" and type(v) == "number" and v == v and math.abs(v) ~= math.huge
                   or sec == "strings" and type(v) == "string"
        if not ok then
          fail(api, path, text, t, k, ("%s.%s.%s: must be %s"):format(where, sec, k,
               sec == "attributes" and "a finite number" or "a string"))
        end
      end
    end
    -- graph: the backend's resource graph (JGF) for the fits policy, a path
    -- relative to the attribute file
    if b.graph and not b.graph:match("^/") then
      b.graph = (path:match("^(.*)/[^/]*$") or ".") .. "/" .. b.graph
    end
    out[#out + 1] = b
  end
  parsed[path] = out
  return out
end

local function attributes(b, shots)
  local a = {}
  for k, v in pairs(b.attributes or {}) do a[k] = v end
  for k, v in pairs(b.strings or {}) do a[k] = v end
  -- top-level fields override the sections, but only when given
  for _, f in ipairs(STRING_FIELDS) do if b[f] ~= nil then a[f] = b[f] end end
  for _, f in ipairs(NUMBER_FIELDS) do if b[f] ~= nil then a[f] = b[f] end end
  local task, shot, minute = b.cost_per_task, b.cost_per_shot, b.cost_per_minute
  if task or shot then
    a.cost_per_task, a.cost_per_shot = task or 0, shot or 0
    a.cost_usd = (task or 0) + shots * (shot or 0)
  end
  if minute and a.cost_usd == nil then a.cost_usd = 0.05 * minute end
  return a
end

function M.candidates(ctx)
  local files = ctx.options.attributes or {}
  local byname, order = {}, {}
  for _, path in ipairs(files) do
    for _, b in ipairs(parse(ctx.api, path)) do
      if not byname[b.name] then order[#order + 1] = b.name end
      byname[b.name] = b
    end
  end
  local out = {}
  for _, name in ipairs(order) do
    out[#out + 1] = { name = name, attrs = attributes(byname[name], ctx.request.shots or 1000) }
  end
  return out
end

return M
