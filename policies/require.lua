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
-- A backend without the attribute is dropped.  The conditions themselves
-- are ctx.condition (lua/fluence/policy_lib.lua), shared with prefer.
local function compile(stage, ctx)
  local checks, reads = {}, {}
  for _, item in ipairs(stage.args.items) do
    local f, attr = ctx.condition(item)
    checks[#checks + 1] = { f = f, attr = attr }
    reads[#reads + 1] = attr
  end
  local n = #checks
  local attr = ctx.attr                -- b.attrs[key], in one C call
  return function(backends)
    local keep, reasons = {}, {}
    for i = 1, #backends do            -- numeric loops: ipairs is a C call per element
      local b = backends[i]
      if b == nil then break end
      local ok = true
      for j = 1, n do
        local c = checks[j]
        local pass, why = c.f(attr(b, c.attr))
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
