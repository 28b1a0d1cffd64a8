-- Where a policy text sits in the file it came from, so an error inside the
-- policy points at the file's own line and column with the caret under the
-- stage: in a manifest, the select-policy annotation's value (a YAML scalar
-- in any style: plain, single- or double-quoted with escapes, literal or
-- folded block); for `fluence run POLICY.lua`, the Lua string literal the
-- file returns.
--
--   policy_source.manifest(stream, index, key, text) -> source | nil
--   policy_source.lua(path, src, text)               -> source | nil
--   source.at         the value's own place (location.at): the fallback
--   source.same_file  the policy is in the file being selected (a manifest)
--   source:location(pos, msg) -> the location (fluence.location) of byte
--                     pos of the policy text in the file; nil when pos
--                     cannot be mapped exactly
--   policy_source.yaml_map(raw, prefix, value) -> byte(pos) | nil
--
-- A YAML value is decoded by one decoder, libyaml's (fluence.yaml), a Lua
-- literal by Lua's own (load): byte pos of the value comes from the
-- shortest start of the written literal whose decoding already holds the
-- value's first pos bytes -- a parser reads left to right, so that start
-- ends at the byte that made it (an escape maps to its backslash, a folded
-- line break to the next line's first byte).  Nothing here knows YAML's or
-- Lua's quoting, escapes or folding.  When the written literal does not
-- decode to the value at all (an alias, a style that reads otherwise
-- alone) the value's own position is used instead of a guess.
local grammar = require "fluence.grammar"
local location = require "fluence.location"

local policy_source = {}

local Source = {}
Source.__index = Source

-- The value of the scalar written as raw[1..cut], through libyaml, as a
-- string (nil when that start does not parse: inside an escape, a quote
-- not closed).  Written under a key at the column of the holding mapping
-- (pad), so block scalars' indentation reads as in the file; a scalar with
-- no tag of its own is tagged !!str, so "12" stays text.
local function decoder(raw, prefix)
  local yaml = require "fluence.yaml"
  local pad = (" "):rep(#(prefix and prefix:match("^[ \t%-]*") or ""))
  -- its node properties (&anchor, !tag), then the scalar itself
  local i, tag = 1, false
  while raw:sub(i, i):match("[&!]") do
    tag = tag or raw:sub(i, i) == "!"
    local e = raw:find("[ \t\r\n]", i)
    i = e and raw:find("[^ \t\r\n]", e) or #raw + 1
  end
  local head = pad .. "k: " .. (tag and "" or "!!str ")
  local quote = raw:sub(i, i):match("[\"']")
  return function(cut)
    local written = raw:sub(1, cut)
    -- a quoted scalar cut short is closed again (its own quote char)
    if quote and cut < #raw and cut >= i then written = written .. quote end
    local doc = yaml.decode(head .. written .. "\n")
    local v = type(doc) == "table" and rawget(doc, "k")
    return type(v) == "string" and v or nil
  end
end

-- Does the decoding reproduce value?  (Block scalars: up to their final
-- line breaks, which chomping adds or removes and no stage sits in.)
local function same(got, value)
  if got == nil then return false end
  if got == value then return true end
  got, value = got:gsub("\n+$", ""), value:gsub("\n+$", "")
  return got == value
end

-- decode(cut) -> the value of the first cut bytes of a written literal (n
-- bytes in all), or nil when that start does not parse.  Returns byte(pos)
-- -> the byte of the literal that makes byte pos of value, by bisection
-- over the literal's starts (O(log n) decodings); nil when the whole
-- literal does not decode to value.
local function mapper(decode, n, value)
  local full = decode(n)
  if not same(full, value) then return nil end
  -- does the start of cut bytes hold the value's first pos bytes?  A start
  -- that does not parse (inside an escape: \U0001F600 is the longest) is
  -- judged by the next one that does: an escape maps to its backslash.
  local function holds(cut, pos)
    for c = cut, math.min(cut + 9, n) do
      local got = decode(c)
      if got then return #got >= pos and got:sub(1, pos) == full:sub(1, pos) end
    end
    return false
  end
  return function(pos)
    -- the final line breaks a block's chomping adds: at its end
    if pos > #full then return n end
    pos = math.max(1, pos)
    local lo, hi = 1, n
    if not holds(hi, pos) then return nil end
    while lo < hi do
      local mid = (lo + hi) // 2
      if holds(mid, pos) then hi = mid else lo = mid + 1 end
    end
    return lo
  end
end

function policy_source.yaml_map(raw, prefix, value)
  return mapper(decoder(raw, prefix), #raw, value)
end

-- The location of byte pos of the policy text (past its end: just after
-- its last byte).  nil without an exact mapping.
function Source:location(pos, msg)
  local b = self.map(math.min(pos, self.length))
  if not b then return nil end
  if pos > self.length then b = b + 1 end
  return self.locate(self.base + b - 1, msg)
end

function policy_source.manifest(stream, index, key, text)
  local first, last, line = stream:annotation_span(index, key, text)
  if not first then return nil end
  local src = { at = location.at(stream:position(first)), base = first, same_file = true, length = #text,
                locate = function(byte, msg) return location.in_stream(stream, byte, msg) end }
  if #text > 0 then src.map = policy_source.yaml_map(stream:source(first, last), stream:source(line, first - 1), text) end
  return setmetatable(src, Source)
end

-- Lua string literals ------------------------------------------------------

-- Each string literal of Lua source, in order: fn(first, last) with its
-- bytes (quotes or brackets included).  Comments are skipped.  Only where a
-- literal ends is known here; what it means is Lua's own reading (load).
local function lua_literals(src, fn)
  local i, n = 1, #src
  while i <= n do
    local c = src:sub(i, i)
    if c == "-" and src:sub(i + 1, i + 1) == "-" then
      local eq = src:match("^%[(=*)%[", i + 2)
      if eq then
        local close = src:find("]" .. eq .. "]", i + 4 + #eq, true)
        i = close and close + #eq + 2 or n + 1
      else
        i = (src:find("\n", i, true) or n) + 1
      end
    elseif c == "[" and src:match("^%[=*%[", i) then
      local eq = src:match("^%[(=*)%[", i)
      local close = src:find("]" .. eq .. "]", i + #eq + 2, true)
      if not close then return end
      fn(i, close + #eq + 1)
      i = close + #eq + 2
    elseif c == '"' or c == "'" then
      local j = i + 1
      while j <= n do
        local d = src:sub(j, j)
        if d == c or d == "\n" then break end
        if d == "\\" and src:sub(j + 1, j + 1) == "z" then   -- \z: the blanks and breaks after it go
          j = src:find("[^ \t\r\n\v\f]", j + 2) or n + 1
        elseif d == "\\" then                     -- an escaped character never ends it
          j = j + (src:sub(j + 1, j + 2) == "\r\n" and 3 or 2)
        else
          j = j + 1
        end
      end
      if src:sub(j, j) ~= c then return end
      fn(i, j)
      i = j + 1
    else
      i = i + 1
    end
  end
end

-- decode(cut) for the literal src[first..last]: Lua reads its first cut
-- bytes, closed again as it is closed.
local function lua_decoder(src, first, last)
  local lit = src:sub(first, last)
  local close = lit:match("^%[(=*)%[")
  close = close and ("]" .. close .. "]") or lit:sub(1, 1)
  return function(cut)
    local f = load("return " .. lit:sub(1, cut) .. (cut < #lit and close or ""), "=literal", "t", {})
    if not f then return nil end
    local ok, v = pcall(f)
    return ok and type(v) == "string" and v or nil
  end
end

function policy_source.lua(path, src, text)
  local map, base
  lua_literals(src, function(first, last)
    if map then return end
    local decode = lua_decoder(src, first, last)
    if decode(last - first + 1) == text then
      map, base = mapper(decode, last - first + 1, text), first
    end
  end)
  if not map or #text == 0 then return nil end
  return setmetatable({
    at = location.at(path, grammar.linecol(src, base + map(1) - 1)), base = base, length = #text,   -- byte columns
    map = map,
    locate = function(byte, msg)
      local l, c = grammar.linecol(src, byte)
      return location.in_text(path, src, l, c, msg)
    end,
  }, Source)
end

return policy_source
