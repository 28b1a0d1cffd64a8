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
-- none has it the selection fails, naming the backends that lack it.
local DIRECTION = "min"

local function compile(stage, ctx)
  local word = stage.suffix
  if not word then ctx.error(("policy %q needs an attribute: %s-ATTR"):format(DIRECTION, DIRECTION)) end
  local attr, guess = ctx.attribute(word)
  if not attr then
    ctx.error(("unknown policy %q (did you mean %q?)"):format(stage.word, DIRECTION .. "-" .. guess))
  end
  local tol, relative, toltext = 0, false, nil
  if stage.tolerance then
    toltext = stage.tolerance.text
    tol, relative = stage.tolerance.value, stage.tolerance.relative
    if tol < 0 then ctx.error("tolerance must not be negative", stage.tolerance.pos) end
  elseif attr == "cost_usd" or attr == "queue_size" then
    tol = ctx.cost_tol
  end
  local name = stage.text
  local ascend = DIRECTION == "min"

  return function(backends)
    local have, missing, reasons = {}, {}, {}
    for _, b in ipairs(backends) do
      local v = b.attrs[attr]
      if type(v) == "number" and v == v then
        have[#have + 1] = b
      else
        missing[#missing + 1] = b.name
        reasons[b.name] = ("no attribute %q"):format(attr)
      end
    end
    if #have == 0 then
      ctx.fail(("no candidate has attribute %q (missing: %s)"):format(attr, table.concat(missing, ", ")))
    end
    ctx.sort_by(have, function(b) return b.attrs[attr] end, not ascend)
    local best = have[1].attrs[attr]
    local band = relative and tol * math.abs(best) or tol
    local keep = {}
    for _, b in ipairs(have) do
      local v = b.attrs[attr]
      if math.abs(v - best) <= band then
        keep[#keep + 1] = b
      else
        reasons[b.name] = ("%s %s is not within %s of the best (%s)")
          :format(attr, ctx.num(v), toltext or ctx.num(tol), ctx.num(best))
      end
    end
    return keep, reasons
  end, { attr }
end

return {
  name = DIRECTION,
  description = "min-ATTR: keep the backends with the lowest ATTR (within tolerance), lowest first",
  suffix = true,      -- written min-ATTR
  tolerance = true,   -- accepts ~N and ~N%
  args = false,
  compile = compile,
}
