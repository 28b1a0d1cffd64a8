-- The select-policy language (docs/policy-language.md), parsed with LPeg into
-- a syntax tree that keeps every position, so errors can point into the text.
--
--   grammar.parse(text) -> tree | nil, { pos = N, msg = "..." }
--
--   tree  = { text = text, stages = { stage, ... } }
--   stage = { text = "min-cost~5%", word = "min-cost", pos = N, endpos = N,
--             tolerance = nil | { value = 0.05, relative = true, text = "5%", pos = N },
--             args = nil | { raw = "...", pos = N, items = { item, ... } } }
--   item  = { text =, pos =, key = nil | "memory_gb", keypos =, op = nil | ">=", oppos =,
--             values = { { text = '"us east"', value = "us east", quoted = true,
--                          number = nil | 24, pos = N }, ... },
--             sep = nil | "," | "|", seppos = N }   -- what comes before it
--   (a "|" followed by `ident op` starts another item, an alternative:
--    prefer:region=a|region=b; otherwise "|" separates values: region=a|b)
--
-- Positions are 1-based byte offsets into the text.  The grammar knows no
-- policy names: the pipeline resolves words to plugins.
local lpeg = require "lpeg"

local P, S, R, C, Cp, Ct, Cc, Cmt =
  lpeg.P, lpeg.S, lpeg.R, lpeg.C, lpeg.Cp, lpeg.Ct, lpeg.Cc, lpeg.Cmt

local grammar = {}

-- Parse errors are thrown out of lpeg.match as this table and caught in parse().
local PErr = {}
local function throw(pos, msg) error(setmetatable({ pos = pos, msg = msg }, PErr), 0) end

-- A pattern that fails the whole parse; msg(subject, pos) builds the message.
-- Patterns are values: the pieces used in several places are built once
-- (each LPeg operation is a new userdata; building this grammar was a tenth
-- of a small selection).
local cp = Cp()

local function fail(msg)
  return Cmt(cp, function(s, i)
    throw(i, type(msg) == "function" and msg(s, i) or msg)
  end)
end

local function show(s, i)
  local c = s:sub(i, i)
  if c == "" then return "end of text" end
  local word = s:match("^[%w_.%-]+", i)
  return ("%q"):format(word or c)
end

local ws = S(" \t\r\n") ^ 0
local ident = (R("az", "AZ") + P "_") * (R("az", "AZ", "09") + S "_.-") ^ 0
local digits = R "09" ^ 1
local number = S "+-" ^ -1 * (digits * (P "." * digits ^ -1) ^ -1 + P "." * digits)
               * (S "eE" * S "+-" ^ -1 * digits) ^ -1
local opchar = S "=<>!"
local OPS = { ["="] = "=", ["=="] = "=", ["!="] = "!=", ["<"] = "<", ["<="] = "<=",
              [">"] = ">", [">="] = ">=" }

-- operator: any run of = < > ! ; a run that is not an operator is an error,
-- found while matching (so the first error in the text is the one told).
-- The check returns no values: values a match-time capture returns stay on
-- LPeg's stack to the end of the match, and 30,000 conditions overflowed it.
local op = cp * C(Cmt(cp * opchar ^ 1, function(s, i, pos)
  local o = s:sub(pos, i - 1)
  if not OPS[o] then
    throw(pos, ("bad operator %q (expected one of = != < <= > >=)"):format(o))
  end
  return true
end)) / function(pos, o) return pos, OPS[o] end

-- values -------------------------------------------------------------------
local function unquote(q)
  local body = q:sub(2, -2)
  return (body:gsub("\\(.)", "%1"))
end

local function quoted_with(qc)
  local q = P(qc)
  return q * (P "\\" * 1 + (1 - S(qc .. "\\"))) ^ 0 * (q + Cmt(cp, function(s, i)
    -- point at the opening quote
    local open = i - 1
    while open > 1 and s:sub(open, open) ~= qc do open = open - 1 end
    throw(open, "unterminated string")
  end))
end
local quoted = quoted_with('"') + quoted_with("'")
local barechar = 1 - S(",|\"'=<>!~ \t\r\n")
local bare = barechar ^ 1

local whole_number = number * -1    -- built once: a pattern is compiled on its first match

local function mkvalue(pos, text, isq)
  local v = { text = text, pos = pos, quoted = isq }
  if isq then
    v.value = unquote(text)
  else
    v.value = text
    -- a number must be finite: 1e999999 is a bad number, not infinity
    local n = lpeg.match(whole_number, text) and tonumber(text)
    if n and n == n and math.abs(n) ~= math.huge then v.number = n end
  end
  return v
end

-- The patterns below that contain other rules are the rules of one LPeg
-- grammar (V"name"): inlined, each use copied its whole subpattern, and the
-- stage pattern grew to thousands of instructions compiled at every start.
local V = lpeg.V

local value = cp * C(quoted) * Cc(true) / mkvalue
            + cp * C(bare) * Cc(false) / mkvalue

local function missing_value(after)
  return fail(function(s, i)
    if s:sub(i, i) == "" or s:sub(i, i) == "," then
      return ("missing value after %q"):format(after)
    end
    return ("expected a value after %q, found %s"):format(after, show(s, i))
  end)
end

-- "| ident op" starts an alternative item, not another value
local item_ahead = #(ident * ws * opchar)
local alt_next = ws * P "|" * ws * item_ahead
local values = Ct(V "value" * (-alt_next * ws * P "|" * ws * (V "value" + missing_value("|"))) ^ 0)

-- items --------------------------------------------------------------------
local function mkitem(pos, key, oppos, o, vals, endpos)
  return { pos = pos, key = key, keypos = key and pos, op = o, oppos = oppos,
           values = vals, endpos = endpos }
end

local function missing_after_op(s, i)
  local o = s:sub(1, i - 1):match("([=<>!]+)%s*$") or "="
  local c = s:sub(i, i)
  if c == "" or c == "," then return ("missing value after %q"):format(o) end
  return ("expected a value after %q, found %s"):format(o, show(s, i))
end

local item = (cp * C(ident) * ws * op * ws * (V "values" + fail(missing_after_op)) * cp)
               / function(pos, key, oppos, o, vals, endpos)
                   return mkitem(pos, key, oppos, o, vals, endpos)
                 end
           + (cp * V "values" * cp)
               / function(pos, vals, endpos) return mkitem(pos, nil, nil, nil, vals, endpos) end

-- a comma continues the argument list only when `ident op` follows; so
-- does "|", making the next item an alternative
local sep = ws * cp * (P "," * Cc(",") + P "|" * Cc("|")) * ws * item_ahead
local args = Ct(V "item" * ((sep * V "item") / function(pos, s, it)
  it.sep, it.seppos = s, pos
  return it
end) ^ 0)

local function missing_args(s, i)
  if s:sub(i, i) == "" or s:sub(i, i) == "," then return 'missing argument after ":"' end
  return ('expected an argument after ":", found %s'):format(show(s, i))
end

-- tolerance ----------------------------------------------------------------
local tolerance = cp * P "~" * ws * (cp * C(number) * C(P "%" ^ -1) + fail(function(s, i)
  return ("bad tolerance %s (expected a number like 0.05 or 5%%)"):format(show(s, i))
end)) / function(_, pos, num, pct)
  local v = tonumber(num)
  if v ~= v or math.abs(v) == math.huge then throw(pos, ("tolerance %s is out of range"):format(num)) end
  if pct == "%" then v = v / 100 end
  return { value = v, relative = pct == "%", text = num .. pct, pos = pos }
end

-- stages -------------------------------------------------------------------
local function stage_start_error(s, i)
  local c = s:sub(i, i)
  if c == "" or c == "," then return "empty stage" end
  return ("expected a policy name, found %s"):format(show(s, i))
end

local stage = cp * C(ident) * ws * (tolerance + Cc(nil)) * ws
            * ((P ":" * ws * cp * (V "args" + fail(missing_args)) * cp) + Cc(nil, nil, nil))
            * cp
            / function(pos, word, tol, argpos, items, argend, endpos)
                return { pos = pos, word = word, tolerance = tol,
                         argpos = argpos, items = items, argend = argend, endpos = endpos }
              end

local function after_stage_error(s, i)
  return ("unexpected %s (expected \",\" between stages)"):format(show(s, i))
end

local pipeline = P {
  "pipeline",
  pipeline = ws * (#P(-1) * fail("empty policy") + P(true))
             * Ct((V "stage" + fail(stage_start_error))
                  * (ws * P "," * ws * (V "stage" + fail(stage_start_error))) ^ 0)
             * ws * (P(-1) + fail(after_stage_error)),
  stage = stage, args = args, item = item, values = values, value = value,
}

local function trim_end(s, i, j)
  while j >= i and s:sub(j, j):match("%s") do j = j - 1 end
  return j
end

function grammar.parse(text)
  if type(text) ~= "string" then return nil, { pos = 1, msg = "policy text must be a string" } end
  local ok, raw = pcall(lpeg.match, pipeline, text)
  if not ok then
    if getmetatable(raw) == PErr then return nil, { pos = raw.pos, msg = raw.msg } end
    error(raw, 0)
  end
  local stages = {}
  for i, st in ipairs(raw) do
    local last = trim_end(text, st.pos, st.endpos - 1)
    local s = { word = st.word, pos = st.pos, endpos = last + 1,
                text = text:sub(st.pos, last), tolerance = st.tolerance }
    if st.items then
      local alast = trim_end(text, st.argpos, st.argend - 1)
      s.args = { raw = text:sub(st.argpos, alast), pos = st.argpos, items = st.items }
      for _, it in ipairs(st.items) do
        local e = trim_end(text, it.pos, it.endpos - 1)
        it.text = text:sub(it.pos, e)
        it.endpos = nil
      end
    end
    stages[i] = s
  end
  return { text = text, stages = stages }
end

-- line and column of byte offset pos in text
function grammar.linecol(text, pos)
  local line, col = 1, pos
  local start = 1
  while true do
    local nl = text:find("\n", start, true)
    if not nl or nl >= pos then break end
    line = line + 1
    start = nl + 1
  end
  col = pos - start + 1
  return line, col
end

return grammar
