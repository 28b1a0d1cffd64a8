-- within-budget:usd=N keeps the backends whose cost for the whole request
-- (cost_usd per pod times the number of pods) is at most N dollars.
--
--   select-policy: "within-budget:usd=5, min-queue"
--
-- Copy to ~/.fluence/policies/ or pass --policy-dir examples/policies.
return {
  name = "within-budget",
  description = "within-budget:usd=N: keep backends whose cost_usd x pods is at most N",
  args = "required",
  compile = function(stage, ctx)
    local item = stage.args.items[1]
    if #stage.args.items > 1 or item.key ~= "usd" or item.op ~= "=" then
      ctx.error("expected usd=N", item.pos)
    end
    local limit = item.values[1].number
    if not limit then ctx.error(("bad number %q"):format(item.values[1].value), item.values[1].pos) end
    return function(backends, request)
      local pods = request.pods or 1
      local keep, reasons = {}, {}
      for _, b in ipairs(backends) do
        local cost = b.attrs.cost_usd
        if type(cost) ~= "number" then
          reasons[b.name] = "no attribute \"cost_usd\""
        elseif cost * pods > limit then
          reasons[b.name] = ("costs %s for %d pod%s, over the budget of %s"):format(
            ctx.num(cost * pods), pods, pods == 1 and "" or "s", ctx.num(limit))
        else
          keep[#keep + 1] = b
        end
      end
      return keep, reasons
    end, { "cost_usd" }
  end,
}
