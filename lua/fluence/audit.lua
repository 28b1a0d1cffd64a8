-- The select-result annotation: a compact JSON audit of one selection, kept
-- within Kubernetes' 256 KiB budget for all of an object's annotations.
local json = require "fluence.json"
local sys = require "fluence.sys"

local audit = {}

audit.LIMIT = 256 * 1024       -- Kubernetes: total size of an object's annotations
local ORDER = { "chosen", "context", "policy", "candidates", "dropped", "notes", "truncated", "time" }

local function ordered(t, order)
  return setmetatable(t, { __order = order })
end

local PROMOTED = { device_arn = true, region = true, provider = true }
local BACKEND_ORDER = { "name", "device_arn", "region", "provider", "attributes", "strings" }

-- A backend in the Go client's audit shape: numbers under "attributes",
-- strings under "strings", device_arn/region/provider as fields.
local function go_backend(b)
  local out = { name = b.name, attributes = json.object{}, strings = json.object{} }
  for k, v in pairs(b.attrs or {}) do
    if PROMOTED[k] and type(v) == "string" then out[k] = v
    elseif type(v) == "number" then out.attributes[k] = v
    else out.strings[k] = tostring(v) end
  end
  return ordered(out, BACKEND_ORDER)
end

-- build{policy, chosen, survivors = {backend...}, dropped = {name = reason},
--       notes = {...}, context = <the cluster chosen, with several>} -> table
-- ready for json.encode (the Go client's keys, plus the time of the
-- selection and, among several clusters, the context)
function audit.build(s)
  local cands = json.array{}
  for i, b in ipairs(s.survivors or {}) do cands[i] = go_backend(b) end
  return ordered({
    policy = s.policy, chosen = s.chosen, context = s.context, candidates = cands,
    dropped = json.object(s.dropped or {}), notes = json.array(s.notes or {}),
    time = sys.rfc3339(),
  }, ORDER)
end

-- encode(a, budget) -> JSON text no longer than budget bytes, trimming what
-- matters least first: other candidates' attributes, then the candidate list
-- (the chosen one stays), then the dropped reasons.  Marks "truncated".
-- At least how many bytes the dropped reasons take in the encoding ("k":"v"
-- each), or nil when a reason is not a string.
local function dropped_bytes(dropped)
  local n = 0
  for k, v in pairs(dropped) do
    if type(v) ~= "string" then return nil end
    n = n + #k + #v + 5
  end
  return n
end

function audit.encode(a, budget)
  local text
  -- When the dropped reasons alone exceed the budget (10,000 backends
  -- dropped), every text before they go would too: skip encoding those.
  -- The candidate list then ends halved down to the chosen one, as below.
  local least = dropped_bytes(a.dropped or {})
  if least and least > budget then
    a.truncated = true
    for i = #a.candidates, 2, -1 do a.candidates[i] = nil end
  else
    text = json.encode(a)
    if #text <= budget then return text end
    a.truncated = true
    for i = 2, #a.candidates do
      a.candidates[i].attributes, a.candidates[i].strings = json.object{}, json.object{}
    end
    text = json.encode(a)
    while #text > budget and #a.candidates > 1 do
      local keep = math.max(1, #a.candidates // 2)
      for i = #a.candidates, keep + 1, -1 do a.candidates[i] = nil end
      text = json.encode(a)
    end
  end
  if not text or #text > budget then
    a.dropped = json.object{}
    a.notes = json.array{ "audit trimmed to fit the 256 KiB annotation limit" }
    text = json.encode(a)
  end
  if #text > budget then
    a.candidates = json.array{ { name = a.chosen } }
    text = json.encode(a)
  end
  return text
end

-- Bytes the object's annotations use, excluding the keys we (re)write.
function audit.used(annotations, except)
  local n = 0
  for k, v in pairs(annotations or {}) do
    if not except[k] then n = n + #k + #tostring(v) end
  end
  return n
end

return audit
