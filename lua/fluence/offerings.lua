-- The cluster's offerings: the `fluence-resources` ConfigMap Fluence reads,
-- parsed into the backends it offers and their (inherited) attributes.
--
--   offerings.parse(text, name) -> {backends = {{name =, type =, attrs = {...}}, ...},
--                                   resources = <normalised forest>,
--                                   doc = <the decoded resources.yaml> (fluence format),
--                                   format = "fluence" | "list"} | nil, located error
--   offerings.fetch(client, ns) -> parsed        (raises a structured error:
--                                   CLUSTER when it cannot be read, INPUT when malformed)
--   offerings.from_configmap(cm, ns) -> parsed  (the same, from a ConfigMap already read)
--   offerings.intersect(backends, offered) -> kept, dropped {name = reason}, notes
--   offerings.numeric(value) -> number | value   (numeric strings become numbers)
--
-- Two formats: Fluence's `resources.yaml` (a forest of resource trees plus a
-- registry of named attribute sets; children inherit attributes, may
-- override a key, or clear it with ""), and the earlier Go client's flat
-- list `- name: a`.  Offered backends are the named resources, in document
-- order (depth first); a name offered twice keeps its first definition.
local yaml = require "fluence.yaml"
local sys = require "fluence.sys"
local errors = require "fluence.errors"

local M = {}

M.NAME = "fluence-resources"
M.DEFAULT_NS = "kube-system"
M.KEY = "resources.yaml"

-- The Go client's reasons, word for word.
M.NOT_OFFERED = "not offered by the cluster scheduler"
M.NO_ATTRIBUTES = "offered by scheduler but no attributes available"

local NUMBER = "^%s*[-+]?%d+%.?%d*[eE][-+]?%d+%s*$"
local function numeric(v)
  if type(v) ~= "string" then return v end
  if v:match("^%s*[-+]?%d+%.?%d*%s*$") or v:match("^%s*[-+]?%.%d+%s*$") or v:match(NUMBER) then
    local n = tonumber(v)
    if n and n == n and math.abs(n) ~= math.huge then return n end
  end
  return v
end
M.numeric = numeric

-- A located message at a decoded container (and one of its keys).
local function locate(name, text, container, key, msg)
  local marks = type(container) == "table" and yaml.marks(container)
  local m = marks and (key ~= nil and marks.keys and marks.keys[key] or marks)
  if m then return sys.locate(name, text, m.line, m.col, msg) end
  return name .. ": " .. msg
end

local function is_map(t)
  if type(t) ~= "table" then return false end
  local json = require "fluence.json"
  return not json.is_array(t) and (next(t) == nil or #t == 0)
end

local function is_list(t)
  if type(t) ~= "table" then return false end
  local json = require "fluence.json"
  return json.is_array(t) or (#t > 0)
end

local function scalar_text(v)
  if type(v) == "boolean" then return v and "true" or "false" end
  if type(v) == "number" or type(v) == "string" then return v end
  return nil
end

-- Parses resources.yaml text.
function M.parse(text, name)
  name = name or M.KEY
  local doc, err = yaml.decode(text, name)
  if doc == nil and err then return nil, err end
  local function fail(container, key, msg) error({ located = locate(name, text, container, key, msg) }, 0) end

  local function run()
    if type(doc) ~= "table" then
      if doc == yaml.null or doc == nil then return { backends = {}, resources = {}, format = "fluence" } end
      fail(nil, nil, "expected a mapping with a resources list, or a list of - name: entries")
    end

    if is_list(doc) then                     -- the flat list of the Go client
      local backends, seen = {}, {}
      for i, item in ipairs(doc) do
        if type(item) ~= "table" or not is_map(item) then
          fail(doc, nil, ("[%d]: must be a mapping with a name"):format(i - 1))
        end
        if type(item.name) ~= "string" or item.name == "" then
          fail(item, item.name ~= nil and "name" or nil, ("[%d].name: required (a non-empty string)"):format(i - 1))
        end
        local attrs = {}
        for k, v in pairs(item) do
          if k ~= "name" then
            local s = scalar_text(v)
            if s ~= nil and s ~= "" then attrs[k] = numeric(s) end
          end
        end
        if not seen[item.name] then
          seen[item.name] = true
          backends[#backends + 1] = { name = item.name, attrs = attrs }
        end
      end
      return { backends = backends, resources = {}, format = "list" }
    end

    local registry = doc.attributes
    if registry ~= nil and not is_map(registry) then
      fail(doc, "attributes", "attributes: must be a mapping of named attribute sets")
    end
    registry = registry or {}
    local function attr_map(t, where)
      local out = {}
      for k, v in pairs(t) do
        if type(k) ~= "string" then fail(t, nil, where .. ": attribute names must be strings") end
        local s = scalar_text(v)
        if s == nil and v ~= yaml.null then
          fail(t, k, ("%s.%s: must be a string or number"):format(where, k))
        end
        out[k] = s == nil and "" or s
      end
      return out
    end
    local resources = doc.resources
    if resources == nil or resources == yaml.null then resources = {} end
    if not is_list(resources) and not (type(resources) == "table" and next(resources) == nil) then
      fail(doc, "resources", "resources: must be a list of resource trees")
    end
    local backends, seen = {}, {}
    local function walk(node, where, inherited, top)
      if not is_map(node) or next(node) == nil then fail(node, nil, where .. ": must be a mapping with a type") end
      if type(node.type) ~= "string" or node.type == "" then
        fail(node, node.type ~= nil and "type" or nil, where .. ".type: required (a non-empty string)")
      end
      if node.name ~= nil and (type(node.name) ~= "string" or node.name == "") then
        fail(node, "name", where .. ".name: must be a non-empty string")
      end
      if node.parent ~= nil and (not top or type(node.parent) ~= "string") then
        fail(node, "parent", where .. ".parent: " .. (top and "must be a string" or "only allowed at the top level"))
      end
      local count = node.count == nil and 1 or node.count
      if math.type(count) ~= "integer" or count < 1 then
        fail(node, "count", where .. ".count: must be a positive integer")
      end
      local own = {}
      local a = node.attributes
      if type(a) == "string" then
        local set = registry[a]
        if set == nil then fail(node, "attributes", ("%s.attributes: no attribute set named %q in attributes"):format(where, a)) end
        if not is_map(set) then fail(registry, a, ("attributes.%s: must be a mapping"):format(a)) end
        own = attr_map(set, "attributes." .. a)
      elseif a ~= nil and a ~= yaml.null then
        if not is_map(a) then fail(node, "attributes", where .. ".attributes: must be a set name or a mapping") end
        own = attr_map(a, where .. ".attributes")
      end
      local resolved = {}
      for k, v in pairs(inherited) do resolved[k] = v end
      for k, v in pairs(own) do
        if v == "" then resolved[k] = nil else resolved[k] = v end
      end
      local out = { type = node.type, name = node.name, count = count,
                    parent = top and (node.parent or "cluster") or nil, attributes = resolved, with = {} }
      if node.name and not seen[node.name] then
        seen[node.name] = true
        local attrs = {}
        for k, v in pairs(resolved) do attrs[k] = numeric(v) end
        backends[#backends + 1] = { name = node.name, type = node.type, attrs = attrs }
      end
      local with = node.with
      if with ~= nil and with ~= yaml.null then
        if not is_list(with) then fail(node, "with", where .. ".with: must be a list") end
        for i, child in ipairs(with) do
          out.with[i] = walk(child, ("%s.with[%d]"):format(where, i - 1), resolved, false)
        end
      end
      return out
    end
    local forest = {}
    for i, node in ipairs(resources) do
      forest[i] = walk(node, ("resources[%d]"):format(i - 1), {}, true)
    end
    -- doc: the decoded resources.yaml, for match.graph_from_resources (fits)
    return { backends = backends, resources = forest, format = "fluence", doc = doc }
  end

  local ok, res = pcall(run)
  if ok then
    -- what is checked later (M.graph) is located as parse's errors are
    res.locate = function(container, key, msg) return locate(name, text, container, key, msg) end
    return res
  end
  if type(res) == "table" and res.located then return nil, res.located end
  error(res, 0)
end

-- Reads and parses the ConfigMap; raises structured errors.
function M.fetch(client, ns)
  ns = ns or M.DEFAULT_NS
  local _, cm = client:request("GET", ("/api/v1/namespaces/%s/configmaps/%s"):format(ns, M.NAME))
  return M.from_configmap(cm, ns)
end

-- The parsed offerings of the ConfigMap object cm (decoded JSON) read from
-- namespace ns; raises like fetch.
function M.from_configmap(cm, ns)
  local data = type(cm) == "table" and cm.data
  local key
  if type(data) == "table" then
    if type(data[M.KEY]) == "string" then key = M.KEY
    else
      local keys = {}
      for k, v in pairs(data) do if type(v) == "string" then keys[#keys + 1] = k end end
      table.sort(keys)
      key = keys[1]
    end
  end
  if not key then
    errors.raise("CLUSTER", "cluster: ConfigMap %s/%s has no data (expected key %s)", ns, M.NAME, M.KEY)
  end
  -- located in the cluster's object, "NS/NAME KEY:LINE:COL": the cluster
  -- holds what is wrong, so it is a CLUSTER error (exit 4), as an answer
  -- that does not parse is
  local parsed, err = M.parse(data[key], ("%s/%s %s"):format(ns, M.NAME, key))
  if not parsed then errors.raise("CLUSTER", "%s", err) end
  parsed.namespace, parsed.key = ns, key
  return parsed
end

-- The graph `fits` matches the offered backends on: parsed offerings o's
-- trees (match.graph_from_resources), grafted onto base (a cluster graph)
-- when given.  What cannot be built is in the cluster's ConfigMap, so it is
-- a CLUSTER error (exit 4) naming it and its key (and, for a tree too big
-- to build, the line and column of the count), after prefix (the context).
function M.graph(o, base, prefix)
  if o.locate then
    require("fluence.jobspecs").check_size(o.doc, function(spec, msg)
      errors.raise("CLUSTER", "%s%s", prefix or "", o.locate(spec, "count", msg))
    end)
  end
  local g, err = require("fluence.match").graph_from_resources(o.doc, base)
  if not g then
    local where = o.namespace and ("%s/%s %s"):format(o.namespace, M.NAME, o.key) or M.NAME
    errors.raise("CLUSTER", "%s%s: %s", prefix or "", where, tostring(err))
  end
  return g
end

-- Intersects provided backends with the offered ones (parsed offerings, or
-- a list of names).  offered == nil: everything is kept, with a note.
function M.intersect(backends, offered)
  local kept, dropped, notes = {}, {}, {}
  if offered == nil then
    notes[1] = "could not read the cluster's offerings; proceeding over all provided backends"
    for i, b in ipairs(backends) do kept[i] = b end
    return kept, dropped, notes
  end
  local names, order = {}, {}
  for _, o in ipairs(offered.backends or offered) do
    local n = type(o) == "table" and o.name or o
    if not names[n] then names[n] = true; order[#order + 1] = n end
  end
  local provided = {}
  for _, b in ipairs(backends) do
    provided[b.name] = true
    if not names[b.name] then
      dropped[b.name] = M.NOT_OFFERED
    elseif b.attrs == nil or next(b.attrs) == nil then
      dropped[b.name] = M.NO_ATTRIBUTES
    else
      kept[#kept + 1] = b
    end
  end
  for _, n in ipairs(order) do
    if not provided[n] then dropped[n] = M.NO_ATTRIBUTES end
  end
  return kept, dropped, notes
end

return M
