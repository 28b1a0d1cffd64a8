-- The helper library policy plugins get through `ctx` (docs/plugins.md):
-- ranking with a tolerance band and the wording of drop reasons, so a
-- plugin that ranks (the built-in min/max/weighted, a user's own) does not
-- copy forty lines and drift.  Everything here runs inside the calling
-- plugin's sandbox budget and sees only what the plugin hands it.
--
--   policy_lib.extend(ctx, { cost_tol = band, fail = f,
--                            sort_by = f, num = f })
--
-- adds to ctx:
--   ctx.tolerance(stage [, attr [, default]]) -> band | default
--   ctx.rank(backends, key [, opts])          -> kept, reasons
--   ctx.condition(item)                       -> test, attr (require's
--                                                conditions: min_X=N, X>=N, X=a|b)
--   ctx.value(v)                              -> v as shown in a reason
--   ctx.brief(text)                           -> text, or its start when long
--   ctx.reason.missing(attr), ctx.reason.band(label, v, band, best [, fmt]),
--   ctx.reason.wants(attr, v, wants)
-- where band = { value = N, relative = bool, text = "5%" | "0.05" }.
local policy_lib = {}
local by_keys = require("fluence.order").by_keys
local brief = require("fluence.errors").brief

-- What the Go client's --cost-tol applies to: the cost and queue rankers.
policy_lib.COST_TOL_ATTRS = { cost_usd = true, queue_size = true }

-- A band from --cost-tol's value: nil (0), a number (absolute), a string as
-- the command line takes it ("0.5" absolute, "5%" relative to the best
-- value), or a band already.  nil, message for anything else.
function policy_lib.band(v, num)
  num = num or tostring
  if v == nil then return { value = 0, relative = false, text = "0" } end
  if type(v) == "table" then return v end
  if type(v) == "number" then
    if v ~= v or v < 0 or v == math.huge then return nil, ("bad tolerance %s"):format(tostring(v)) end
    return { value = v, relative = false, text = num(v) }
  end
  local digits, pct = tostring(v):match("^([%d%.eE+%-]+)(%%?)$")
  local n = digits and tonumber(digits)
  if not n or n ~= n or n < 0 or n == math.huge then
    return nil, ("bad tolerance %q (expected a number like 0.05 or 5%%)"):format(tostring(v))
  end
  if pct == "%" then return { value = n / 100, relative = true, text = v } end
  return { value = n, relative = false, text = num(n) }
end

local NUMERIC = { ["<"] = true, ["<="] = true, [">"] = true, [">="] = true }

-- f(v) remembered per distinct value: a pool of 10,000 backends has few
-- distinct values, and formatting each reason again was most of a stage.
-- Integers and floats apart (1 and 1.0 are one table key, but 1e15 and
-- 10^15 are written differently); NaN is never a key.  f must be pure.
local function memo(f)
  local by = { integer = {}, float = {}, other = {} }
  return function(v)
    if v ~= v then return f(v) end
    local t = by[math.type(v) or "other"]
    local r = t[v]
    if r == nil then
      r = f(v)
      t[v] = r
    end
    return r
  end
end
policy_lib.memo = memo

local function compare(op, v, n)
  if op == "<" then return v < n elseif op == "<=" then return v <= n
  elseif op == ">" then return v > n else return v >= n end
end

-- Does value v lie within the band of the best value?
local function within(v, best, band)
  local width = band.relative and band.value * math.abs(best) or band.value
  return math.abs(v - best) <= width
end
policy_lib.within = within

function policy_lib.extend(ctx, host)
  local num = host.num
  local cost_tol = host.cost_tol

  local reason = {}
  function reason.missing(attr) return ("no attribute %q"):format(attr) end
  function reason.band(label, v, band, best, fmt)
    fmt = fmt or num
    return ("%s %s is not within %s of the best (%s)"):format(label, fmt(v), band.text, fmt(best))
  end
  function reason.wants(attr, v, wants)
    return ("%s %s, wants %s"):format(attr, ctx.value(v), wants)
  end
  ctx.reason = reason

  ctx.brief = brief           -- errors.brief: a long policy text quoted by its start

  -- an attribute value as a reason shows it: 24, 0.3, "ONLINE"
  function ctx.value(v)
    if type(v) == "number" then return num(v) end
    if type(v) == "string" then return ("%q"):format(v) end
    return tostring(v)
  end

  -- The band a stage ranks with: its own ~N / ~N% when written (negative is
  -- a compile error at the tolerance), else --cost-tol for the attributes
  -- the Go client applied it to (cost_usd, queue_size), else `default`
  -- (a number gives an absolute band; nil means "no band").
  function ctx.tolerance(stage, attr, default)
    local t = stage and stage.tolerance
    if t then
      if t.value < 0 then ctx.error("tolerance must not be negative", t.pos) end
      return { value = t.value, relative = t.relative, text = t.text }
    end
    if attr and policy_lib.COST_TOL_ATTRS[attr] then
      return { value = cost_tol.value, relative = cost_tol.relative, text = cost_tol.text }
    end
    if type(default) == "number" then return { value = default, relative = false, text = num(default) } end
    return default
  end

  -- condition(item) -> test, attr: a parsed argument `KEY OP VALUES` as a
  -- test of one attribute value: test(v) -> true | false, reason.
  --   min_X=N / max_X=N   the Go client's X >= N / X <= N
  --   X>=N X>N X<=N X<N   numbers
  --   X=V, X!=V           equality: numbers as numbers, strings exactly,
  --                       booleans as true/false; X=a|b any of, X!=a|b none of
  -- Compile errors (ctx.error) at the offending position; aliases apply.
  function ctx.condition(item)
    if not item.key then
      ctx.error(("expected a condition such as min_qubits=10 or memory_gb>=24, found %q"):format(item.text), item.pos)
    end
    local key, op = item.key, item.op
    local go = op == "=" and (key:match("^min_(.+)") or key:match("^max_(.+)"))
    local name = go or key
    local attr, guess = ctx.attribute(name)
    if not attr then
      ctx.error(("unknown attribute %q (did you mean %q?)"):format(name, guess), item.pos + (go and 4 or 0))
    end
    if go then op = key:sub(1, 4) == "min_" and ">=" or "<=" end
    local vals = item.values
    if NUMERIC[op] then
      if #vals > 1 then ctx.error(("%q compares with one number, not a list"):format(op), vals[2].pos - 1) end
      if not vals[1].number then ctx.error(("bad number %q"):format(vals[1].value), vals[1].pos) end
    end
    local n = vals[1].number
    local wants = go and (op .. " " .. num(n)) or (op .. " " .. brief(item.text:match("[=<>!]+%s*(.*)$")))
    local numeric, eq = NUMERIC[op], op == "="
    local missing = reason.missing(attr)
    local wants_reason = memo(function(v) return reason.wants(attr, v, wants) end)
    -- X=a|b|...: the values as sets, looked up once per backend (a loop
    -- over them made a stage cost backends x values)
    local nums, strs, bools = {}, {}, {}
    for i = 1, #vals do
      local w = vals[i]
      if w.number then nums[w.number] = true end
      strs[w.value] = true
      if not w.quoted then bools[w.value] = true end
    end
    return function(v)
      if v == nil then return false, missing end
      local tv = type(v)
      if numeric then
        if tv ~= "number" then return false, ("%s is %q, not a number"):format(attr, tostring(v)) end
        if compare(op, v, n) then return true end
        return false, wants_reason(v)
      end
      local any
      if tv == "number" then any = v == v and nums[v] == true
      elseif tv == "string" then any = strs[v] == true
      elseif tv == "boolean" then any = bools[tostring(v)] == true
      else any = false end
      if any == eq then return true end
      return false, wants_reason(v)
    end, attr
  end

  -- rank(backends, key, opts) -> kept, reasons
  --   key: an attribute name, or function(backend) -> number | nil
  --   opts.descending: largest first (default: smallest first)
  --   opts.tolerance:  a band; keep the best-equivalent group within it of
  --                    the best value.  nil: keep every ranked backend.
  --   opts.label:      what the value is called in reasons (default: key,
  --                    or "value" for a function)
  --   opts.format:     how values are written in reasons (default ctx.num)
  -- Backends without a number (NaN counts as none) are dropped with
  -- `no attribute "KEY"` (or opts.missing); when none has one the selection
  -- fails (`no candidate has attribute "KEY" (missing: a, b)`, or opts.none).
  -- The sort is stable: equal values keep their order.
  function ctx.rank(backends, key, opts)
    opts = opts or {}
    local get = key
    if type(key) == "string" then
      local attr = ctx.attr or function(b, k) return b.attrs[k] end
      get = function(b) return attr(b, key) end
    end
    local label = opts.label or (type(key) == "string" and key or "value")
    local have, missing, reasons, values = {}, {}, {}, {}
    local why_missing = opts.missing or reason.missing(label)
    for i = 1, #backends do          -- as ipairs, without a C call per backend
      local b = backends[i]
      if b == nil then break end
      local v = get(b)
      if type(v) == "number" and v == v then
        local n = #have + 1
        have[n], values[n] = b, v
      else
        missing[#missing + 1] = b.name
        reasons[b.name] = why_missing
      end
    end
    if #have == 0 then
      host.fail(opts.none or ("no candidate has attribute %q (missing: %s)")
        :format(label, table.concat(missing, ", ")))
    end
    -- in C when it can (fluence.order: values and backends sorted together),
    -- else the host's sort_by: the same order either way
    if not by_keys(have, values, #have, opts.descending, true) then
      local value = {}
      for i, b in ipairs(have) do value[b] = values[i] end
      host.sort_by(have, function(b) return value[b] end, opts.descending)
      for i, b in ipairs(have) do values[i] = value[b] end
    end
    local band = opts.tolerance
    if not band then return have, reasons end
    local best = values[1]
    local keep = {}
    local width = band.relative and band.value * math.abs(best) or band.value    -- as within() has it
    local band_reason = function(v) return reason.band(label, v, band, best, opts.format) end
    if opts.format == nil then band_reason = memo(band_reason) end               -- num is pure
    local abs = math.abs
    for i = 1, #have do
      local b, v = have[i], values[i]
      if abs(v - best) <= width then
        keep[#keep + 1] = b
      else
        reasons[b.name] = band_reason(v)
      end
    end
    return keep, reasons
  end
  return ctx
end

return policy_lib
