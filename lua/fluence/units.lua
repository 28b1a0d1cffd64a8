-- The price attributes and their units: the one declaration the cost model
-- (fluence.cost), explain, the providers and docs/pricing.md follow.  Kept
-- apart from the model so a run can ask whether any backend is priced
-- without loading it.
--
--   units.PRICES    { {attr, unit, kind, spot, time}, ... }
--                   kind: the part of the model that reads it (task, minute,
--                   hour, gpu_hour); spot: a spot/preemptible price (it makes
--                   spot_cost_usd); time: the attribute holding when it was
--                   fetched
--   units.UNIT      { attr = unit }
--   units.priced(names) -> true when a set of attribute names holds a price
local units = {}

units.PRICES = {
  { attr = "cost_per_task", unit = "USD/task", kind = "task", time = "price_time" },
  { attr = "cost_per_shot", unit = "USD/shot", kind = "task", time = "price_time" },
  { attr = "cost_per_minute", unit = "USD/minute", kind = "minute", time = "price_time" },
  { attr = "price_per_hour", unit = "USD/hour", kind = "hour", time = "price_time" },
  { attr = "price_per_gpu_hour", unit = "USD/GPU-hour", kind = "gpu_hour", time = "price_time" },
  { attr = "spot_price_per_hour", unit = "USD/hour", kind = "hour", spot = true, time = "spot_price_time" },
  { attr = "spot_price_per_gpu_hour", unit = "USD/GPU-hour", kind = "gpu_hour", spot = true,
    time = "spot_price_time" },
}
units.UNIT = {}
for _, p in ipairs(units.PRICES) do units.UNIT[p.attr] = p.unit end

function units.priced(names)
  for a in pairs(names) do
    if units.UNIT[a] then return true end
  end
  return false
end

return units
