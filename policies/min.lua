-- min-ATTR: rank by a numeric attribute, smallest first, and keep the
-- best-equivalent group (within the tolerance of the best value).
--
--   min-cost            cost_usd; tolerance --cost-tol (as the Go client)
--   min-queue           queue_size; tolerance --cost-tol
--   min-qubits          any other attribute: exact ties only (tolerance 0)
--   min-cost~0.05       absolute tolerance for this stage
--   min-cost~5%         relative tolerance: within 5% of the best value
--
-- Backends without the attribute (or with a non-number) are dropped; when
-- none has it the selection fails, naming the backends that lack it.  The
-- ranking itself is ctx.rank (lua/fluence/policy_lib.lua), shared with
-- weighted and open to user plugins.
local function compile(stage, ctx)
  if not stage.suffix then ctx.error('policy "min" needs an attribute: min-ATTR') end
  local attr, guess = ctx.attribute(stage.suffix)
  if not attr then
    -- the policy is known: what is not is the attribute after "min-"
    ctx.error(("unknown attribute %q in %q (did you mean %q?)"):format(stage.suffix, stage.word, "min-" .. guess))
  end
  local band = ctx.tolerance(stage, attr, 0)
  return function(backends)
    return ctx.rank(backends, attr, { descending = false, tolerance = band })
  end, { attr }
end

return {
  name = "min",
  description = "min-ATTR: keep the backends with the lowest ATTR (within tolerance), lowest first",
  suffix = true,      -- written min-ATTR
  tolerance = true,   -- accepts ~N and ~N%
  args = false,
  compile = compile,
}
