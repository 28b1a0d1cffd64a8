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
      if not t.f(b.attrs[t.attr]) then return false end
    end
    return true
  end

  return function(backends)
    for _, alt in ipairs(alts) do
      local kept, reasons = {}, {}
      for _, b in ipairs(backends) do
        if matches(alt, b) then kept[#kept + 1] = b
        else reasons[b.name] = ("not preferred (%s chose %s)"):format(stage.text, alt.text) end
      end
      if #kept > 0 then return kept, reasons end
    end
    return backends
  end, reads
end

return {
  name = "prefer",
  description = "prefer:A|B|...: narrow to the first alternative (a name, or tests like spot=true) still present, else pass through",
  args = "required",
  alternatives = true,   -- "|" between tests: ordered alternatives
  compile = compile,
}
