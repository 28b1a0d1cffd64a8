-- The "braket-live" provider: live status, queue depth and prices of AWS
-- Braket devices, from GetDevice, for every backend gathered so far whose
-- attributes carry a device_arn (see docs/braket.md).
--
-- All devices are asked at once (api.http.request_many: total time close to
-- the slowest answer), each call signed with SigV4 by fluence.aws (C) and
-- bounded by a timeout.  Throttling (429, ThrottlingException) and server
-- errors (5xx) are retried, only for the devices that failed, with
-- exponential backoff and jitter, a bounded number of times - and all of
-- it, every round and every wait, within --request-timeout
-- (api.http.budget: the retry policy of the Kubernetes client too).
--
-- Options (ctx.options, "_" or "-" spelling): braket_endpoint (URL),
-- braket_region (for simulator ARNs, instead of the configured region),
-- braket_timeout (seconds per call at most, 10), braket_attempts (4),
-- braket_backoff (first retry delay in seconds, 0.2).
--
-- A device that cannot be read becomes { status = "UNKNOWN" } and the reason
-- goes into the notes ("braket-live: NAME: TYPE: message (HTTP n)"); this
-- provider never fails a run.  Notes pass through creds:redact and carry
-- only the first line of a server message: AWS echoes the canonical request
-- (with the session token) in InvalidSignatureException messages.
local M = {
  name = "braket-live",
  family = "braket",
  live = true,
  provides = { "status", "queue_size", "priority_queue_size", "jobs_queue_size" },
  enriches = { "device_arn" },   -- only backends with a device ARN: not run when none has one
  description = "live AWS Braket device status, queue depth and price (GetDevice, SigV4-signed, concurrent)",
}

M.TASK_FEE = 0.30              -- USD per QPU task, on top of the per-shot price
M.UNREADABLE_QUEUE = 2147483647 -- the Go client's "very large number" (MaxInt32)
M.LIVE = { status = true, queue_size = true, priority_queue_size = true, jobs_queue_size = true }

local RETRYABLE = {
  ThrottlingException = true, TooManyRequestsException = true, RequestLimitExceeded = true,
  InternalServiceException = true, InternalServerException = true, ServiceUnavailableException = true,
}

local function opt(ctx, name, default)
  local o = ctx.options or {}
  local v = o[name]
  if v == nil then v = o[(name:gsub("_", "-"))] end
  if v == nil then return default end
  return v
end

-- "12" -> 12, ">4000" -> 4001, anything else -> nil
function M.queue_number(s)
  if type(s) == "number" then return s end
  if type(s) ~= "string" then return nil end
  local n = tonumber(s)
  if n then return n end
  local gt = s:match("^%s*>%s*(%d+)%s*$")
  if gt then return tonumber(gt) + 1 end
  return nil
end

-- arn:aws:braket:REGION::device/... -> REGION, or false when the ARN has
-- none (simulators), or nil + reason when it is not a device ARN.
function M.arn_region(arn)
  local service, region, rest = arn:match("^arn:[^:]+:([^:]*):([^:]*):[^:]*:(.*)$")
  if service ~= "braket" or not rest or not rest:match("^device/.") then
    return nil, "not a Braket device ARN"
  end
  return region ~= "" and region or false
end

-- One line, bounded, without credentials.
local function clean(creds, s)
  s = tostring(s or ""):match("^[^\r\n]*")
  if #s > 240 then s = s:sub(1, 240) .. "..." end
  if creds then s = creds:redact(s) end
  return s
end

-- The attributes of one GetDevice answer.
-- Returns attrs, and a note when deviceCapabilities could not be read.
function M.attributes(doc, json)
  local a = {
    status = type(doc.deviceStatus) == "string" and doc.deviceStatus or "UNKNOWN",
    device_type = type(doc.deviceType) == "string" and doc.deviceType or nil,
    provider_name = type(doc.providerName) == "string" and doc.providerName or nil,
    device_name = type(doc.deviceName) == "string" and doc.deviceName or nil,
  }
  local normal
  for _, q in ipairs(type(doc.deviceQueueInfo) == "table" and doc.deviceQueueInfo or {}) do
    if type(q) == "table" then
      local n = M.queue_number(q.queueSize)
      if q.queue == "QUANTUM_TASKS_QUEUE" then
        if q.queuePriority == "Priority" then a.priority_queue_size = n or M.UNREADABLE_QUEUE
        elseif q.queuePriority == nil or q.queuePriority == "Normal" then normal = n or M.UNREADABLE_QUEUE end
      elseif q.queue == "JOBS_QUEUE" then
        a.jobs_queue_size = n or M.UNREADABLE_QUEUE
      end
    end
  end
  a.queue_size = normal or M.UNREADABLE_QUEUE

  local caps, note = doc.deviceCapabilities, nil
  if type(caps) == "string" then
    local err
    caps, err = json.decode(caps, "deviceCapabilities")
    if not caps then note = "deviceCapabilities unreadable: " .. tostring(err):match("^[^\n]*") end
  end
  if type(caps) == "table" then
    local paradigm = type(caps.paradigm) == "table" and caps.paradigm or {}
    if type(paradigm.qubitCount) == "number" then a.qubits = paradigm.qubitCount end
    local service = type(caps.service) == "table" and caps.service or {}
    local cost = type(service.deviceCost) == "table" and service.deviceCost or {}
    local price, unit = tonumber(cost.price), type(cost.unit) == "string" and cost.unit:lower() or nil
    local qpu = a.device_type == "QPU"
    -- unit prices only: cost_usd is the cost model's (lua/fluence/cost.lua),
    -- once every provider ran, so AWS's billing prices (aws-prices) can
    -- take precedence over deviceCost whichever runs first
    if price and unit == "shot" then
      a.cost_per_shot = price
      if qpu then a.cost_per_task = M.TASK_FEE end
    elseif price and unit == "minute" then
      a.cost_per_minute = price
    elseif price and unit == "hour" then
      a.cost_per_minute = price / 60
    elseif price and unit == "task" then
      a.cost_per_task = price
    end
  end
  return a, note
end

-- TYPE and message of an error answer (restJson: x-amzn-ErrorType, message).
local function error_of(resp, json)
  local etype = resp.headers and resp.headers["x-amzn-errortype"]
  etype = etype and etype:match("^[^:]+")
  local body = json.decode(resp.body or "", "answer")
  local msg
  if type(body) == "table" then
    msg = body.message or body.Message
    if not etype and type(body.__type) == "string" then etype = body.__type:match("([^#]+)$") end
    if not etype and type(body.code) == "string" then etype = body.code end
  end
  if not etype then
    etype = resp.status == 429 and "ThrottlingException" or resp.status >= 500 and "ServerError" or "Error"
  end
  return etype, type(msg) == "string" and msg or nil
end

local function is_timeout(msg)
  msg = msg:lower()
  return msg:find("timed out", 1, true) or msg:find("timeout", 1, true)
end

function M.candidates(ctx)
  local api = ctx.api
  local json = api.json
  local notes, out, byarn, order, known = {}, {}, {}, {}, {}
  for _, b in ipairs(ctx.backends or {}) do
    local attrs = b.attrs
    local arn = attrs and attrs.device_arn
    if type(arn) == "string" and arn ~= "" then
      known[b.name] = attrs
      if not byarn[arn] then
        byarn[arn] = {}
        order[#order + 1] = arn
      end
      table.insert(byarn[arn], b.name)
    end
  end
  if #order == 0 then return {}, nil end

  local results = {}                   -- arn -> attrs
  local function fail(arn, why)
    results[arn] = { status = "UNKNOWN" }
    for _, name in ipairs(byarn[arn]) do notes[#notes + 1] = ("braket-live: %s: %s"):format(name, why) end
  end
  local function finish()
    for _, arn in ipairs(order) do
      for _, name in ipairs(byarn[arn]) do
        -- Live state (status, queues) always wins.  What Braket publishes
        -- about the device (prices, qubits, type) only fills in
        -- what earlier providers (the user's attribute file) left out, so a
        -- user switching from the Go client, whose live provider gave only
        -- status and queue depth, gets the same choice.
        local a, have = {}, known[name] or {}
        for k, v in pairs(results[arn]) do
          if M.LIVE[k] or have[k] == nil then a[k] = v end
        end
        out[#out + 1] = { name = name, attrs = a }
      end
    end
    return out, #notes > 0 and notes or nil
  end

  -- The credentials (files in ~/.aws) are read only when a request will be
  -- made: not for a list of ARNs that are all malformed.
  local askable = {}
  for _, arn in ipairs(order) do
    local region, bad = M.arn_region(arn)
    if region == nil then fail(arn, clean(nil, arn) .. ": " .. bad)
    else askable[#askable + 1] = { arn = arn, region = region } end
  end
  if #askable == 0 then return finish() end

  local aws = api.aws
  local creds, why
  if not aws then why = "fluence.aws is not available in this build"
  else creds, why = aws.credentials() end
  if not creds then
    for _, a in ipairs(askable) do results[a.arn] = { status = "UNKNOWN" } end
    -- about the run, not this object: said once (the audit still has it)
    notes[#notes + 1] = { text = ("braket-live: %s; devices marked UNKNOWN"):format(clean(nil, why)), run = true }
    return finish()
  end

  local timeout = tonumber(opt(ctx, "braket_timeout", 10)) or 10
  if not (timeout > 0) then timeout = 10 end       -- every request has a limit
  local attempts = math.max(1, math.floor(tonumber(opt(ctx, "braket_attempts", 4)) or 4))
  local backoff = tonumber(opt(ctx, "braket_backoff", 0.2)) or 0.2
  local endpoint = opt(ctx, "braket_endpoint", nil) or creds:endpoint("braket")
  local default_region = opt(ctx, "braket_region", nil) or creds:region()

  -- the time of all the calls, their retries and waits: --request-timeout
  local budget = api.http.budget()
  local pending = {}
  for _, a in ipairs(askable) do
    local arn, region = a.arn, a.region
    if not region and not default_region then
      fail(arn, "no AWS region for a simulator ARN (set AWS_REGION, AWS_DEFAULT_REGION or region in ~/.aws/config)")
    else
      region = region or default_region
      local base = endpoint and endpoint:gsub("/+$", "") or ("https://braket." .. region .. ".amazonaws.com")
      pending[#pending + 1] = { arn = arn, region = region, url = base .. "/device/" .. aws.uri_encode(arn), tries = 0 }
    end
  end

  for round = 1, attempts do
    if #pending == 0 then break end
    local reqs = {}
    for i, d in ipairs(pending) do
      local ok, headers = pcall(aws.sign, creds, { method = "GET", url = d.url, region = d.region, service = "braket" })
      if not ok then headers = {} d.sign_error = clean(creds, headers) end
      headers.Accept = "application/json"
      local t = budget:attempt(timeout)
      reqs[i] = { url = d.url, method = "GET", headers = headers, timeout = t, connect_timeout = math.min(t, 5) }
    end
    local resps = api.http.request_many(reqs, { max_parallel = math.min(#reqs, 100) })
    local retry, wait = {}, 0
    for i, d in ipairs(pending) do
      local r = resps[i] or { error = "no answer" }
      d.tries = d.tries + 1
      local again = round < attempts
      if d.sign_error then
        fail(d.arn, "cannot sign the request: " .. d.sign_error)
      elseif r.error then
        d.last = "request failed: " .. clean(creds, r.error)
        if again and not is_timeout(r.error) then retry[#retry + 1] = d
        else fail(d.arn, d.last .. (d.tries > 1 and (" (after %d attempts)"):format(d.tries) or "")) end
        d.text = d.last
      elseif r.status == 200 then
        local doc, err = json.decode(r.body or "", "GetDevice answer")
        if type(doc) ~= "table" then
          fail(d.arn, "unreadable GetDevice answer: " .. clean(creds, err or "not an object"))
        else
          local attrs, note = M.attributes(doc, json)
          results[d.arn] = attrs
          if note then
            for _, name in ipairs(byarn[d.arn]) do
              notes[#notes + 1] = ("braket-live: %s: %s"):format(name, clean(creds, note))
            end
          end
        end
      else
        local etype, msg = error_of(r, json)
        local retryable = r.status == 429 or r.status >= 500 or RETRYABLE[etype]
        local text = ("%s: %s (HTTP %d%s)"):format(clean(creds, etype), clean(creds, msg or "no message"), r.status,
                                                  d.tries > 1 and (", after %d attempts"):format(d.tries) or "")
        if retryable and again then
          retry[#retry + 1] = d
          d.text = text
          local ra = tonumber(r.headers and r.headers["retry-after"])
          if ra and ra > wait then wait = math.min(ra, 5) end
        else
          fail(d.arn, text)
        end
      end
    end
    pending = retry
    if #pending > 0 then
      -- asked again only when the longest wait backoff may make still ends
      -- within the budget; else each says why not
      local gave_up = budget:gave_up(round, attempts, math.max(math.min(backoff * 2 ^ (round - 1), 5), wait))
      if gave_up then
        for _, d in ipairs(pending) do fail(d.arn, d.text .. "; " .. gave_up) end
        pending = {}
      else
        aws.backoff(round, backoff, 5, wait)
      end
    end
  end
  return finish()
end

return M
