-- exclude:NAME drops the named backend; exclude:a|b|c drops each of them.
-- Naming a backend that is not in the list is not an error.
return {
  name = "exclude",
  description = "exclude:A|B|...: drop the named backends",
  args = "required",
  compile = function(stage, ctx)
    local items = stage.args.items
    if #items > 1 or items[1].key then
      local bad = items[1].key and items[1] or items[2]
      ctx.error(("exclude takes backend names separated by \"|\", found %q"):format(bad.text), bad.pos)
    end
    local drop = {}
    for _, v in ipairs(items[1].values) do drop[v.value] = true end
    local why = ("excluded by %s"):format(ctx.brief(stage.text))   -- one reason, made once
    return function(backends)
      local keep, reasons = {}, {}
      for _, b in ipairs(backends) do
        if drop[b.name] then reasons[b.name] = why
        else keep[#keep + 1] = b end
      end
      return keep, reasons
    end, {}
  end,
}
