-- weighted:A=W,B=W,... orders the backends by a weighted score: each
-- attribute is min-max normalised over the backends in the list (0 = lowest,
-- 1 = highest; all equal = 0), multiplied by its weight and summed.  Highest
-- score first; ties keep their order.  A negative weight prefers low values:
-- weighted:throughput=1,cost=-2.  Backends lacking an attribute are dropped.
-- With a tolerance (weighted~0.1:..., weighted~5%:...) only the backends
-- within it of the best score are kept; without one, all are kept, reordered.
return {
  name = "weighted",
  description = "weighted:A=W,...: order by a weighted sum of min-max normalised attributes",
  args = "required",
  tolerance = true,
  compile = function(stage, ctx)
    local terms, reads = {}, {}
    for _, item in ipairs(stage.args.items) do
      if not item.key or item.op ~= "=" then
        ctx.error(("expected ATTR=WEIGHT, found %q"):format(item.text), item.pos)
      end
      local attr, guess = ctx.attribute(item.key)
      if not attr then
        ctx.error(("unknown attribute %q (did you mean %q?)"):format(item.key, guess), item.pos)
      end
      local v = item.values[1]
      if #item.values > 1 or not v.number then
        ctx.error(("bad weight %q (expected a number)"):format(#item.values > 1 and item.text:match("=%s*(.*)$") or v.value), v.pos)
      end
      terms[#terms + 1] = { attr = attr, w = v.number }
      reads[#reads + 1] = attr
    end
    local band = ctx.tolerance(stage)     -- nil: keep all, only reorder
    local function score4(v) return ("%.4g"):format(v) end
    return function(backends)
      local have, reasons = {}, {}
      for _, b in ipairs(backends) do
        local ok = true
        for _, t in ipairs(terms) do
          if type(ctx.attr(b, t.attr)) ~= "number" then
            ok = false
            reasons[b.name] = ctx.reason.missing(t.attr)
            break
          end
        end
        if ok then have[#have + 1] = b end
      end
      if #have == 0 then
        local names = {}
        for _, t in ipairs(terms) do names[#names + 1] = t.attr end
        ctx.fail(("no candidate has every attribute of %s"):format(table.concat(names, ", ")))
      end
      local score = {}
      for _, b in ipairs(have) do score[b] = 0 end
      for _, t in ipairs(terms) do
        local lo, hi = math.huge, -math.huge
        for _, b in ipairs(have) do
          local v = ctx.attr(b, t.attr)
          if v < lo then lo = v end
          if v > hi then hi = v end
        end
        for _, b in ipairs(have) do
          local norm = hi > lo and (ctx.attr(b, t.attr) - lo) / (hi - lo) or 0
          score[b] = score[b] + t.w * norm
        end
      end
      local kept, why = ctx.rank(have, function(b) return score[b] end,
                                 { descending = true, tolerance = band, label = "score", format = score4 })
      for name, r in pairs(why) do reasons[name] = r end
      return kept, reasons
    end, reads
  end,
}
