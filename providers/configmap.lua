-- The "configmap" provider: the backends the cluster's Fluence scheduler
-- offers (ConfigMap fluence-resources, see lua/fluence/offerings.lua), with
-- their resolved attributes, so cluster-published prices can drive min-cost.
--
-- Numeric strings are numbers already.  Prices are read in the cost model's
-- units (lua/fluence/cost.lua, docs/pricing.md), under these names or their
-- aliases (an alias is copied to the model's name when that one is absent):
--
--   cost_per_task  (price_per_task)       USD per quantum task
--   cost_per_shot  (price_per_shot)       USD per shot
--   cost_per_minute (price_per_minute, price_per_min)   USD per simulator minute
--   price_per_hour (cost_per_hour)        USD per instance-hour
--   price_per_gpu_hour                    USD per GPU-hour
--
-- A task or shot price gives cost_usd = task + shots * shot here (it wins
-- over a cost_usd attribute, as in the Go client's attribute file); a
-- cost_usd attribute is kept as given; anything else priced gets its
-- cost_usd from the cost model once every provider ran (an hourly price:
-- x pods x the workload's duration).
-- When the ConfigMap cannot be read (or --offline) it returns no backends; the
-- selection says why in its notes (once, not once per provider).
local M = {
  name = "configmap",
  description = "backends and prices the cluster publishes in the fluence-resources ConfigMap",
}

M.ALIASES = {            -- in order: the first alias given fills the name
  { "price_per_task", "cost_per_task" }, { "price_per_shot", "cost_per_shot" },
  { "price_per_minute", "cost_per_minute" }, { "price_per_min", "cost_per_minute" },
  { "cost_per_hour", "price_per_hour" },
}

-- attrs with the model's names filled from their aliases, and the task/shot
-- rule applied (api: ctx.api, for the cost model's formula)
function M.prices(attrs, shots, api)
  for _, pair in ipairs(M.ALIASES) do
    local alias, name = pair[1], pair[2]
    if attrs[name] == nil and type(attrs[alias]) == "number" then attrs[name] = attrs[alias] end
  end
  local task, shot = attrs.cost_per_task, attrs.cost_per_shot
  task, shot = type(task) == "number" and task or nil, type(shot) == "number" and shot or nil
  if task or shot then attrs.cost_usd = api.cost.per_task(task, shot, shots) end
  return attrs
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
    M.prices(attrs, shots, ctx.api)
    out[#out + 1] = { name = b.name, attrs = attrs }
  end
  return out
end

return M
