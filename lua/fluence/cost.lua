-- The cost model: every price carries its unit, and cost_usd is what this
-- workload is expected to cost (docs/pricing.md).
--
--   cost.PRICES, cost.UNIT      every price attribute, its unit and kind
--                               (declared in lua/fluence/units.lua)
--   cost.parse_duration(text) -> seconds | nil, message   ("90m", "1h30m", "3600")
--   cost.workload(request)    -> { pods, gpus, shots, seconds, from, stated }
--   cost.estimate(attrs, work [, spot]) -> usd, basis, hours | nil
--   cost.per_task(task, shot, shots) -> usd        (Braket: fee + shots x price)
--   cost.apply(state, request, merge)
--                             after every provider ran: cost_usd (and
--                             spot_cost_usd) for the backends that have unit
--                             prices but no cost_usd, as one more merged
--                             result from the provider "cost model"
--   cost.unreconciled(backends, attr) -> message | nil
--                             cost_usd figures a stage must not compare
--   cost.describe(rec)        -> lines for explain: the workload, and each
--                             backend's prices with unit, source and age
--
-- What is estimated, in this order (the first that applies):
--   cost_per_task / cost_per_shot   fee + shots x per-shot price (one task)
--   cost_per_minute                 a simulator: the price x the workload's
--                                   stated duration (the duration annotation),
--                                   else x 0.05 min: the 3 s minimum billed for
--                                   one task -- the Go client's rule, kept for
--                                   inputs that say nothing about time
--   price_per_hour, price_per_gpu_hour
--                                   (the machine's price + each GPU's x GPUs
--                                   per pod, at least 1) x pods x hours: GCP
--                                   prices the GPU apart from its host
-- hours: the duration annotation, else the object's activeDeadlineSeconds,
-- else one hour (explain says which).
--
-- A cost_usd a provider states (an attribute file's attributes.cost_usd, a
-- ConfigMap's cost_usd) has no unit and is used as given, never replaced.
-- The Go client compared such figures with per-task costs, and so does
-- fluence; but an estimate scaled by the workload's pods and hours (an
-- hourly price, a per-minute price times a stated duration) cannot be
-- compared with a figure of unknown unit: a stage that would compare them
-- fails instead, naming the backends (cost.unreconciled).  A cost_usd a
-- provider computed from the task and shot prices it gives too (the
-- attribute file's rule) is a per-task cost, comparable with both.
local cost = {}

cost.PROVIDER = "cost model"          -- the provider name its estimates carry

-- every price attribute and its unit: lua/fluence/units.lua
local units = require "fluence.units"
cost.PRICES, cost.UNIT = units.PRICES, units.UNIT

-- The attributes the model writes (and only it: see apply).
cost.OWN = { "cost_usd", "cost_basis", "cost_hours", "spot_cost_usd", "spot_cost_basis" }

cost.DEFAULT_SECONDS = 3600
cost.TASK_MINUTES = 0.05              -- Braket bills a simulator task 3 s at least

local function num(v)
  return type(v) == "number" and v == v and v > -math.huge and v < math.huge and v or nil
end

-- A number as people write it: 0.55, 1000, 1.5 (not 1.5000000000000002).
local function show(v)
  if v == math.floor(v) and math.abs(v) < 1e15 then return ("%d"):format(v) end
  return (("%.6g"):format(v))
end
cost.show = show

local UNITS = { h = 3600, m = 60, s = 1 }

-- "90m", "1h30m", "2.5h", "45s" or plain seconds "3600" -> seconds (> 0).
function cost.parse_duration(text)
  if type(text) == "number" then text = tostring(text) end
  if type(text) ~= "string" then return nil, "must be a duration (like 90m, 2h, 1h30m, or seconds)" end
  local s = text:match("^%s*(.-)%s*$")
  local n = s:match("^%d+%.?%d*$") and tonumber(s)
  if not n then
    local total, rest = 0, s
    while rest ~= "" do
      local value, unit, tail = rest:match("^(%d*%.?%d+)([hms])(.*)$")
      if not value then total = nil break end
      total, rest = total + tonumber(value) * UNITS[unit], tail
    end
    n = s ~= "" and total or nil
  end
  if not n or n <= 0 or n ~= n or n > 1e9 then
    return nil, ("%q is not a duration (like 90m, 2h, 1h30m, or seconds; more than 0)"):format(text)
  end
  return n
end

local FROM = {
  annotation = "the duration annotation",
  deadline = "the object's activeDeadlineSeconds",
  default = "no duration given: one hour",
}

-- What one workload asks for, as the model prices it.
function cost.workload(req)
  req = req or {}
  local d = req.duration or {}
  local pod = req.pod or {}
  return {
    pods = math.max(1, tonumber(req.pods) or 1),
    gpus = math.max(1, tonumber(pod.gpu) or 0),
    shots = tonumber(req.shots) or 1000,
    seconds = d.seconds or cost.DEFAULT_SECONDS,
    from = d.from or "default",
    stated = d.from == "annotation",
  }
end

function cost.per_task(task, shot, shots)
  return (task or 0) + shots * (shot or 0)
end

local function duration_text(w)
  local h = w.seconds / 3600
  return ("%s h (%s)"):format(show(h), FROM[w.from] or w.from)
end

local function plural(n, one) return ("%s %s%s"):format(show(n), one, n == 1 and "" or "s") end

-- usd, basis (how it was computed, for explain and the audit), hours (set
-- when the estimate scales with the workload's pods and time)
function cost.estimate(a, w, spot)
  if not spot then
    local task, shot = num(a.cost_per_task), num(a.cost_per_shot)
    if task or shot then
      return cost.per_task(task, shot, w.shots),
             ("%s USD/task + %s x %s USD/shot"):format(show(task or 0), plural(w.shots, "shot"), show(shot or 0))
    end
    local minute = num(a.cost_per_minute)
    if minute then
      if w.stated then
        local mins = math.max(cost.TASK_MINUTES, w.seconds / 60)
        return minute * mins, ("%s USD/minute x %s min (%s)"):format(show(minute), show(mins), FROM.annotation),
               mins / 60
      end
      return minute * cost.TASK_MINUTES,
             ("%s USD/minute x %s min (the 3 s billed at least per task: no duration given)")
               :format(show(minute), show(cost.TASK_MINUTES))
    end
  end
  -- a machine by the hour: its own price (for GCP, the host's) plus each
  -- GPU's where GPUs are priced apart; a spot estimate needs the spot price
  -- of every part that has an on-demand one
  local hour, gpu = num(a.price_per_hour), num(a.price_per_gpu_hour)
  if spot then
    local sh, sg = num(a.spot_price_per_hour), num(a.spot_price_per_gpu_hour)
    if (hour and not sh) or (gpu and not sg) then return nil end
    hour, gpu = sh, sg
  end
  if not hour and not gpu then return nil end
  local hours = w.seconds / 3600
  local per, parts = 0, {}
  if hour then
    per = per + hour
    parts[#parts + 1] = ("%s USD/hour"):format(show(hour))
  end
  if gpu then
    per = per + gpu * w.gpus
    parts[#parts + 1] = ("%s USD/GPU-hour x %s"):format(show(gpu), plural(w.gpus, "GPU"))
  end
  local rate = #parts > 1 and "(" .. table.concat(parts, " + ") .. ")" or parts[1]
  return per * w.pods * hours, ("%s x %s x %s"):format(rate, plural(w.pods, "pod"), duration_text(w)),
         w.pods * hours
end

-- After every provider: estimates for the backends with prices and no
-- stated cost.  state = {results =, merged =} as the selection gathers
-- them; the estimates join as one more (trusted) result, so explain shows
-- "cost model" as their source and the merge's rules hold.
function cost.apply(state, req, merge)
  local w = cost.workload(req)
  local out = {}
  for _, b in ipairs(state.merged) do
    local a, src = b.attrs, b.source or {}
    local mine = nil
    -- a cost_usd some provider stated is kept; one this model made for an
    -- earlier request shape is not in state (each decision merges afresh)
    if a.cost_usd == nil or src.cost_usd == cost.PROVIDER then
      local usd, basis, hours = cost.estimate(a, w)
      if usd then mine = { cost_usd = usd, cost_basis = basis, cost_hours = hours } end
    end
    if a.spot_cost_usd == nil or src.spot_cost_usd == cost.PROVIDER then
      local usd, basis = cost.estimate(a, w, true)
      if usd then
        mine = mine or {}
        mine.spot_cost_usd, mine.spot_cost_basis = usd, basis
      end
    end
    if mine then out[#out + 1] = { name = b.name, attrs = mine } end
  end
  if #out == 0 then return state.merged end
  state.results[#state.results + 1] = { provider = cost.PROVIDER, backends = out, trusted = true }
  local m, err = merge.merge(state.results)
  if not m then error(err, 0) end
  state.merged = m
  return m
end

-- What a backend's cost figure is: "scaled" when the model computed it from
-- the workload's pods and hours; "task" when it is a per-task cost (the
-- model's, or a provider's from the task and shot prices it gave too: the
-- attribute file's rule); "stated" when a provider gave it with no unit.
local function figure(b, attr)
  local src, a = b.source or {}, b.attrs
  local from = src[attr]
  if from == cost.PROVIDER then
    return (attr ~= "cost_usd" or a.cost_hours ~= nil) and "scaled" or "task"
  end
  if attr == "cost_usd" and ((a.cost_per_task ~= nil and src.cost_per_task == from) or
                             (a.cost_per_shot ~= nil and src.cost_per_shot == from)) then
    return "task"
  end
  return "stated"
end
cost.figure = figure

local function names(list)
  local out = {}
  for i = 1, math.min(#list, 5) do out[i] = list[i] end
  if #list > 5 then out[#out + 1] = ("and %d more"):format(#list - 5) end
  return table.concat(out, ", ")
end

-- nil when the backends' attr figures can be compared; else why not, naming
-- them (at most five of each side).
function cost.unreconciled(backends, attr)
  local stated, est = {}, {}
  for _, b in ipairs(backends) do
    if b.attrs[attr] ~= nil then
      local f = figure(b, attr)
      if f == "scaled" then est[#est + 1] = b.name
      elseif f == "stated" then stated[#stated + 1] = b.name end
    end
  end
  if #stated == 0 or #est == 0 then return nil end
  return ("cannot compare %s: %s stated without a unit (%s), %s estimated for this workload from " ..
          "hourly prices (%s); give the first a price with a unit (price_per_hour ...) instead of %s, " ..
          "so the same model estimates both (docs/pricing.md)")
         :format(attr, #stated == 1 and "one is" or "some are", names(stated),
                 #est == 1 and "one is" or "some are", names(est), attr)
end

-- "2 h 5 min" for an age in seconds.
function cost.age(seconds)
  seconds = math.max(0, math.floor(seconds + 0.5))
  if seconds < 60 then return ("%d s"):format(seconds) end
  if seconds < 3600 then return ("%d min"):format(seconds // 60) end
  local function two(big, bu, small, su)
    return small == 0 and ("%d %s"):format(big, bu) or ("%d %s %d %s"):format(big, bu, small, su)
  end
  if seconds < 86400 then return two(seconds // 3600, "h", seconds % 3600 // 60, "min") end
  return two(seconds // 86400, "d", seconds % 86400 // 3600, "h")
end

-- explain's lines about prices: the workload, then per backend every price
-- with its unit, the provider that gave it and its age, and the estimates.
function cost.describe(rec, now)
  local lines, any, quantum = {}, false, false
  for _, b in ipairs(rec.all or {}) do
    local parts = {}
    local src = b.source or {}
    for _, p in ipairs(cost.PRICES) do
      local v = b.attrs[p.attr]
      if v ~= nil then
        if p.kind == "task" then quantum = true end
        local extra = { src[p.attr] or "?" }
        -- an age only for a price fetched with its time (not a file's)
        local t = src[p.time] == src[p.attr] and num(b.attrs[p.time])
        if t and now then extra[#extra + 1] = cost.age(now - t) .. " old" end
        if p.spot and type(b.attrs.spot_zone) == "string" then extra[#extra + 1] = "zone " .. b.attrs.spot_zone end
        parts[#parts + 1] = ("%s %s %s (%s)"):format(p.attr, tostring(v), p.unit, table.concat(extra, ", "))
      end
    end
    for _, k in ipairs{ "cost_usd", "spot_cost_usd" } do
      local v = b.attrs[k]
      if v ~= nil then
        local basis = b.attrs[k == "cost_usd" and "cost_basis" or "spot_cost_basis"]
        if src[k] == cost.PROVIDER and basis then
          parts[#parts + 1] = ("%s %s = %s"):format(k, show(v), basis)
        elseif #parts > 0 then
          parts[#parts + 1] = ("%s %s (%s: stated, no unit)"):format(k, tostring(v), src[k] or "?")
        end
      end
    end
    if type(b.attrs.price_note) == "string" then parts[#parts + 1] = b.attrs.price_note end
    if #parts > 0 then
      any = true
      lines[#lines + 1] = ("  %s: %s"):format(b.name, table.concat(parts, "; "))
    end
  end
  if not any then return {} end
  local w = cost.workload(rec.request)
  local parts = { plural(w.pods, "pod") }
  if quantum then parts[#parts + 1] = plural(w.shots, "shot") end
  parts[#parts + 1] = duration_text(w)
  table.insert(lines, 1, ("prices (workload: %s):"):format(table.concat(parts, ", ")))
  return lines
end

return cost
