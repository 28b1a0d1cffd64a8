-- qubits-per-dollar ranks quantum backends by qubits / cost_usd, most qubits
-- per dollar first.  A free backend (cost 0) ranks above all others.  Without
-- a tolerance it keeps every backend, reordered; qubits-per-dollar~10% keeps
-- those within 10% of the best ratio.  The ranking, the band and the drop
-- reasons are ctx.rank's (docs/plugins.md), as in the built-in min/max.
--
--   select-policy: "online-only, require:min_qubits=20, qubits-per-dollar~10%, min-queue"
return {
  name = "qubits-per-dollar",
  description = "rank by qubits / cost_usd, best first (~N% keeps the best-equivalent group)",
  args = false,
  tolerance = true,
  compile = function(stage, ctx)
    local band = ctx.tolerance(stage)      -- nil without ~N: keep all, reordered
    local function ratio(b)
      local q, c = b.attrs.qubits, b.attrs.cost_usd
      if type(q) ~= "number" or type(c) ~= "number" or c < 0 then return nil end
      return c == 0 and math.huge or q / c
    end
    return function(backends)
      return ctx.rank(backends, ratio, { descending = true, tolerance = band, label = "qubits per dollar",
                                         format = function(v) return ("%.4g"):format(v) end,
                                         missing = "needs numeric qubits and cost_usd",
                                         none = "no candidate has both qubits and cost_usd" })
    end, { "qubits", "cost_usd" }
  end,
}
