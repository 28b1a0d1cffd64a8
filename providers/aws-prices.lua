-- The "aws-prices" provider: today's AWS prices, signed with SigV4 by
-- fluence.aws with the same credentials chain as braket-live.
--
-- EC2 (backends whose attributes carry cloud = aws, instance_type: an EC2
-- instance type, and region):
--   on-demand  the Price List Query API, GetProducts (JSON 1.1, service
--              "pricing"; ServiceCode AmazonEC2; Linux, shared tenancy, no
--              pre-installed software, capacitystatus Used); every member of
--              PriceList is a JSON document inside a string
--   spot       EC2 DescribeSpotPriceHistory (Query protocol, XML answer) from
--              now: the region's spot price is its cheapest zone's current
--              price, and spot_zone records the zone
-- Braket (backends with a device_arn and no price of their own, or only
-- GetDevice's deviceCost from braket-live): GetProducts with ServiceCode
-- AmazonBraket in the device's region: "Quantum Task" (cost_per_task) and
-- "Quantum Task-Shot" (cost_per_shot) products whose devicename is the
-- device's, or a "Simulator Task" (cost_per_minute) whose usagetype names the
-- simulator.  These are what AWS bills, so they take precedence over
-- deviceCost (this provider replaces braket-live's prices, whichever ran
-- first) but never over the user's own.
--
-- Endpoints: AWS_ENDPOINT_URL_PRICING / AWS_ENDPOINT_URL_EC2, else
-- AWS_ENDPOINT_URL, else the profile's endpoint_url, else
-- https://api.pricing.us-east-1.amazonaws.com (signed for us-east-1: the
-- Price List endpoint's region, unrelated to the prices') and
-- https://ec2.REGION.amazonaws.com.  Prices are cached (lua/fluence/prices.lua);
-- --offline reads only the cache.  docs/pricing.md.
local M = {
  name = "aws-prices",
  family = "aws",
  live = true,
  provides = { "price_per_hour", "spot_price_per_hour", "cost_usd", "spot_cost_usd",
               "cost_per_task", "cost_per_shot", "cost_per_minute" },
  enriches = { "cloud=aws", "device_arn" },
  description = "live AWS prices: EC2 on-demand and spot, Braket per task and shot (Price List, SigV4, cached)",
}

M.PRICING_URL = "https://api.pricing.us-east-1.amazonaws.com"
M.PRICING_REGION = "us-east-1"
M.EC2_VERSION = "2016-11-15"

local function str(v) return type(v) == "string" and v ~= "" and v or nil end

-- GetProducts' request body.
function M.products_body(service, filters, token)
  local list = {}
  for _, f in ipairs(filters) do list[#list + 1] = { Type = "TERM_MATCH", Field = f[1], Value = f[2] } end
  return { ServiceCode = service, Filters = list, FormatVersion = "aws_v1", MaxResults = 100, NextToken = token }
end

function M.ec2_filters(instance_type, region)
  return { { "instanceType", instance_type }, { "regionCode", region }, { "operatingSystem", "Linux" },
           { "tenancy", "Shared" }, { "capacitystatus", "Used" }, { "preInstalledSw", "NA" } }
end

-- The USD prices of one PriceList document's on-demand terms, with their
-- units: { {usd =, unit =}, ... }
function M.on_demand(doc)
  local out = {}
  local terms = type(doc.terms) == "table" and type(doc.terms.OnDemand) == "table" and doc.terms.OnDemand or {}
  for _, term in pairs(terms) do
    local dims = type(term) == "table" and type(term.priceDimensions) == "table" and term.priceDimensions or {}
    for _, d in pairs(dims) do
      local usd = type(d) == "table" and type(d.pricePerUnit) == "table" and tonumber(d.pricePerUnit.USD)
      if usd then out[#out + 1] = { usd = usd, unit = type(d.unit) == "string" and d.unit or "" } end
    end
  end
  return out
end

-- A GetProducts page's documents (each PriceList member decoded from its
-- string), and the next token.
local function products(json, body)
  local doc, err = json.decode(body or "", "GetProducts answer")
  if type(doc) ~= "table" then return nil, "unreadable answer: " .. tostring(err) end
  local docs = {}
  for _, s in ipairs(type(doc.PriceList) == "table" and doc.PriceList or {}) do
    local d = type(s) == "string" and json.decode(s, "PriceList member") or (type(s) == "table" and s) or nil
    if type(d) == "table" then docs[#docs + 1] = d end
  end
  return docs, str(doc.NextToken)
end

-- Lowercase letters and digits only: "Forte 1", "Forte-1" and "forte1" agree.
local function squash(s) return (tostring(s or ""):lower():gsub("[^%w]", "")) end

-- What a Braket device is called in the price list: its ARN's last segment
-- (arn:...:device/qpu/ionq/Forte-1 -> forte1; .../amazon/sv1 -> sv1).
function M.device_key(arn)
  local last = tostring(arn):match("/([^/]+)$")
  return last and squash(last)
end

-- A Braket price table for one region: { [device key] = {task =, shot =, minute =} }
function M.braket_rows(docs, acc)
  for _, d in ipairs(docs) do
    local p = type(d.product) == "table" and d.product or {}
    local at = type(p.attributes) == "table" and p.attributes or {}
    local family = p.productFamily
    local usd
    for _, o in ipairs(M.on_demand(d)) do
      if o.usd > 0 and (not usd or o.usd < usd) then usd = o.usd end
    end
    if usd then
      local dev = str(at.devicename) and squash(at.devicename)
      if family == "Quantum Task" and dev then
        acc[dev] = acc[dev] or {}
        acc[dev].task = usd
      elseif family == "Quantum Task-Shot" and dev then
        acc[dev] = acc[dev] or {}
        acc[dev].shot = usd
      elseif family == "Simulator Task" then
        -- "USE1-Simulator-SV1-Completed-Task-ExecutionDuration": the word
        -- after "Simulator" names it (the ARN's sv1)
        local usage = tostring(at.usagetype or "")
        local sim = usage:find("ExecutionDuration", 1, true) and usage:lower():match("simulator%-(%w+)")
        if sim then
          acc[sim] = acc[sim] or {}
          acc[sim].minute = usd
        end
      end
    end
  end
  return acc
end

-- The cheapest zone's current spot price from DescribeSpotPriceHistory's
-- items: the newest price of each zone, then the lowest of those.
function M.spot_items(xml, root, acc)
  local set = xml.child(root, "spotPriceHistorySet")
  for _, it in ipairs(xml.children(set, "item")) do
    local zone, price, t = xml.text(it, "availabilityZone"), tonumber(xml.text(it, "spotPrice")),
                           xml.text(it, "timestamp") or ""
    if zone and price and price > 0 then
      local cur = acc.zones[zone]
      if not cur or t > cur.t then acc.zones[zone] = { price = price, t = t } end
    end
  end
  return acc
end

local function cheapest(zones)
  local best, where
  for zone, z in pairs(zones) do
    if not best or z.price < best or (z.price == best and zone < where) then best, where = z.price, zone end
  end
  return best, where
end

local function form(params)
  local keys = {}
  for k in pairs(params) do keys[#keys + 1] = k end
  table.sort(keys)
  local parts = {}
  for _, k in ipairs(keys) do
    parts[#parts + 1] = k .. "=" .. tostring(params[k]):gsub("[^%w%-%._~]", function(c)
      return ("%%%02X"):format(c:byte())
    end)
  end
  return table.concat(parts, "&")
end

-- The error type and message of an AWS answer: JSON 1.1 (__type, message)
-- or Query XML (<Code>, <Message>).
local function error_of(api, resp)
  local body = resp.body or ""
  local doc = api.json.decode(body, "answer")
  if type(doc) == "table" then
    local etype = type(doc.__type) == "string" and doc.__type:match("([^#]+)$") or nil
    return etype or (resp.status == 429 and "ThrottlingException" or "Error"), doc.message or doc.Message
  end
  local root = api.xml.decode(body, "answer")
  if root then
    local e = api.xml.child(api.xml.child(root, "Errors"), "Error") or api.xml.child(root, "Error") or root
    return api.xml.text(e, "Code") or "Error", api.xml.text(e, "Message")
  end
  return resp.status == 429 and "ThrottlingException" or "Error", nil
end

local THROTTLED = { ThrottlingException = true, RequestLimitExceeded = true, Throttling = true,
                    TooManyRequestsException = true }

-- Which backends this provider prices: EC2 instances, and Braket devices
-- whose prices are braket-live's (deviceCost) or missing.
local function braket_device(b)
  local a, src = b.attrs or {}, b.source or {}
  if not str(a.device_arn) then return false end
  for _, k in ipairs{ "cost_usd", "cost_per_task", "cost_per_shot", "cost_per_minute" } do
    if a[k] ~= nil and src[k] ~= "braket-live" and src[k] ~= M.name and src[k] ~= "cost model" then return false end
  end
  return true
end

-- "2026-01-01T00:00:00Z" for seconds since the epoch (UTC; days from
-- civil, Howard Hinnant's algorithm: the sandbox has no os.date).
function M.rfc3339(t)
  t = math.floor(t)
  local days, secs = t // 86400, t % 86400
  local z = days + 719468
  local era = z // 146097
  local doe = z - era * 146097
  local yoe = (doe - doe // 1460 + doe // 36524 - doe // 146096) // 365
  local doy = doe - (365 * yoe + yoe // 4 - yoe // 100)
  local mp = (5 * doy + 2) // 153
  local d = doy - (153 * mp + 2) // 5 + 1
  local m = mp < 10 and mp + 3 or mp - 9
  local y = yoe + era * 400 + (m <= 2 and 1 or 0)
  return ("%04d-%02d-%02dT%02d:%02d:%02dZ"):format(y, m, d, secs // 3600, secs % 3600 // 60, secs % 60)
end

-- One DescribeSpotPriceHistory call of a spot job, from now (token: the
-- next page's).
function M.spot_request(api, job, token)
  local params = { Action = "DescribeSpotPriceHistory", Version = M.EC2_VERSION,
                   ["InstanceType.1"] = job.item.instance_type, ["ProductDescription.1"] = "Linux/UNIX",
                   StartTime = M.rfc3339(api.now()), MaxResults = 1000, NextToken = token }
  return { url = job.base .. "/", method = "POST", body = form(params),
           headers = { ["Content-Type"] = "application/x-www-form-urlencoded; charset=utf-8" } }
end

function M.candidates(ctx)
  local api = ctx.api
  local P = api.prices
  local ec2 = P.targets(ctx.backends, "aws", { fills = "price_per_hour", by = M.name,
                                               want = function(b) return not str(b.attrs.device_arn) end })
  local devices, regions = {}, {}
  for _, b in ipairs(ctx.backends or {}) do
    if braket_device(b) then devices[#devices + 1] = b end
  end
  if #ec2 == 0 and #devices == 0 then return {} end
  local book = P.book(M.name, ctx.options)

  -- credentials (and libcrypto) only when something must be fetched, or a
  -- simulator needs the configured region
  local creds, tried
  local function credentials()
    if not tried and not book.offline then
      tried = true
      local why
      creds, why = api.aws.credentials()
      if not creds then
        book:note(("%s; only cached prices are used"):format(tostring(why):match("^[^\n]*")), true)
      end
    end
    return creds
  end
  local function redact(s) return creds and creds:redact(s) or s end

  -- the Braket devices' regions (a simulator's: the configured one)
  local region_of = {}
  for _, b in ipairs(devices) do
    local r = str(tostring(b.attrs.device_arn):match("^arn:[^:]*:braket:([^:]*):")) or str(b.attrs.region)
    if not r and credentials() then r = creds:region() end
    region_of[b.name] = r
    if r and not regions[r] then
      regions[r] = { region = r }
      regions[#regions + 1] = regions[r]
    end
  end

  -- cache first: what is fresh is not asked for
  local want = {}
  for _, t in ipairs(ec2) do
    t.od = book:get("ec2/" .. t.key, book.ttl)
    t.spot = book:get("spot/" .. t.key, book.spot_ttl)
    if not (t.od and t.od.fresh) then want[#want + 1] = { "od", t } end
    if not (t.spot and t.spot.fresh) then want[#want + 1] = { "spot", t } end
  end
  for _, r in ipairs(regions) do
    r.entry = book:get("braket/" .. r.region, book.ttl)
    if not (r.entry and r.entry.fresh) then want[#want + 1] = { "braket", r } end
  end
  local jobs = {}
  if #want > 0 and credentials() then
    local pricing = (creds:endpoint("pricing") or M.PRICING_URL):gsub("/+$", "")
    local pricing_region = pricing:match("^https?://api%.pricing%.([%w-]+)%.amazonaws%.com") or M.PRICING_REGION
    local function products_job(kind, item, service, filters)
      return { kind = kind, item = item, service = service, filters = filters, docs = {}, seen = {},
               request = { url = pricing .. "/", method = "POST",
                           body = api.json.encode(M.products_body(service, filters)),
                           headers = { ["Content-Type"] = "application/x-amz-json-1.1",
                                       ["X-Amz-Target"] = "AWSPriceListService.GetProducts" } },
               sign_region = pricing_region, sign_service = "pricing" }
    end
    for _, w in ipairs(want) do
      local kind, it = w[1], w[2]
      if kind == "od" then
        jobs[#jobs + 1] = products_job("od", it, "AmazonEC2", M.ec2_filters(it.instance_type, it.region))
      elseif kind == "braket" then
        jobs[#jobs + 1] = products_job("braket", it, "AmazonBraket", { { "regionCode", it.region } })
      else
        local job = { kind = "spot", item = it, zones = {}, seen = {}, sign_region = it.region, sign_service = "ec2",
                      base = (creds:endpoint("ec2") or ("https://ec2." .. it.region .. ".amazonaws.com")):gsub("/+$", "") }
        job.request = M.spot_request(api, job)
        jobs[#jobs + 1] = job
      end
    end
  end

  if #jobs > 0 then
    local json, xml = api.json, api.xml
    P.fetch(jobs, {
      options = ctx.options,
      redact = redact,
      sign = function(req, job)
        local headers = {}
        for k, v in pairs(req.headers or {}) do headers[k] = v end
        local signed = api.aws.sign(creds, { method = req.method, url = req.url, body = req.body, headers = headers,
                                             region = job.sign_region, service = job.sign_service })
        for k, v in pairs(signed) do headers[k] = v end
        req.headers = headers
        return req
      end,
      page = function(job, resp)
        local token
        if job.kind == "spot" then
          local root, err = xml.decode(resp.body or "", "DescribeSpotPriceHistory answer")
          if not root then return nil, "unreadable answer: " .. err end
          M.spot_items(xml, root, job)
          token = xml.text(root, "nextToken")
          if not str(token) then
            local price, zone = cheapest(job.zones)
            return "done", { price = price, zone = zone }
          end
          if job.seen[token] then return nil, "nextToken repeats a page: stopped" end
          job.seen[token] = true
          return "next", M.spot_request(api, job, token)
        end
        local docs
        docs, token = products(json, resp.body)
        if not docs then return nil, token end
        for _, d in ipairs(docs) do job.docs[#job.docs + 1] = d end
        if not token then
          if job.kind == "braket" then return "done", M.braket_rows(job.docs, {}) end
          -- plain Linux is operation RunInstances; RunInstances:NNNN are
          -- licensed variants (SQL Server ...), used only when alone
          local plain = {}
          for _, d in ipairs(job.docs) do
            local at = type(d.product) == "table" and type(d.product.attributes) == "table" and d.product.attributes
            if at and at.operation == "RunInstances" then plain[#plain + 1] = d end
          end
          local best
          for _, d in ipairs(#plain > 0 and plain or job.docs) do
            for _, o in ipairs(M.on_demand(d)) do
              if o.usd > 0 and o.unit:lower():match("^hrs?$") and (not best or o.usd < best) then best = o.usd end
            end
          end
          return "done", { price = best }
        end
        if job.seen[token] then return nil, "NextToken repeats a page: stopped" end
        job.seen[token] = true
        local req = {}
        for k, v in pairs(job.request) do req[k] = v end
        req.body = json.encode(M.products_body(job.service, job.filters, token))
        return "next", req
      end,
      error_of = function(resp) return error_of(api, resp) end,
      retryable = function(_, etype) return THROTTLED[etype] or false end,
    })
    for _, j in ipairs(jobs) do
      local it = j.item
      local what = j.kind == "braket" and ("Braket prices in " .. it.region)
                   or ("%s %s in %s"):format(it.instance_type, j.kind == "spot" and "spot" or "on-demand", it.region)
      local slot = j.kind == "od" and "od" or j.kind == "spot" and "spot" or "entry"
      local key = (j.kind == "od" and "ec2/" or j.kind == "spot" and "spot/" or "braket/") ..
                  (it.key or it.region)
      if j.value then it[slot] = book:put(key, j.value)
      else it[slot] = book:fallback(it[slot], what, j.error); it[slot .. "_failed"] = true end
    end
  end

  local out = {}
  -- a price not fetched (offline, no credentials) and past its TTL, or never
  -- cached: said, with its age (a failed fetch said so already)
  local unfetched = book.offline and "offline" or not creds and "no AWS credentials" or nil
  local function stale(e, what, failed)
    if failed or not unfetched or (e and e.fresh) then return end
    book:fallback(e, what, e and unfetched or unfetched .. ", and nothing cached")
  end
  for _, t in ipairs(ec2) do
    stale(t.od, t.instance_type .. " on-demand in " .. t.region, t.od_failed)
    stale(t.spot, t.instance_type .. " spot in " .. t.region, t.spot_failed)
    local od, sp = t.od and t.od.value or {}, t.spot and t.spot.value or {}
    if t.od and not t.od_failed and not od.price then
      book:note(("%s in %s: no Linux on-demand price published"):format(t.instance_type, t.region))
    end
    local a = { price_per_hour = od.price, price_time = od.price and t.od.fetched or nil,
                spot_price_per_hour = sp.price, spot_price_time = sp.price and t.spot.fetched or nil,
                spot_zone = sp.price and sp.zone or nil }
    if next(a) then
      for _, n in ipairs(t.names) do out[#out + 1] = { name = n, attrs = a } end
    end
  end
  for _, b in ipairs(devices) do
    local r = region_of[b.name] and regions[region_of[b.name]]
    if not r then
      book:note(("%s: no region for a simulator ARN (set AWS_REGION or give the backend a region)"):format(b.name))
    else
      stale(r.entry, "Braket prices in " .. r.region, r.entry_failed)
      local table_ = r.entry and r.entry.value or {}
      local key = M.device_key(b.attrs.device_arn)
      local p = key and table_[key]
      if p and (p.task or p.shot or p.minute) then
        local a = { cost_per_task = p.task, cost_per_shot = p.shot, cost_per_minute = p.minute,
                    price_time = r.entry.fetched }
        out[#out + 1] = { name = b.name, attrs = a }
      elseif r.entry and not r.entry_failed then
        book:note(("%s: no Braket price for device %q in %s"):format(b.name, key or "?", r.region))
      end
    end
  end
  return out, book.notes
end

return M
