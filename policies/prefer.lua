-- prefer:NAME narrows the list to NAME when it is still there, else passes the
-- list through unchanged (the Go client's behaviour).  prefer:a|b|c tries a,
-- then b, then c: the first one present wins.
return {
  name = "prefer",
  description = "prefer:A|B|...: narrow to the first named backend still present, else pass through",
  args = "required",
  compile = function(stage, ctx)
    local items = stage.args.items
    if #items > 1 or items[1].key then
      local bad = items[1].key and items[1] or items[2]
      ctx.error(("prefer takes backend names separated by \"|\", found %q"):format(bad.text), bad.pos)
    end
    local names = {}
    for i, v in ipairs(items[1].values) do names[i] = v.value end
    return function(backends)
      for _, want in ipairs(names) do
        for _, b in ipairs(backends) do
          if b.name == want then
            local reasons = {}
            for _, o in ipairs(backends) do
              if o ~= b then reasons[o.name] = ("not preferred (%s chose %s)"):format(stage.text, want) end
            end
            return { b }, reasons
          end
        end
      end
      return backends
    end, {}
  end,
}
