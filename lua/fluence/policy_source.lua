-- Where a policy text sits in the file it came from, so an error inside the
-- policy points at the file's own line and column with the caret under the
-- stage: in a manifest, the select-policy annotation's value (a YAML scalar
-- in any style: plain, single- or double-quoted with escapes, literal or
-- folded block); for `fluence run POLICY.lua`, the Lua string literal the
-- file returns.
--
--   policy_source.manifest(stream, index, key, text) -> source | nil
--   policy_source.lua(path, src, text)               -> source | nil
--   source.at         "FILE:LINE:COL" of the value itself (the fallback)
--   source.same_file  the policy is in the file being selected (a manifest)
--   source:locate(pos, msg) -> "FILE:LINE:COL: msg" + the file's line and a
--                              caret, for byte pos of the policy text; nil
--                              when pos cannot be mapped exactly
--
-- Mapping works by decoding the source text the way YAML (or Lua) does,
-- remembering where each decoded byte came from, and is used only when the
-- decoding reproduces the parser's value exactly: a style or construct this
-- file does not follow (an alias, a tag with odd spacing) falls back to the
-- value's position rather than guessing.
local sys = require "fluence.sys"
local grammar = require "fluence.grammar"

local policy_source = {}

-- A decoder appends decoded bytes with their source offsets.
local function out_new() return { n = 0, bytes = {}, at = {} } end
local function put(o, s, at)
  for i = 1, #s do
    o.n = o.n + 1
    o.bytes[o.n] = s:sub(i, i)
    o.at[o.n] = at
  end
end
local function put_at(o, src, first, last)       -- src[first..last], each at its own offset
  for i = first, last do
    o.n = o.n + 1
    o.bytes[o.n] = src:sub(i, i)
    o.at[o.n] = i
  end
end
local function unput_ws(o, floor)                -- drop trailing literal blanks (folding)
  while o.n > floor and (o.bytes[o.n] == " " or o.bytes[o.n] == "\t") do
    o.bytes[o.n], o.at[o.n] = nil, nil
    o.n = o.n - 1
  end
end
local function text_of(o) return table.concat(o.bytes, "", 1, o.n) end

local function utf8_of(cp)
  if not cp or cp > 0x10FFFF then return nil end
  return utf8.char(cp)
end

-- The line break at i: its length (\r\n counts once), or nil.
local function brk(s, i)
  local c = s:sub(i, i)
  if c == "\r" then return s:sub(i + 1, i + 1) == "\n" and 2 or 1 end
  if c == "\n" then return 1 end
end

-- YAML flow scalars (plain, '...', "..."): the text between first and last
-- (inclusive) with line folding; quote = nil | "'" | '"'.
local function flow_scalar(raw, first, last, quote)
  local o = out_new()
  local i, floor = first, 0          -- floor: output that folding must not trim (escapes)
  while i <= last do
    local c = raw:sub(i, i)
    local b = brk(raw, i)
    if b then
      unput_ws(o, floor)
      -- count the empty lines that follow; skip leading blanks of each
      local at, empties = i, 0
      i = i + b
      while true do
        local j = i
        while j <= last and (raw:sub(j, j) == " " or raw:sub(j, j) == "\t") do j = j + 1 end
        local b2 = j <= last and brk(raw, j)
        if not b2 then i = j break end
        empties = empties + 1
        i = j + b2
      end
      if empties == 0 then put(o, " ", at) else put(o, ("\n"):rep(empties), at) end
      floor = o.n
    elseif quote == "'" and c == "'" then
      if raw:sub(i + 1, i + 1) ~= "'" then return nil end
      put(o, "'", i)
      i = i + 2
      floor = o.n
    elseif quote == '"' and c == "\\" then
      local e = raw:sub(i + 1, i + 1)
      local b2 = brk(raw, i + 1)
      if b2 then                       -- escaped line break: no space; empty lines still count
        local j, empties = i + 1 + b2, 0
        while true do
          while j <= last and (raw:sub(j, j) == " " or raw:sub(j, j) == "\t") do j = j + 1 end
          local b3 = j <= last and brk(raw, j)
          if not b3 then break end
          empties, j = empties + 1, j + b3
        end
        put(o, ("\n"):rep(empties), i)
        floor = o.n
        i = j
      else
        local simple = { ["0"] = "\0", a = "\a", b = "\b", t = "\t", ["\t"] = "\t", n = "\n", v = "\v",
                         f = "\f", r = "\r", e = "\27", [" "] = " ", ['"'] = '"', ["/"] = "/",
                         ["\\"] = "\\", N = "\u{85}", _ = "\u{A0}", L = "\u{2028}", P = "\u{2029}" }
        local hex = ({ x = 2, u = 4, U = 8 })[e]
        local s, at = nil, i
        if simple[e] then s = simple[e]; i = i + 2
        elseif hex then
          local h = raw:sub(i + 2, i + 1 + hex)
          if #h ~= hex or not h:match("^%x+$") then return nil end
          s = utf8_of(tonumber(h, 16))
          if not s then return nil end
          i = i + 2 + hex
        else return nil end
        put(o, s, at)
        floor = o.n
      end
    else
      put_at(o, raw, i, i)
      i = i + 1
    end
  end
  return o
end

-- YAML block scalars: raw starts at the | or > indicator; parent: the
-- indentation of the mapping holding it (for an explicit indentation
-- indicator, |2: content is indented parent + 2).
local function block_scalar(raw, parent)
  local style, header = raw:sub(1, 1), raw:match("^[|>]([^\r\n]*)")
  local nl = raw:find("[\r\n]")
  if not nl or not (header:match("^[%d+-]*[ \t]*$") or header:match("^[%d+-]*[ \t]+#")) then return nil end
  local i = nl + (brk(raw, nl) or 1)
  -- content lines: { first, last, indent } (last < first for an empty line)
  local lines = {}
  while i <= #raw do
    local e = raw:find("[\r\n]", i) or (#raw + 1)
    local ind = #raw:match("^ *", i)
    lines[#lines + 1] = { first = i, last = e - 1, spaces = ind }
    i = e + (e <= #raw and brk(raw, e) or 1)
  end
  local indent
  local explicit = tonumber(header:match("^[+-]?(%d)"))
  if explicit then
    if not parent then return nil end
    indent = parent + explicit
  else
    for _, l in ipairs(lines) do
      if l.last >= l.first + l.spaces then indent = l.spaces break end
    end
  end
  if not indent then return nil end
  local o = out_new()
  local prev, empties, started = nil, 0, false
  for _, l in ipairs(lines) do
    local cfirst = l.first + indent
    local blank = l.last < cfirst
    if blank then
      empties = empties + 1
    else
      local spaced = raw:sub(cfirst, cfirst):match("[ \t]") ~= nil
      if started then
        if style == ">" and prev == "text" and not spaced then
          if empties == 0 then put(o, " ", cfirst - 1) else put(o, ("\n"):rep(empties), cfirst - 1) end
        else
          put(o, ("\n"):rep(empties + 1), cfirst - 1)
        end
      else
        put(o, ("\n"):rep(empties), cfirst - 1)
      end
      put_at(o, raw, cfirst, l.last)
      prev, empties, started = spaced and "spaced" or "text", 0, true
    end
  end
  return o, true
end

-- Decodes the YAML scalar written as raw; o (bytes with offsets into raw).
-- prefix: its line up to it ("    key: "), for block scalars' indentation.
local function yaml_scalar(raw, prefix)
  -- node properties before the scalar: &anchor, !tag
  local skip = 1
  while raw:sub(skip, skip):match("[&!]") do
    local e = raw:find("[ \t\r\n]", skip)
    if not e then return nil end
    skip = raw:find("[^ \t\r\n]", e)
    if not skip then return nil end
  end
  local c = raw:sub(skip, skip)
  if c == '"' or c == "'" then
    if raw:sub(-1) ~= c then return nil end
    return flow_scalar(raw, skip + 1, #raw - 1, c)
  elseif c == "|" or c == ">" then
    -- the holding mapping's indentation: its key's column ("  - key: |2")
    local parent = prefix and #(prefix:match("^[ \t%-]*") or "")
    local o, block = block_scalar(raw:sub(skip), parent)
    if o then for k = 1, o.n do o.at[k] = o.at[k] + skip - 1 end end
    return o, block
  end
  return flow_scalar(raw, skip, #raw, nil)
end
policy_source.yaml_scalar = function(raw, prefix)
  local o = yaml_scalar(raw, prefix)
  return o and text_of(o), o and o.at
end

-- Does the decoding reproduce value?  (Block scalars: up to their final
-- line breaks, which chomping adds or removes and no stage sits in.)
local function matches(o, value, block)
  if not o then return false end
  local got = text_of(o)
  if got == value then return true end
  return block and value:sub(1, #got) == got and value:sub(#got + 1):match("^\n*$") ~= nil
end

local Source = {}
Source.__index = Source

-- The message located at byte pos (1-based) of the policy text (past its
-- end: just after its last byte).  nil without an exact mapping.
function Source:locate(pos, msg)
  local map = self.map
  if not map or #map == 0 then return nil end
  local at = pos > #map and map[#map] + 1 or map[math.max(1, pos)]
  return self.at_byte(self.base + at - 1, msg)
end

function policy_source.manifest(stream, index, key, text)
  local first, last, line = stream:annotation_span(index, key, text)
  if not first then return nil end
  local src = { at = stream:locate(first, "@@"):match("^(.-): @@"), base = first, same_file = true,
                at_byte = function(byte, msg) return stream:locate(byte, msg) end }
  local o, block = yaml_scalar(stream:source(first, last), stream:source(line, first - 1))
  if matches(o, text, block) then src.map = o.at end
  return setmetatable(src, Source)
end

-- Lua string literals ------------------------------------------------------

-- Each string literal of Lua source: fn(value, map) with map[i] = offset in
-- src of the value's byte i.  Comments are skipped.
local function lua_strings(src, fn)
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
      local start = i + #eq + 2
      local close = src:find("]" .. eq .. "]", start, true)
      if not close then return end
      local o = out_new()
      local j = start
      local b = brk(src, j)                 -- a first line break is skipped
      if b then j = j + b end
      while j < close do
        local b2 = brk(src, j)
        if b2 then
          if b2 == 1 and src:sub(j, j + 1) == "\n\r" then b2 = 2 end
          put(o, "\n", j)
          j = j + b2
        else
          put_at(o, src, j, j)
          j = j + 1
        end
      end
      fn(text_of(o), o.at)
      i = close + #eq + 2
    elseif c == '"' or c == "'" then
      local o, j, ok = out_new(), i + 1, false
      while j <= n do
        local d = src:sub(j, j)
        if d == c then ok = true break end
        if d == "\n" then break end
        if d == "\\" then
          local e = src:sub(j + 1, j + 1)
          local simple = { a = "\a", b = "\b", f = "\f", n = "\n", r = "\r", t = "\t", v = "\v",
                           ["\\"] = "\\", ['"'] = '"', ["'"] = "'", ["\n"] = "\n", ["\r"] = "\n" }
          if simple[e] then
            put(o, simple[e], j)
            j = j + 2
            if (e == "\n" and src:sub(j, j) == "\r") or (e == "\r" and src:sub(j, j) == "\n") then j = j + 1 end
          elseif e == "x" and src:match("^%x%x", j + 2) then
            put(o, string.char(tonumber(src:sub(j + 2, j + 3), 16)), j)
            j = j + 4
          elseif e == "z" then
            j = src:find("[^ \t\r\n\v\f]", j + 2) or n + 1
          elseif e:match("%d") then
            local digits = src:match("^%d%d?%d?", j + 1)
            local v = tonumber(digits)
            if v > 255 then break end
            put(o, string.char(v), j)
            j = j + 1 + #digits
          elseif e == "u" and src:match("^{%x+}", j + 2) then
            local h = src:match("^{(%x+)}", j + 2)
            local s = utf8_of(tonumber(h, 16))
            if not s then break end
            put(o, s, j)
            j = j + 4 + #h
          else break end
        else
          put_at(o, src, j, j)
          j = j + 1
        end
      end
      if not ok then return end
      fn(text_of(o), o.at)
      i = j + 1
    else
      i = i + 1
    end
  end
end

function policy_source.lua(path, src, text)
  local map
  lua_strings(src, function(value, at)
    if not map and value == text then map = at end
  end)
  if not map then return nil end
  local line, col = grammar.linecol(src, map[1] or 1)   -- byte columns
  return setmetatable({
    at = ("%s:%d:%d"):format(path, line, col), base = 1, map = map,
    at_byte = function(byte, msg)
      local l, c = grammar.linecol(src, byte)
      return sys.locate(path, src, l, c, msg)
    end,
  }, Source)
end

return policy_source
