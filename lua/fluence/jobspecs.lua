-- The jobspecs Fluence builds for one pod group, and the resource graph it
-- builds from the fluence-resources ConfigMap (contract.md, "How the
-- scheduler matches").
--
--   local jobspecs = require "fluence.jobspecs"
--   local set = jobspecs.for_request{ pods = 4,
--       pod = { cpu = 2, memory = 4294967296, gpu = 1, virtual = { qpu = 1 } },
--       require = { backend = "ionq" } }
--   set.compute        -- jobspec text (YAML): slot[pods]{core, memory, gpu}
--   set.devices        -- { { type = "qpu", count = 1, text = "..." }, ... }
--   jobspecs.for_backend(request, "ionq")  -- { {what = "compute", text =}, {what = "qpu", ...} }
--                                          -- (fits, through ctx.jobspecs)
--
--   jobspecs.resources_tree(resources_yaml)  -- tree for match.graph_from_tree
local M = {}

local PREFIX = "fluxion.flux-framework.org/"
local MB = 1024 * 1024

local function q(s)
  return '"' .. tostring(s):gsub('[%c"\\]', function(c)
    if c == '"' then return '\\"' elseif c == "\\" then return "\\\\" end
    return ("\\u%04x"):format(c:byte())
  end) .. '"'
end

-- A count for a jobspec: n rounded up, at most 2^32-1 (a Fluxion jobspec's
-- counts are 32-bit; a larger one is refused as malformed).  A request past
-- that (8Ei of memory, 1e400 cores: quantities the API server takes) asks
-- for the most a jobspec can, and cannot fit.  (Past 2^63 this was 0: a pod
-- asking for exabytes fitted anywhere.)
local MAX_COUNT = 4294967295
local function whole(n, what)
  if n == nil then return 0 end
  if type(n) ~= "number" or n < 0 or n ~= n then
    error(("%s must be a non-negative number, got %s"):format(what, tostring(n)), 0)
  end
  if n >= MAX_COUNT then return MAX_COUNT end
  return math.tointeger(math.ceil(n))
end

local function sorted_keys(t)
  local ks = {}
  for k in pairs(t or {}) do ks[#ks + 1] = k end
  table.sort(ks, function(a, b) return tostring(a) < tostring(b) end)
  return ks
end

local function render(resources, properties)
  local out = { "version: 9999", "resources:" }
  local function res(r, indent)
    local pad = (" "):rep(indent)
    out[#out + 1] = pad .. "- type: " .. r.type
    out[#out + 1] = pad .. "  count: " .. r.count
    if r.label then out[#out + 1] = pad .. "  label: " .. r.label end
    if r.with and #r.with > 0 then
      out[#out + 1] = pad .. "  with:"
      for _, c in ipairs(r.with) do res(c, indent + 4) end
    end
  end
  for _, r in ipairs(resources) do res(r, 2) end
  out[#out + 1] = "attributes:"
  out[#out + 1] = "  system:"
  out[#out + 1] = "    constraints:"
  local props = {}
  for i, p in ipairs(properties) do props[i] = q(p) end
  out[#out + 1] = "      properties: [" .. table.concat(props, ", ") .. "]"
  out[#out + 1] = "tasks:"
  out[#out + 1] = '  - command: ["fluence"]'
  out[#out + 1] = "    slot: default"
  out[#out + 1] = "    count:"
  out[#out + 1] = "      per_slot: 1"
  return table.concat(out, "\n") .. "\n"
end

-- What the compute jobspec asks, in its counts: pods (at least 1), and per
-- pod core (at least 1), memory (MB, rounded up: 0 when none) and gpu.
-- (fits says why a group does not fit in these numbers.)
function M.needs(request)
  local pod = request.pod or {}
  local pods = whole(request.pods or 1, "pods")
  local cpu = whole(pod.cpu, "pod.cpu")
  local mem = whole(pod.memory, "pod.memory")
  return { pods = math.max(pods, 1), core = math.max(cpu, 1), gpu = whole(pod.gpu, "pod.gpu"),
           memory = mem > 0 and whole(pod.memory / MB, "pod.memory") or 0 }
end

-- The compute jobspec: one slot per pod, each with the first pod's cores
-- (at least 1), memory in MB (rounded up) and GPUs; only non-virtual nodes.
function M.compute(request)
  local n = M.needs(request)
  local with = { { type = "core", count = n.core } }
  if n.memory > 0 then with[#with + 1] = { type = "memory", count = n.memory } end
  if n.gpu > 0 then with[#with + 1] = { type = "gpu", count = n.gpu } end
  return render({ { type = "slot", count = n.pods, label = "default", with = with } }, { "virtual=false" })
end

-- One device jobspec per virtual type: a slot of `count` node-typed
-- vertices of that class, with the require-<attr> pins as properties.
function M.device(vtype, count, require)
  local props = { "virtual=true", "class=" .. vtype }
  for _, k in ipairs(sorted_keys(require)) do
    props[#props + 1] = PREFIX .. k .. "=" .. tostring(require[k])
  end
  return render({ { type = "slot", count = 1, label = "default",
                    with = { { type = "node", count = count } } } }, props)
end

function M.for_request(request)
  local set = { compute = M.compute(request), devices = {} }
  local virtual = (request.pod or {}).virtual or {}
  for _, t in ipairs(sorted_keys(virtual)) do
    local n = whole(virtual[t], "pod.virtual." .. tostring(t))
    if n > 0 then
      set.devices[#set.devices + 1] = { type = t, count = n, text = M.device(t, n, request.require) }
    end
  end
  return set
end

-- What the group of request asks of one backend, as `fits` matches it
-- (policies reach this as ctx.jobspecs, never a copy): the compute jobspec,
-- then one device jobspec per virtual type pinned to the backend and to the
-- request's require-<attr> pins.  { {what = "compute" | TYPE, text =}, ... }
function M.for_backend(request, backend)
  local pins = {}
  for k, v in pairs(request.require or {}) do pins[k] = v end
  pins.backend = backend
  local set = M.for_request{ pods = request.pods, pod = request.pod, require = pins }
  local list = { { what = "compute", text = set.compute } }
  for _, d in ipairs(set.devices) do list[#list + 1] = { what = d.type, text = d.text } end
  return list
end

-- ---------------------------------------------------------------- graphs

local function attr_set(spec, registry, where)
  local a = spec.attributes
  if a == nil then return {} end
  if type(a) == "string" then
    local set = registry[a]
    if type(set) ~= "table" then error(("%s: unknown attribute set %q"):format(where, a), 0) end
    return set
  end
  if type(a) ~= "table" then error(where .. ": attributes must be a name or a mapping", 0) end
  return a
end

local function types_below(spec, acc)
  acc[#acc + 1] = spec.type
  for _, c in ipairs(spec.with or {}) do types_below(c, acc) end
  return acc
end

local function scalar(v)
  if type(v) == "number" then
    local i = math.tointeger(v)
    return i and tostring(i) or tostring(v)
  end
  if type(v) == "boolean" then return v and "true" or "false" end
  return tostring(v)
end

-- The most vertices the trees of a resources.yaml may expand to.  Counts
-- multiply down a tree (8 racks of 64 nodes of 34 qubits is 17,928
-- vertices), so a ConfigMap of a few bytes could otherwise ask for billions
-- of tables.  Building one vertex costs ~3 us and ~400 bytes here (a
-- million: 3 s, 380 MiB), so the bound keeps a hostile ConfigMap under a
-- second and 100 MiB; the trees describe backends (devices, their qubits),
-- a real one is a few hundred vertices.
M.MAX_VERTICES = 250000

-- The vertices spec (at where) expands to, counts multiplied down its tree;
-- raise(spec, message) at the deepest level whose copies pass `room`.
local function expanded(spec, where, room, raise)
  if type(spec) ~= "table" then return 0 end
  local count = spec.count == nil and 1 or math.tointeger(spec.count)
  if not count or count < 0 then raise(spec, where .. ".count: must be a non-negative integer") end
  local one = 1
  for j, c in ipairs(type(spec.with) == "table" and spec.with or {}) do
    one = one + expanded(c, ("%s.with[%d]"):format(where, j - 1), room, raise)
  end
  -- as floats: the product of a few counts passes 2^63 long before memory runs out
  local total = count * (one + 0.0)
  if total > room then
    local of = one == 1 and "" or (" of a %d-vertex tree"):format(one)
    raise(spec, ("%s.count: %d copies%s take the graph past %d vertices, the most fluence builds"):format(
      where, count, of, M.MAX_VERTICES))
  end
  return math.tointeger(total) or total
end

-- Checks, before any vertex is made, that the trees of resources.yaml doc
-- (decoded) expand to at most M.MAX_VERTICES; else raise(spec, message)
-- (default: error(message)) for the resource whose count passes it.
-- fluence.offerings raises located in the ConfigMap; resources_tree checks
-- whatever it is given.
function M.check_size(doc, raise)
  raise = raise or function(_, msg) error(msg, 0) end
  local room = M.MAX_VERTICES
  for i, spec in ipairs(type(doc) == "table" and (doc.resources or doc) or {}) do
    room = room - expanded(spec, ("resources[%d]"):format(i - 1), room, raise)
  end
end

-- resources.yaml (decoded) -> { type = "cluster", name = "cluster", with = {...} }
-- where every configured level becomes count node-typed vertices carrying
-- virtual=true, class=<t> for its type and every type below, the inherited
-- attributes as fluxion.flux-framework.org/<k>=<v> and the top device's
-- fluxion.flux-framework.org/backend=<name>.  Top-level trees also carry
-- parent = <name> (default "cluster") for grafting onto a cluster graph.
function M.resources_tree(doc)
  if type(doc) ~= "table" then error("resources.yaml: expected a mapping", 0) end
  local registry = doc.attributes or {}
  local list = doc.resources or doc
  if type(list) ~= "table" then error("resources.yaml: resources must be a list", 0) end
  M.check_size(doc)
  local root = { type = "cluster", name = "cluster", with = {} }
  local function build(spec, inherited, backend, where, top)
    if type(spec) ~= "table" then error(where .. ": must be a mapping", 0) end
    if top and spec.type == nil and spec.name then spec = { type = "device", name = spec.name } end
    if type(spec.type) ~= "string" or spec.type == "" then error(where .. ".type: required", 0) end
    local attrs = {}
    for k, v in pairs(inherited) do attrs[k] = v end
    for k, v in pairs(attr_set(spec, registry, where)) do
      if v == "" then attrs[k] = nil else attrs[k] = scalar(v) end
    end
    local count = spec.count == nil and 1 or math.tointeger(spec.count)   -- checked by expanded()
    backend = backend or spec.name
    local props = { ["virtual=true"] = "" }
    for _, t in ipairs(types_below(spec, {})) do props["class=" .. t] = "" end
    for k, v in pairs(attrs) do props[PREFIX .. k .. "=" .. v] = "" end
    if backend then props[PREFIX .. "backend=" .. backend] = "" end
    local out = {}
    for i = 0, count - 1 do
      local name
      if spec.name and count == 1 then name = spec.name
      else name = (spec.name or spec.type) .. i end
      local kids = {}
      for j, c in ipairs(spec.with or {}) do
        for _, v in ipairs(build(c, attrs, backend, ("%s.with[%d]"):format(where, j - 1), false)) do
          kids[#kids + 1] = v
        end
      end
      out[#out + 1] = { type = "node", basename = spec.type, name = name, id = i, size = 1,
                        properties = props, with = kids, parent = top and (spec.parent or "cluster") or nil }
    end
    return out
  end
  for i, spec in ipairs(list) do
    for _, v in ipairs(build(spec, {}, nil, ("resources[%d]"):format(i - 1), true)) do
      root.with[#root.with + 1] = v
    end
  end
  return root
end

-- The backend names a resources.yaml offers (its named top-level resources).
function M.backends(doc)
  local names = {}
  for _, spec in ipairs((type(doc) == "table" and (doc.resources or doc)) or {}) do
    if type(spec) == "table" and spec.name then names[#names + 1] = spec.name end
  end
  return names
end

return M
