-- qubits-per-dollar ranks quantum backends by qubits / cost_usd, most qubits
-- per dollar first.  A free backend (cost 0) ranks above all others.  Without
-- a tolerance it keeps every backend, reordered; qubits-per-dollar~10% keeps
-- those within 10% of the best ratio.
--
--   select-policy: "online-only, require:min_qubits=20, qubits-per-dollar~10%, min-queue"
return {
  name = "qubits-per-dollar",
  description = "rank by qubits / cost_usd, best first (~N% keeps the best-equivalent group)",
  args = false,
  tolerance = true,
  compile = function(stage, ctx)
    local tol = stage.tolerance
    return function(backends)
      local have, reasons, ratio = {}, {}, {}
      for _, b in ipairs(backends) do
        local q, c = b.attrs.qubits, b.attrs.cost_usd
        if type(q) == "number" and type(c) == "number" and c >= 0 then
          ratio[b] = c == 0 and math.huge or q / c
          have[#have + 1] = b
        else
          reasons[b.name] = "needs numeric qubits and cost_usd"
        end
      end
      if #have == 0 then ctx.fail("no candidate has both qubits and cost_usd") end
      ctx.sort(have, function(a, b) return ratio[a] > ratio[b] end)
      if not tol then return have, reasons end
      local best = ratio[have[1]]
      local band = tol.relative and tol.value * best or tol.value
      local keep = {}
      for _, b in ipairs(have) do
        if best - ratio[b] <= band then keep[#keep + 1] = b
        else reasons[b.name] = ("%.4g qubits per dollar, best is %.4g"):format(ratio[b], best) end
      end
      return keep, reasons
    end, { "qubits", "cost_usd" }
  end,
}
