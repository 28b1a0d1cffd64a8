-- gang-budget:N keeps the backends on which the whole gang costs at most N:
-- cost_usd (per pod, per hour) times the number of pods in the group.
--
--   select-policy: "gang-budget:4,max-throughput"
--
-- A user policy: put it in a directory given with --policy-dir (or in
-- ~/.fluence/policies/, or a directory of FLUENCE_POLICY_PATH).  The file
-- name must be the policy name.  It runs sandboxed, with no I/O.
local function compile(stage, ctx)
  local items = stage.args.items
  local budget = #items == 1 and not items[1].key and #items[1].values == 1 and items[1].values[1].number
  if not budget or budget < 0 then
    -- a located error: fluence prints the policy text with a caret here
    ctx.error("gang-budget takes one non-negative number, e.g. gang-budget:10", stage.args.pos)
  end
  return function(backends, request)
    local pods = request.pods or 1
    local keep, reasons = {}, {}
    for _, b in ipairs(backends) do
      local cost = b.attrs.cost_usd
      if type(cost) ~= "number" then
        reasons[b.name] = "no attribute \"cost_usd\""
      elseif cost * pods > budget then
        reasons[b.name] = ("%d pods x %s = %s, over the budget of %s")
          :format(pods, ctx.num(cost), ctx.num(cost * pods), ctx.num(budget))
      else
        keep[#keep + 1] = b
      end
    end
    return keep, reasons
  end, { "cost_usd" }       -- the attributes it reads (for providers and explain)
end

return {
  name = "gang-budget",
  description = "gang-budget:N: keep backends where cost_usd x pods in the group <= N",
  args = "required",
  compile = compile,
}
