-- region-order:A|B|... moves the backends whose `region` is A to the front,
-- then those in B, and so on; the others follow in their previous order.
-- Nothing is dropped, so it is a soft preference: put it before a ranker
-- with a tolerance, or last to break ties.
--
--   select-policy: "min-cost~10%, region-order:us-east-1|us-west-2"
return {
  name = "region-order",
  description = "region-order:A|B|...: backends in these regions first, in this order; drops none",
  args = "required",
  compile = function(stage, ctx)
    local items = stage.args.items
    if #items > 1 or items[1].key then ctx.error("expected regions separated by \"|\"", items[1].pos) end
    local rank = {}
    for i, v in ipairs(items[1].values) do rank[v.value] = rank[v.value] or i end
    local last = #items[1].values + 1
    return function(backends)
      local out = {}
      for i, b in ipairs(backends) do out[i] = b end
      ctx.sort(out, function(a, b)
        return (rank[a.attrs.region] or last) < (rank[b.attrs.region] or last)
      end)
      return out
    end, { "region" }
  end,
}
