-- prefer:A|B|... narrows the list to the first alternative still present,
-- else passes the list through unchanged (the Go client's prefer:NAME).
-- An alternative is a backend name, or attribute tests (ctx.condition, as in
-- require) that keep every backend passing them:
--
--   prefer:gpu-l4                        that backend, if it is still there
--   prefer:a|b|c                         a, else b, else c
--   prefer:spot=true                     the spot backends, if any
--   prefer:region=us-east-1|region=eu-west-2   us-east-1 ones, else eu-west-2 ones
--   prefer:region=us-east-1,spot=true|gpu_gb>=40   (both tests) else the big GPUs
--   prefer:a|region=eu-west-2            a, else the eu-west-2 ones
--
-- "|" followed by ATTR OP starts another alternative; after a test, "|"
-- followed by a plain word is another value of that test (region=a|b: either
-- region, one alternative), so write names before tests.
local function compile(stage, ctx)
  local items = stage.args.items
  local alts, reads = {}, {}
  local first = items[1]
  local i = 1
  if not first.key then
    for _, v in ipairs(first.values) do alts[#alts + 1] = { name = v.value, text = v.value } end
    i = 2
    if items[2] and items[2].sep == "," then
      ctx.error(("prefer takes backend names or tests separated by \"|\", found %q"):format(items[2].text), items[2].pos)
    end
  end
  for j = i, #items do
    local it = items[j]
    local f, attr = ctx.condition(it)
    reads[#reads + 1] = attr
    local alt = alts[#alts]
    if it.sep ~= "," or not alt or alt.name then
      alt = { tests = {}, texts = {} }
      alts[#alts + 1] = alt
    end
    alt.tests[#alt.tests + 1] = { f = f, attr = attr }
    alt.texts[#alt.texts + 1] = it.text
  end
  for _, a in ipairs(alts) do
    if a.tests then a.text = table.concat(a.texts, ",") end
  end

  local function matches(alt, b)
    if alt.name then return b.name == alt.name end
    for _, t in ipairs(alt.tests) do
      if not t.f(ctx.attr(b, t.attr)) then return false end
    end
    return true
  end

  -- Linear in the alternatives and the backends: the names present are
  -- looked up, not searched for once per alternative, and the one reason
  -- (quoting the stage briefly) is made once, for the alternative chosen.
  -- (Each alternative used to format a reason quoting the whole stage for
  -- every backend: a 339 KB prefer took 24 s.)
  return function(backends)
    local present, chosen = {}, nil
    for i = 1, #backends do present[backends[i].name] = true end
    for _, alt in ipairs(alts) do
      if alt.name then
        if present[alt.name] then chosen = alt break end
      else
        for i = 1, #backends do
          if matches(alt, backends[i]) then chosen = alt break end
        end
        if chosen then break end
      end
    end
    if not chosen then return backends end
    local why = ("not preferred (%s chose %s)"):format(ctx.brief(stage.text), ctx.brief(chosen.text))
    local kept, reasons = {}, {}
    for i = 1, #backends do
      local b = backends[i]
      if matches(chosen, b) then kept[#kept + 1] = b else reasons[b.name] = why end
    end
    return kept, reasons
  end, reads
end

return {
  name = "prefer",
  description = "prefer:A|B|...: narrow to the first alternative (a name, or tests like spot=true) still present, else pass through",
  args = "required",
  alternatives = true,   -- "|" between tests: ordered alternatives
  compile = compile,
}
