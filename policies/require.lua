-- require:COND[,COND...] keeps the backends satisfying every condition.
--
--   require:min_qubits=10        Go client form: qubits >= 10
--   require:max_cost=8           Go client form: cost_usd <= 8
--   require:memory_gb>=24        comparisons: = != < <= > >=
--   require:region=us-east-1     strings compare for equality (= and != only)
--   require:region="us east"     quoted values
--   require:region=a|b           any of (=), none of (!=)
--   require:memory_gb>=24,throughput>100    several conditions, all must hold
--
-- `min_X=N` / `max_X=N` (with "=") are the Go client's spelling; any other
-- key is the attribute itself.  Aliases: cost = cost_usd, queue = queue_size.
-- A backend without the attribute is dropped.
local NUMERIC = { ["<"] = true, ["<="] = true, [">"] = true, [">="] = true }

local function compare(op, v, n)
  if op == "<" then return v < n elseif op == "<=" then return v <= n
  elseif op == ">" then return v > n else return v >= n end
end

local function condition(item, ctx)
  if not item.key then
    ctx.error(("expected a condition such as min_qubits=10 or memory_gb>=24, found %q"):format(item.text), item.pos)
  end
  local key, op = item.key, item.op
  local go = op == "=" and (key:match("^min_(.+)") or key:match("^max_(.+)"))
  local name = go or key
  local attr, guess = ctx.attribute(name)
  if not attr then
    ctx.error(("unknown attribute %q (did you mean %q?)"):format(name, guess),
              item.pos + (go and 4 or 0))
  end
  if go then op = key:sub(1, 4) == "min_" and ">=" or "<=" end
  local vals = item.values
  if NUMERIC[op] then
    if #vals > 1 then ctx.error(("%q compares with one number, not a list"):format(op), vals[2].pos - 1) end
    if not vals[1].number then
      ctx.error(("bad number %q"):format(vals[1].value), vals[1].pos)
    end
  end
  local n = vals[1].number
  local wants = go and item.text or (op .. " " .. item.text:match("[=<>!]+%s*(.*)$"))
  return function(v)
    if v == nil then return false, ("no attribute %q"):format(attr) end
    if NUMERIC[op] then
      if type(v) ~= "number" then return false, ("%s is %q, not a number"):format(attr, tostring(v)) end
      if compare(op, v, n) then return true end
      return false, ("%s %s, wants %s"):format(attr, ctx.num(v), go and (op .. " " .. ctx.num(n)) or wants)
    end
    local any = false
    for _, w in ipairs(vals) do
      if type(v) == "number" and w.number then any = any or v == w.number
      elseif type(v) == "string" then any = any or v == w.value end
    end
    if any == (op == "=") then return true end
    return false, ("%s %s, wants %s"):format(attr, type(v) == "string" and ("%q"):format(v) or ctx.num(v), wants)
  end, attr
end

local function compile(stage, ctx)
  local checks, reads = {}, {}
  for _, item in ipairs(stage.args.items) do
    local f, attr = condition(item, ctx)
    checks[#checks + 1] = { f = f, attr = attr }
    reads[#reads + 1] = attr
  end
  return function(backends)
    local keep, reasons = {}, {}
    for _, b in ipairs(backends) do
      local ok = true
      for _, c in ipairs(checks) do
        local pass, why = c.f(b.attrs[c.attr])
        if not pass then ok = false; reasons[b.name] = why; break end
      end
      if ok then keep[#keep + 1] = b end
    end
    return keep, reasons
  end, reads
end

return {
  name = "require",
  description = "require:COND,...: keep backends meeting every condition (min_X=N, max_X=N, X>=N, X=value, ...)",
  args = "required",
  compile = compile,
}
