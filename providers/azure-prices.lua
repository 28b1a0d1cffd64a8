-- The "azure-prices" provider: today's Linux pay-as-you-go and Spot prices
-- of Azure VM sizes from the Azure Retail Prices API (no credentials), for
-- every backend whose attributes carry cloud = azure, instance_type (an ARM
-- SKU name: Standard_NC24ads_A100_v4) and region (an ARM region: eastus).
--
-- One query per (SKU, region), all at once, following NextPageLink:
--   GET {FLUENCE_AZURE_PRICES_URL or https://prices.azure.com/api/retail/prices}
--       ?api-version=2023-01-01-preview&$filter=serviceName eq 'Virtual Machines'
--        and armSkuName eq 'SKU' and armRegionName eq 'REGION' and priceType eq 'Consumption'
-- Of the rows: Windows ones (productName with " Windows" or " Win") and
-- unitPrice 0 (not a price: new SKUs are published at 0) are dropped, as are
-- Low Priority rows; a skuName or meterName ending in " Spot" is the Spot
-- price, any other the on-demand one; only USD rows per "1 Hour" count; the
-- lowest of each kind wins.
--
-- Fills price_per_hour, spot_price_per_hour, price_time and spot_price_time
-- (when fetched); cost_usd is the cost model's.  Prices are cached
-- (lua/fluence/prices.lua: FLUENCE_PRICE_TTL, Spot for a sixth of it);
-- --offline reads only the cache.  docs/pricing.md.
local M = {
  name = "azure-prices",
  family = "azure",
  live = true,
  provides = { "price_per_hour", "spot_price_per_hour", "cost_usd", "spot_cost_usd" },
  enriches = { "cloud=azure" },  -- only when some backend is an Azure one
  description = "live Azure VM prices, pay-as-you-go and Spot (Azure Retail Prices API, cached)",
}

M.URL = "https://prices.azure.com/api/retail/prices"
M.API_VERSION = "2023-01-01-preview"

-- OData string literal: quotes doubled.
local function lit(s) return "'" .. s:gsub("'", "''") .. "'" end

local function urlencode(s)
  return (s:gsub("[^%w%-%._~]", function(c) return ("%%%02X"):format(c:byte()) end))
end

function M.filter(sku, region)
  return ("serviceName eq 'Virtual Machines' and armSkuName eq %s and armRegionName eq %s and " ..
          "priceType eq 'Consumption'"):format(lit(sku), lit(region))
end

function M.first_url(base, sku, region)
  return ("%s?api-version=%s&$filter=%s"):format(base, M.API_VERSION, urlencode(M.filter(sku, region)))
end

-- The scheme and host of a URL, lowercased ("https://prices.azure.com").
local function origin(url)
  local o = url:match("^(%a[%w+.-]*://[^/?#]+)")
  return o and o:lower()
end

local function ends(s, tail) return type(s) == "string" and s:sub(-#tail) == tail end

-- The prices in one page's rows, into acc = { ondemand =, spot =, dropped = {why = n} }.
function M.rows(items, acc)
  for _, it in ipairs(items) do
    if type(it) == "table" then
      local price = tonumber(it.unitPrice or it.retailPrice)
      local product = type(it.productName) == "string" and it.productName or ""
      local why
      if product:find(" Windows", 1, true) or product:find(" Win", 1, true) then why = "Windows"
      elseif not price or price <= 0 then why = "priced 0"
      elseif ends(it.skuName, " Low Priority") or ends(it.meterName, " Low Priority") then why = "Low Priority"
      elseif it.type ~= nil and it.type ~= "Consumption" then why = tostring(it.type)
      elseif it.currencyCode ~= nil and it.currencyCode ~= "USD" then why = "not in USD"
      elseif it.unitOfMeasure ~= nil and it.unitOfMeasure ~= "1 Hour" then why = "per " .. tostring(it.unitOfMeasure)
      end
      if why then
        acc.dropped[why] = (acc.dropped[why] or 0) + 1
      else
        local kind = (ends(it.skuName, " Spot") or ends(it.meterName, " Spot")) and "spot" or "ondemand"
        if not acc[kind] or price < acc[kind] then acc[kind] = price end
      end
    end
  end
  return acc
end

function M.candidates(ctx)
  local api = ctx.api
  local P = api.prices
  local targets = P.targets(ctx.backends, "azure", { fills = "price_per_hour", by = M.name })
  if #targets == 0 then return {} end
  local book = P.book(M.name, ctx.options)
  local base = (api.env("FLUENCE_AZURE_PRICES_URL") or M.URL):gsub("/+$", "")
  local jobs = {}
  for _, t in ipairs(targets) do
    t.entry = book:get("vm/" .. t.key, book.spot_ttl)
    if not (t.entry and t.entry.fresh) and not book.offline then
      jobs[#jobs + 1] = { target = t, request = { url = M.first_url(base, t.instance_type, t.region),
                                                  headers = { Accept = "application/json" } },
                          acc = { dropped = {} }, seen = {} }
    end
  end
  if #jobs > 0 then
    local json = api.json
    P.fetch(jobs, {
      options = ctx.options,
      page = function(job, resp)
        local doc, err = json.decode(resp.body or "", "Azure Retail Prices answer")
        if type(doc) ~= "table" or type(doc.Items) ~= "table" then
          return nil, "unreadable answer: " .. tostring(err or "no Items")
        end
        M.rows(doc.Items, job.acc)
        local link = doc.NextPageLink
        if type(link) ~= "string" or link == "" then return "done", job.acc end
        -- a page may only lead to the same service, and never back
        if origin(link) ~= origin(base) then return nil, "NextPageLink leads to another host: not followed" end
        if job.seen[link] then return nil, "NextPageLink repeats a page: stopped" end
        job.seen[link] = true
        return "next", { url = link, headers = { Accept = "application/json" } }
      end,
      error_of = function(resp)
        local doc = json.decode(resp.body or "", "answer")
        local e = type(doc) == "table" and (doc.Error or doc.error) or nil
        if type(e) == "table" then return tostring(e.Code or e.code or "Error"), e.Message or e.message end
        return resp.status == 429 and "TooManyRequests" or "Error", nil
      end,
    })
    for _, j in ipairs(jobs) do
      local t = j.target
      if j.value then
        t.entry = book:put("vm/" .. t.key, { ondemand = j.value.ondemand, spot = j.value.spot })
      else
        t.entry = book:fallback(t.entry, t.instance_type .. " in " .. t.region, j.error)
        t.failed = true
      end
    end
  end
  local out = {}
  for _, t in ipairs(targets) do
    local e = t.entry
    if e and book.offline and not e.fresh then
      book:fallback(e, t.instance_type .. " in " .. t.region, "offline")
    elseif not e and book.offline then
      book:fallback(nil, t.instance_type .. " in " .. t.region, "offline, and nothing cached")
    end
    local v = e and e.value or {}
    if e and not t.failed and not v.ondemand and not v.spot then
      book:note(("%s in %s: no Linux price published"):format(t.instance_type, t.region))
    end
    local a = {
      price_per_hour = v.ondemand, spot_price_per_hour = v.spot,
      price_time = v.ondemand and e.fetched or nil, spot_price_time = v.spot and e.fetched or nil,
    }
    if next(a) then
      for _, n in ipairs(t.names) do out[#out + 1] = { name = n, attrs = a } end
    end
  end
  return out, book.notes
end

return M
