-- max-ATTR: rank by a numeric attribute, largest first, and keep the
-- best-equivalent group (within the tolerance of the best value).
--
--   max-cost            cost_usd; tolerance --cost-tol (as the Go client)
--   max-queue           queue_size; tolerance --cost-tol
--   max-qubits          any other attribute: exact ties only (tolerance 0)
--   max-cost~0.05       absolute tolerance for this stage
--   max-cost~5%         relative tolerance: within 5% of the best value
--
-- Backends without the attribute (or with a non-number) are dropped; when
-- none has it the selection fails, naming the backends that lack it.  The
-- ranking itself is ctx.rank (lua/fluence/policy_lib.lua), shared with
-- weighted and open to user plugins.
local function compile(stage, ctx)
  if not stage.suffix then ctx.error('policy "max" needs an attribute: max-ATTR') end
  local attr, guess = ctx.attribute(stage.suffix)
  if not attr then
    -- the policy is known: what is not is the attribute after "max-"
    ctx.error(("unknown attribute %q in %q (did you mean %q?)"):format(stage.suffix, stage.word, "max-" .. guess))
  end
  local band = ctx.tolerance(stage, attr, 0)
  return function(backends)
    return ctx.rank(backends, attr, { descending = true, tolerance = band })
  end, { attr }
end

return {
  name = "max",
  description = "max-ATTR: keep the backends with the highest ATTR (within tolerance), highest first",
  suffix = true,      -- written max-ATTR
  tolerance = true,   -- accepts ~N and ~N%
  args = false,
  compile = compile,
}
