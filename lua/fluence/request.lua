-- Builds the Request (docs/architecture.md) for one Fluence object from what
-- fluence.manifest exposes: the policy text, shots, candidates, the group and
-- its size, and what each pod asks for.
local quantity = require "fluence.quantity"
local errors = require "fluence.errors"

local request = {}

local P = "fluence.flux-framework.org/"
request.PREFIX = P

local GROUP_LABELS = { P .. "group", P .. "pod-group", "scheduling.x-k8s.io/pod-group", "fluxnetes.group-name" }
local SIZE_KEYS = { P .. "group-size", "fluxnetes.group-size" }
-- the annotation names, made once (build runs for every Fluence object)
local POLICY, BACKEND, SHOTS = P .. "select-policy", P .. "select-backend", P .. "select-shots"
local CANDIDATES, CONSTRAINTS, PIN = P .. "select-candidates", P .. "select-constraints", P .. "require-backend"
local DURATION = P .. "duration"

local MAX_COUNT = 4294967295   -- a Fluxion jobspec's counts are 32-bit
local COUNTED = { "cpu", "memory", "gpu" }
local LIMIT = { cpu = MAX_COUNT, memory = MAX_COUNT * 1048576, gpu = MAX_COUNT }

local function sorted(t)
  local ks = {}
  for k in pairs(t) do ks[#ks + 1] = k end
  table.sort(ks)
  return ks
end

-- The first of keys set in t, and which.
local function first_in(keys, t)
  for j = 1, #keys do
    local k = keys[j]
    local v = t[k]
    if v ~= nil then return v, k end
  end
end

-- The first of keys set in the first of t1..t4 that has one (up to the
-- first nil table).  No table of tables: build runs for every Fluence
-- object, and a 10,000-Job stream made 20,000 of them.
local function first(keys, t1, t2, t3, t4)
  if t1 == nil then return nil end
  local v, k = first_in(keys, t1)
  if v ~= nil or t2 == nil then return v, k end
  v, k = first_in(keys, t2)
  if v ~= nil or t3 == nil then return v, k end
  v, k = first_in(keys, t3)
  if v ~= nil or t4 == nil then return v, k end
  return first_in(keys, t4)
end

-- "a, b,,c" -> {"a","b","c"}
function request.split_list(s)
  local out = {}
  for item in (s or ""):gmatch("[^,]+") do
    item = item:match("^%s*(.-)%s*$")
    if item ~= "" then out[#out + 1] = item end
  end
  return out
end

-- A bad-input error: at byte (1-based, of the input) with the source line
-- and a caret when the caller has the input and knows the byte, else at where
-- (the object's position).
local function bad_input(locate, byte, where, msg)
  errors.raise("INPUT", "%s", locate and byte and locate(byte, msg) or (where .. ": " .. msg))
end

-- s as a positive whole number; byte_of() finds where s is written, only
-- when it is not one (finding it costs a search).
local function positive_int(s, what, where, locate, byte_of)
  local n = tonumber(s)
  if not n or n ~= math.floor(n) or n < 1 or n > 2^53 then
    bad_input(locate, locate and byte_of(), where, ("%s must be a positive whole number, not %q"):format(what, tostring(s)))
  end
  return math.tointeger(n)
end

-- The pod spec fluence sizes the request from: the first Fluence-targeting
-- template (or the first template at all).
local function main_template(obj)
  for _, t in ipairs(obj.templates or {}) do
    if t.targets_fluence then return t end
  end
  return (obj.templates or {})[1]
end

-- Sum of the containers' requests of one pod (cpu whole cores rounded up,
-- at least 1; memory bytes; GPUs; virtual fluxion resources by type).
-- locate(byte, message) -> the message located at that byte of the input,
-- with its line and a caret (stream:locate), when the caller has the input.
local function pod_resources(t, where, locate)
  local pod = { cpu = 0, memory = 0, gpu = 0, virtual = {} }
  for _, c in ipairs(t and t.containers or {}) do
    for name, q in pairs(c.requests or {}) do
      local v, err = quantity.parse(q)
      if not v then
        bad_input(locate, c.requests_at and c.requests_at[name], where,
                  ("container %q: resources.requests[%q]: %s"):format(c.name or "?", name, err))
      end
      if name == "cpu" then pod.cpu = pod.cpu + v
      elseif name == "memory" then pod.memory = pod.memory + v
      elseif name == "nvidia.com/gpu" then pod.gpu = pod.gpu + v
      else
        local vt = name:match("^fluxion%.flux%-framework%.org/(.+)$")
        if vt then pod.virtual[vt] = (pod.virtual[vt] or 0) + v end
      end
    end
  end
  pod.cpu = math.max(1, math.ceil(pod.cpu - 1e-9))
  pod.memory = math.ceil(pod.memory)
  pod.gpu = math.ceil(pod.gpu)
  -- past what a jobspec counts (2^32-1 cores, GPUs or MiB; 8Ei, 1e400: the
  -- API server takes them) the jobspecs ask for their most (jobspecs.lua,
  -- fits.lua): remember which, to say so
  local over
  for _, k in ipairs(COUNTED) do
    if pod[k] > LIMIT[k] then over = over or {}; over[#over + 1] = k end
  end
  if next(pod.virtual) ~= nil then
    for _, t in ipairs(sorted(pod.virtual)) do
      if pod.virtual[t] > MAX_COUNT then over = over or {}; over[#over + 1] = t end
    end
  end
  pod.saturated = over
  return pod
end

-- The note a request whose pod asks for more than a jobspec can count gets
-- where it is matched (fits), or nil.
function request.saturation_note(req)
  local over = req.pod and req.pod.saturated
  if not over then return nil end
  return ("%s: the pod's %s request%s more than a Fluxion jobspec counts (2^32-1%s): %s as that much " ..
          "(saturated), which no node holds"):format(req.where or "?", table.concat(over, ", "),
          #over == 1 and " is" or "s are", (over[1] == "memory" and #over == 1) and " MiB" or "",
          #over == 1 and "taken" or "taken")
end

-- The template whose select-* annotations count when the object has no
-- select-policy of its own: the first Fluence template that has one (users
-- put scheduler annotations on the pod template), else the main template.
-- The object's annotations win over the template's, key by key.
local function annotated_template(obj, ann, t)
  if ann[POLICY] then return t end
  for _, tt in ipairs(obj.templates or {}) do
    if tt.targets_fluence and (tt.annotations or {})[POLICY] then return tt end
  end
  return t
end

-- The require-<attr> annotations of the object and of its pod templates
-- (where the scheduler reads them: contract.md), {attr = value}: each
-- becomes a property constraint of the group's device jobspecs.
local REQUIRE = P .. "require-"
local function requires(obj)
  local req = {}
  local function scan(ann)
    for k, v in pairs(ann or {}) do
      local attr = type(k) == "string" and k:sub(1, #REQUIRE) == REQUIRE and k:sub(#REQUIRE + 1)
      if attr and attr ~= "" then req[attr] = v end
    end
  end
  scan(obj.annotations)
  for _, t in ipairs(obj.templates or {}) do scan(t.annotations) end
  return req
end

-- The require-backend pin already on the object or on one of its Fluence
-- pod templates (where a user pinning by hand may well have written it).
function request.pin(obj)
  local pin = (obj.annotations or {})[PIN]
  if pin then return pin end
  for _, t in ipairs(obj.templates or {}) do
    pin = t.targets_fluence and (t.annotations or {})[PIN]
    if pin then return pin end
  end
end

-- build(obj, where[, stream]) -> Request.  where = "job.yaml:3:1" for
-- messages; with the stream obj came from, bad values are located at
-- themselves (line, column, source line and caret).
function request.build(obj, where, stream)
  local locate = stream and function(byte, msg) return stream:locate(byte, msg) end
  local ann, labels = obj.annotations or {}, obj.labels or {}
  local t = main_template(obj)
  local at = annotated_template(obj, ann, t)
  local tann, tlabels = at and at.annotations or {}, t and t.labels or {}
  local r = {
    object = { kind = obj.kind, apiVersion = obj.apiVersion, name = obj.name or obj.generateName,
               namespace = obj.namespace },
    annotations = ann, labels = labels,
    policy = ann[POLICY] or tann[POLICY],
    backend_family = ann[BACKEND] or tann[BACKEND],
    where = where,
  }
  -- shots: annotation, else N_SHOTS in a container's env, else 1000
  local shots = ann[SHOTS] or tann[SHOTS]
  if shots then
    r.shots = positive_int(shots, SHOTS, where, locate, function() return stream:annotation_span(obj.index, SHOTS, shots) end)
  else
    for _, tt in ipairs(obj.templates or {}) do
      for _, c in ipairs(tt.containers or {}) do
        if c.env and c.env.N_SHOTS and not r.shots then
          r.shots = positive_int(c.env.N_SHOTS, "container env N_SHOTS", where, locate,
                                 function() return c.env_at.N_SHOTS end)
        end
      end
    end
    r.shots = r.shots or 1000
  end
  local cands = ann[CANDIDATES] or tann[CANDIDATES]
  if cands then r.candidates = request.split_list(cands) end
  local cons = ann[CONSTRAINTS] or tann[CONSTRAINTS]
  if cons then r.constraints = request.split_list(cons) end

  local gname = first(GROUP_LABELS, labels, tlabels)
  local gsize = first(SIZE_KEYS, ann, tann, labels, tlabels)
  local size
  if gsize then size = positive_int(gsize, "group size", where)
  else size = tonumber(obj.parallelism) or tonumber(obj.replicas) or 1 end
  r.require = requires(obj)
  r.group = { name = gname, size = size }
  r.pods = size
  r.pod = pod_resources(t, where, locate)
  -- how long the workload runs, for hourly prices (fluence.cost): the
  -- annotation, else the object's activeDeadlineSeconds, else unknown
  local dur = ann[DURATION] or tann[DURATION]
  if dur then
    local secs, err = require("fluence.cost").parse_duration(dur)
    if not secs then
      bad_input(locate, locate and stream:annotation_span(obj.index, DURATION, dur), where, DURATION .. ": " .. err)
    end
    r.duration = { seconds = secs, from = "annotation" }
  elseif tonumber(obj.activeDeadlineSeconds) and obj.activeDeadlineSeconds > 0 then
    r.duration = { seconds = obj.activeDeadlineSeconds, from = "deadline" }
  end
  return r
end

return request
