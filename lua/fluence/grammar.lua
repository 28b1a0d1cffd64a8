-- The select-policy language (docs/policy-language.md), parsed into a syntax
-- tree that keeps every position, so errors can point into the text.
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
--
-- A recursive-descent parser over Lua patterns, one function per rule of the
-- PEG below (PEG semantics: ordered choice, greedy repetition, lookahead).
-- It was an LPeg grammar, whose construction and compilation were a tenth of
-- a small selection; spec/support/grammar_lpeg.lua keeps that grammar, and
-- spec/grammar_spec.lua checks both agree on trees and errors.
--
--   pipeline  <- ws (!. "empty policy")? stage* ... (see parse_text below)
--   stage     <- ident ws tolerance? ws (":" ws args)?
--   tolerance <- "~" ws number "%"?
--   args      <- item (sep item)*           sep <- ws ("," / "|") ws &(ident ws opchar)
--   item      <- ident ws op ws values / values
--   values    <- value (!alt ws "|" ws value)*   alt <- ws "|" ws &(ident ws opchar)
--   value     <- quoted / [^,|"'=<>!~ \t\r\n]+
--   number    <- [+-]? ([0-9]+ ("." [0-9]*)? / "." [0-9]+) ([eE] [+-]? [0-9]+)?
--   ident     <- [A-Za-z_] [A-Za-z0-9_.-]*          ws <- [ \t\r\n]*
local grammar = {}

-- Parse errors are thrown as this table and caught in parse().
local PErr = {}
local function throw(pos, msg) error(setmetatable({ pos = pos, msg = msg }, PErr), 0) end

local function show(s, i)
  local c = s:sub(i, i)
  if c == "" then return "end of text" end
  local word = s:match("^[%w_.%-]+", i)
  return ("%q"):format(word or c)
end

local OPS = { ["="] = "=", ["=="] = "=", ["!="] = "!=", ["<"] = "<", ["<="] = "<=",
              [">"] = ">", [">="] = ">=" }

-- Each rule takes the subject and a position and returns the position after
-- what it matched (and what it captured), or nil when it does not match.
local function ws(s, i) return s:match("^[ \t\r\n]*()", i) end
local function ident(s, i) return s:match("^[A-Za-z_][A-Za-z0-9_.%-]*()", i) end

local function number(s, i)
  local j = s:match("^[+-]?()", i)
  local k = s:match("^[0-9]+()", j)
  if k then
    if s:byte(k) == 46 then k = s:match("^[0-9]*()", k + 1) end   -- "." digits?
  else
    k = s:match("^%.[0-9]+()", j)
    if not k then return nil end
  end
  return s:match("^[eE][+-]?[0-9]+()", k) or k
end

-- &(ident ws opchar): an item (key and operator) starts at i
local function item_ahead(s, i)
  local e = ident(s, i)
  return e ~= nil and s:find("^[=<>!]", ws(s, e)) ~= nil
end

-- values -------------------------------------------------------------------
local function unquote(q)
  local body = q:sub(2, -2)
  return (body:gsub("\\(.)", "%1"))
end

local function mkvalue(pos, text, isq)
  local v = { text = text, pos = pos, quoted = isq }
  if isq then
    v.value = unquote(text)
  else
    v.value = text
    -- a number must be finite: 1e999999 is a bad number, not infinity
    local n = number(text, 1) == #text + 1 and tonumber(text)
    if n and n == n and math.abs(n) ~= math.huge then v.number = n end
  end
  return v
end

-- quote (escape / not quote)* quote, at a quote character qc
local function quoted(s, i, qc)
  local j, q = i + 1, qc:byte()
  while true do
    local c = s:byte(j)
    if c == q then return j + 1 end
    if c == 92 and j < #s then j = j + 2          -- a backslash and any byte
    elseif c == nil or c == 92 then
      -- point at the opening quote (the last qc before here, as it always has)
      local open = j - 1
      while open > 1 and s:sub(open, open) ~= qc do open = open - 1 end
      throw(open, "unterminated string")
    else j = j + 1 end
  end
end

local function value(s, i)
  local c = s:sub(i, i)
  if c == '"' or c == "'" then
    local e = quoted(s, i, c)
    return e, mkvalue(i, s:sub(i, e - 1), true)
  end
  local e = s:match("^[^,|\"'=<>!~ \t\r\n]+()", i)
  if e then return e, mkvalue(i, s:sub(i, e - 1), false) end
end

local function missing_value(s, i, after)
  if s:sub(i, i) == "" or s:sub(i, i) == "," then throw(i, ("missing value after %q"):format(after)) end
  throw(i, ("expected a value after %q, found %s"):format(after, show(s, i)))
end

local function values(s, i)
  local j, v = value(s, i)
  if not j then return nil end
  local list = { v }
  while true do
    local k = ws(s, j)
    if s:byte(k) ~= 124 then break end                  -- "|"
    k = ws(s, k + 1)
    if item_ahead(s, k) then break end                  -- "| ident op": another item
    local e
    e, v = value(s, k)
    if not e then missing_value(s, k, "|") end
    list[#list + 1] = v
    j = e
  end
  return j, list
end

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

local function item(s, i)
  local e = ident(s, i)
  local k = e and ws(s, e)
  local oe = k and s:match("^[=<>!]+()", k)
  if oe then
    -- operator: any run of = < > ! ; a run that is not an operator is an error
    local o = s:sub(k, oe - 1)
    if not OPS[o] then throw(k, ("bad operator %q (expected one of = != < <= > >=)"):format(o)) end
    local vpos = ws(s, oe)
    local j, vals = values(s, vpos)
    if not j then throw(vpos, missing_after_op(s, vpos)) end
    return j, mkitem(i, s:sub(i, e - 1), k, OPS[o], vals, j)
  end
  local j, vals = values(s, i)
  if j then return j, mkitem(i, nil, nil, nil, vals, j) end
end

-- a comma continues the argument list only when `ident op` follows; so
-- does "|", making the next item an alternative
local function args(s, i)
  local j, it = item(s, i)
  if not j then return nil end
  local items = { it }
  while true do
    local seppos = ws(s, j)
    local sep = s:sub(seppos, seppos)
    if sep ~= "," and sep ~= "|" then break end
    local k = ws(s, seppos + 1)
    if not item_ahead(s, k) then break end
    local e
    e, it = item(s, k)
    if not e then break end
    it.sep, it.seppos = sep, seppos
    items[#items + 1] = it
    j = e
  end
  return j, items
end

local function missing_args(s, i)
  if s:sub(i, i) == "" or s:sub(i, i) == "," then return 'missing argument after ":"' end
  return ('expected an argument after ":", found %s'):format(show(s, i))
end

-- tolerance: its range is checked once the whole text has parsed (a syntax
-- error anywhere is reported first, as the LPeg grammar's deferred captures
-- did)
local function tolerance(s, i)
  if s:byte(i) ~= 126 then return nil end              -- "~"
  local pos = ws(s, i + 1)
  local e = number(s, pos)
  if not e then throw(pos, ("bad tolerance %s (expected a number like 0.05 or 5%%)"):format(show(s, pos))) end
  local num, pct = s:sub(pos, e - 1), ""
  if s:byte(e) == 37 then pct, e = "%", e + 1 end       -- "%"
  return e, { num = num, pct = pct, pos = pos }
end

local function check_tolerance(t)
  local v = tonumber(t.num)
  if v ~= v or math.abs(v) == math.huge then throw(t.pos, ("tolerance %s is out of range"):format(t.num)) end
  if t.pct == "%" then v = v / 100 end
  return { value = v, relative = t.pct == "%", text = t.num .. t.pct, pos = t.pos }
end

-- stages -------------------------------------------------------------------
local function stage_start_error(s, i)
  local c = s:sub(i, i)
  if c == "" or c == "," then return "empty stage" end
  return ("expected a policy name, found %s"):format(show(s, i))
end

local function stage(s, i)
  local e = ident(s, i)
  if not e then return nil end
  local st = { pos = i, word = s:sub(i, e - 1) }
  local j = ws(s, e)
  local te, tol = tolerance(s, j)
  if te then st.tolerance, j = tol, ws(s, te) end
  if s:byte(j) == 58 then                                -- ":"
    local apos = ws(s, j + 1)
    local ae, items = args(s, apos)
    if not ae then throw(apos, missing_args(s, apos)) end
    st.argpos, st.items, st.argend, j = apos, items, ae, ae
  end
  st.endpos = j
  return j, st
end

local function after_stage_error(s, i)
  return ("unexpected %s (expected \",\" between stages)"):format(show(s, i))
end

local function parse_text(s)
  local i = ws(s, 1)
  if i > #s then throw(i, "empty policy") end
  local stages = {}
  local j, st = stage(s, i)
  if not j then throw(i, stage_start_error(s, i)) end
  stages[1] = st
  while true do
    local k = ws(s, j)
    if s:byte(k) ~= 44 then break end                    -- ","
    k = ws(s, k + 1)
    j, st = stage(s, k)
    if not j then throw(k, stage_start_error(s, k)) end
    stages[#stages + 1] = st
  end
  local k = ws(s, j)
  if k <= #s then throw(k, after_stage_error(s, k)) end
  for _, t in ipairs(stages) do
    if t.tolerance then t.tolerance = check_tolerance(t.tolerance) end
  end
  return stages
end

local function trim_end(s, i, j)
  while j >= i and s:sub(j, j):match("%s") do j = j - 1 end
  return j
end

function grammar.parse(text)
  if type(text) ~= "string" then return nil, { pos = 1, msg = "policy text must be a string" } end
  local ok, raw = pcall(parse_text, text)
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
