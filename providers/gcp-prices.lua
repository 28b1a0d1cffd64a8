-- The "gcp-prices" provider: today's on-demand and Spot (preemptible) prices
-- of Google Cloud GPUs from the Cloud Billing Catalog API, for every backend
-- whose attributes carry cloud = gcp, instance_type (a GPU name:
-- nvidia-tesla-a100, nvidia-l4, nvidia-h100-80gb) and region (us-central1).
--
-- GCP prices a VM by parts: vCPUs, memory and each GPU.  This provider gives
-- the GPU's part only, per GPU-hour (price_per_gpu_hour,
-- spot_price_per_gpu_hour): the host VM is NOT included, and every backend
-- it prices carries price_note saying so (explain shows it).  The cost model
-- multiplies by the GPUs each pod asks for (nvidia.com/gpu, at least 1).
--
--   GET {FLUENCE_GCP_BILLING_URL or https://cloudbilling.googleapis.com}
--       /v1/services/6F81-5844-456A/skus?key=KEY&pageSize=5000[&pageToken=...]
-- (6F81-5844-456A: Compute Engine), every page until nextPageToken is empty.
-- The API key: FLUENCE_GCP_API_KEY, else GOOGLE_API_KEY; it never appears in
-- a message (URLs are shown without their query).  A SKU is a GPU's when its
-- category.resourceGroup is GPU; usageType OnDemand or Preemptible; its
-- description names the model between "Nvidia" and "GPU" ("Nvidia Tesla
-- A100 80GB GPU running in Americas": a100 80gb, matching
-- nvidia-a100-80gb; "Tesla" and the "nvidia-"/"tesla-" prefixes are
-- ignored, the rest must be the same words); serviceRegions lists the
-- regions; price = units + nanos / 1e9 of the first tier, USD per "h".
-- The GPU SKUs of the whole catalog are cached as one entry, for the Spot
-- TTL (docs/pricing.md).
local M = {
  name = "gcp-prices",
  family = "gcp",
  live = true,
  provides = { "price_per_gpu_hour", "spot_price_per_gpu_hour", "cost_usd", "spot_cost_usd" },
  enriches = { "cloud=gcp" },    -- only when some backend is a Google Cloud one
  description = "live Google Cloud GPU prices, on-demand and Spot, GPU only (Cloud Billing Catalog, cached)",
}

M.URL = "https://cloudbilling.googleapis.com"
M.SERVICE = "6F81-5844-456A"
M.NOTE = "GPU only: the host VM (vCPUs, memory) is priced apart and not included"

local function str(v) return type(v) == "string" and v ~= "" and v or nil end

-- The words naming a GPU model, sorted: "nvidia-tesla-a100" -> "a100",
-- "Nvidia A100 80GB" -> "80gb a100".
local function words(list)
  local out = {}
  for _, w in ipairs(list) do
    w = w:lower()
    if w ~= "" and w ~= "nvidia" and w ~= "tesla" then out[#out + 1] = w end
  end
  table.sort(out)
  return table.concat(out, " ")
end

function M.model_of_name(name)
  local list = {}
  for w in tostring(name):gmatch("[^%-_%s]+") do list[#list + 1] = w end
  return words(list)
end

-- The model a SKU description names, or nil for one that names no GPU.
function M.model_of_description(desc)
  local inner = tostring(desc):match("^[Nn][Vv][Ii][Dd][Ii][Aa]%s+(.-)%s+GPU")
  if not inner then return nil end
  local list = {}
  for w in inner:gmatch("%S+") do list[#list + 1] = w end
  return words(list)
end

local USAGE = { OnDemand = "ondemand", Preemptible = "spot" }

-- One catalog page's GPU SKUs, reduced: { {model, kind, regions, usd}, ... }
function M.skus(items, acc)
  for _, s in ipairs(items) do
    local cat = type(s) == "table" and type(s.category) == "table" and s.category or {}
    local kind = USAGE[cat.usageType]
    local model = cat.resourceGroup == "GPU" and kind and M.model_of_description(s.description)
    local info = model and type(s.pricingInfo) == "table" and s.pricingInfo[1]
    local expr = type(info) == "table" and type(info.pricingExpression) == "table" and info.pricingExpression
    if expr and expr.usageUnit == "h" and type(expr.tieredRates) == "table" then
      local rate, start
      for _, r in ipairs(expr.tieredRates) do
        local at = tonumber(type(r) == "table" and r.startUsageAmount) or 0
        if type(r) == "table" and type(r.unitPrice) == "table" and (not start or at < start) then rate, start = r, at end
      end
      local up = rate and rate.unitPrice
      local usd = up and (tonumber(up.units) or 0) + (tonumber(up.nanos) or 0) / 1e9
      if usd and usd > 0 and (up.currencyCode == nil or up.currencyCode == "USD") then
        local regions = {}
        for _, r in ipairs(type(s.serviceRegions) == "table" and s.serviceRegions or {}) do
          if type(r) == "string" then regions[#regions + 1] = r end
        end
        acc[#acc + 1] = { model = model, kind = kind, regions = regions, usd = usd }
      end
    end
  end
  return acc
end

-- The lowest on-demand and Spot price of model in region.
function M.lookup(skus, model, region)
  local best = {}
  for _, s in ipairs(skus) do
    if s.model == model then
      for _, r in ipairs(s.regions or {}) do
        if r == region and (not best[s.kind] or s.usd < best[s.kind]) then best[s.kind] = s.usd end
      end
    end
  end
  return best.ondemand, best.spot
end

function M.candidates(ctx)
  local api = ctx.api
  local P = api.prices
  local targets = P.targets(ctx.backends, "gcp", { fills = "price_per_gpu_hour", by = M.name })
  if #targets == 0 then return {} end
  local book = P.book(M.name, ctx.options)
  local entry = book:get("gpu-skus", book.spot_ttl)
  local key = api.env("FLUENCE_GCP_API_KEY") or api.env("GOOGLE_API_KEY")
  local failed, unfetched = false, nil
  if book.offline then unfetched = "offline"
  elseif not key or key == "" then unfetched = "no API key (set FLUENCE_GCP_API_KEY or GOOGLE_API_KEY)" end
  if not (entry and entry.fresh) and not unfetched then
    local base = (api.env("FLUENCE_GCP_BILLING_URL") or M.URL):gsub("/+$", "")
    local function url(token)
      local u = ("%s/v1/services/%s/skus?key=%s&pageSize=5000"):format(base, M.SERVICE, (key:gsub("[^%w%-%._~]",
        function(c) return ("%%%02X"):format(c:byte()) end)))
      if token then u = u .. "&pageToken=" .. token:gsub("[^%w%-%._~]", function(c) return ("%%%02X"):format(c:byte()) end) end
      return u
    end
    local job = { request = { url = url(), headers = { Accept = "application/json" } }, skus = {}, seen = {} }
    local json = api.json
    P.fetch({ job }, {
      options = ctx.options,
      redact = function(s) return (s:gsub(key:gsub("%p", "%%%0"), "[redacted]")) end,
      page = function(j, resp)
        local doc, err = json.decode(resp.body or "", "Cloud Billing answer")
        if type(doc) ~= "table" then return nil, "unreadable answer: " .. tostring(err) end
        M.skus(type(doc.skus) == "table" and doc.skus or {}, j.skus)
        local token = str(doc.nextPageToken)
        if not token then return "done", { skus = j.skus } end
        if j.seen[token] then return nil, "nextPageToken repeats a page: stopped" end
        j.seen[token] = true
        return "next", { url = url(token), headers = { Accept = "application/json" } }
      end,
      error_of = function(resp)
        local doc = json.decode(resp.body or "", "answer")
        local e = type(doc) == "table" and type(doc.error) == "table" and doc.error or {}
        return tostring(e.status or (resp.status == 429 and "RESOURCE_EXHAUSTED" or "Error")), e.message
      end,
    })
    if job.value then entry = book:put("gpu-skus", job.value)
    else entry = book:fallback(entry, "the GPU catalog", job.error); failed = true end
  elseif unfetched and not (entry and entry.fresh) then
    entry = book:fallback(entry, "the GPU catalog", entry and unfetched or unfetched .. ", and nothing cached")
  end
  local skus = entry and entry.value and entry.value.skus or {}
  local out = {}
  for _, t in ipairs(targets) do
    local model = M.model_of_name(t.instance_type)
    local od, spot = M.lookup(skus, model, t.region)
    if od or spot then
      book:note(M.NOTE, true)
      local a = { price_per_gpu_hour = od, spot_price_per_gpu_hour = spot,
                  price_time = od and entry.fetched or nil, spot_price_time = spot and entry.fetched or nil,
                  price_note = M.NOTE }
      for _, n in ipairs(t.names) do out[#out + 1] = { name = n, attrs = a } end
    elseif entry and not failed then
      book:note(("%s in %s: no GPU price in the catalog (model %q)"):format(t.instance_type, t.region, model))
    end
  end
  return out, book.notes
end

return M
