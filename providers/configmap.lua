-- The "configmap" provider: the backends the cluster's Fluence scheduler
-- offers (ConfigMap fluence-resources, see lua/fluence/offerings.lua), with
-- their resolved attributes, so cluster-published prices can drive min-cost.
--
-- Numeric strings are numbers already.  Price attributes give cost_usd for
-- the request's shots (select-shots, else 1000), with the same rule as the
-- file provider (the Go client's attribute file):
--
--   cost_usd = price_per_task + shots * price_per_shot   (either given; wins
--                                                          over a cost_usd attribute)
--   cost_usd = 0.05 * price_per_minute                   (price_per_min too;
--                                                          only when cost_usd is unknown)
--   cost_usd = 0.05 * price_per_hour / 60                (likewise)
--
-- cost_per_task / cost_per_shot / cost_per_minute are accepted as aliases.
-- When the ConfigMap cannot be read (or --offline) it returns no backends; the
-- selection says why in its notes (once, not once per provider).
local M = {
  name = "configmap",
  description = "backends and prices the cluster publishes in the fluence-resources ConfigMap",
}

local function num(a, ...)
  for _, k in ipairs{ ... } do
    if type(a[k]) == "number" then return a[k] end
  end
  return nil
end

function M.cost(a, shots)
  local task = num(a, "price_per_task", "cost_per_task")
  local shot = num(a, "price_per_shot", "cost_per_shot")
  if task or shot then return (task or 0) + shots * (shot or 0) end
  if type(a.cost_usd) == "number" then return a.cost_usd end
  local minute = num(a, "price_per_minute", "price_per_min", "cost_per_minute")
  if minute then return 0.05 * minute end
  local hour = num(a, "price_per_hour", "cost_per_hour")
  if hour then return 0.05 * hour / 60 end
  return nil
end

function M.candidates(ctx)
  local get = ctx.api.cluster and ctx.api.cluster.offerings
  if not get then return {}, { { text = "configmap: the cluster's offerings are not available here", run = true } } end
  local offered = get()
  if not offered then return {} end      -- the selection notes why, once
  local shots = (ctx.request and tonumber(ctx.request.shots)) or 1000
  local out = {}
  for _, b in ipairs(offered.backends or {}) do
    local attrs = {}
    for k, v in pairs(b.attrs or {}) do attrs[k] = v end
    attrs.cost_usd = M.cost(attrs, shots)
    out[#out + 1] = { name = b.name, attrs = attrs }
  end
  return out
end

return M
