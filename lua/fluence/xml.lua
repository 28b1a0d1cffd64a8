-- A small XML reader for the answers of AWS Query APIs (EC2
-- DescribeSpotPriceHistory): elements, attributes, text, CDATA, comments;
-- nothing that can expand or reach out.
--
--   xml.decode(text [, name]) -> root | nil, "NAME:LINE:COL: message"
--     element = { name = "item" (the local name: a prefix is dropped),
--                 attrs = { k = v }, children = { element, ... },
--                 text = the element's own text, entities resolved }
--   xml.child(e, name) -> the first child element named name | nil
--   xml.children(e, name) -> every child element named name
--   xml.text(e, name) -> the text of child name (trimmed) | nil
--
-- Hostile input is refused, never followed: a DOCTYPE (the only place
-- entities are declared, so no "billion laughs" and no external entity
-- reaches a file or the network), an unknown entity, a tag left open or
-- closed out of order, more than 64 levels or 200,000 elements.  Every scan
-- is a string.find from the current position: time is linear in the input,
-- whose size the HTTP body cap already bounds.
local M = {}

M.MAX_DEPTH = 64
M.MAX_ELEMENTS = 200000

local PREDEF = { lt = "<", gt = ">", amp = "&", quot = '"', apos = "'" }

local function linecol(text, pos)
  local line, last = 1, 0
  for nl in text:sub(1, pos - 1):gmatch("()\n") do line, last = line + 1, nl end
  return line, pos - last
end

-- A character reference as UTF-8, refusing what XML does not allow.
local function char(n)
  if not n or n == 0 or n > 0x10FFFF or (n >= 0xD800 and n <= 0xDFFF) then return nil end
  return utf8.char(n)
end

local function unescape(s, fail)
  if not s:find("&", 1, true) then return s end
  return (s:gsub("&([^;&]*)(;?)", function(ent, semi)
    local v = semi == ";" and PREDEF[ent]
    if not v and semi == ";" then
      local hex, dec = ent:match("^#x(%x+)$"), ent:match("^#(%d+)$")
      v = char(hex and tonumber(hex, 16) or dec and tonumber(dec))
    end
    if not v then fail(("unknown or malformed entity &%s%s"):format(ent:sub(1, 20), semi)) end
    return v
  end))
end

local function local_name(n) return n:match(":([^:]*)$") or n end

function M.decode(text, name)
  name = name or "<xml>"
  if type(text) ~= "string" then return nil, name .. ": not text" end
  local pos, n = 1, #text
  local stack, count = {}, 0
  local root
  local ok, err = pcall(function()
    local function fail(msg, at)
      local line, col = linecol(text, at or pos)
      error({ msg = ("%s:%d:%d: %s"):format(name, line, col, msg) }, 0)
    end
    local function add_text(s)
      local top = stack[#stack]
      if top then
        local parts = top.parts
        parts[#parts + 1] = s
      elseif s:find("%S") then
        fail("text outside the root element")
      end
    end
    -- a byte-order mark, then the XML declaration
    if text:sub(1, 3) == "\239\187\191" then pos = 4 end
    while pos <= n do
      local lt = text:find("<", pos, true)
      if not lt then
        add_text(unescape(text:sub(pos), fail))
        break
      end
      if lt > pos then add_text(unescape(text:sub(pos, lt - 1), fail)) end
      pos = lt
      local c = text:sub(lt + 1, lt + 1)
      if text:sub(lt, lt + 3) == "<!--" then
        local e = text:find("-->", lt + 4, true) or fail("comment not closed")
        pos = e + 3
      elseif text:sub(lt, lt + 8) == "<![CDATA[" then
        local e = text:find("]]>", lt + 9, true) or fail("CDATA section not closed")
        if not stack[#stack] then fail("CDATA outside the root element") end
        add_text(text:sub(lt + 9, e - 1))
        pos = e + 3
      elseif c == "!" then
        fail("a DOCTYPE or declaration is not accepted")
      elseif c == "?" then
        local e = text:find("?>", lt + 2, true) or fail("processing instruction not closed")
        pos = e + 2
      elseif c == "/" then
        local s, e, tag = text:find("^</([%w_:%.%-]+)%s*>", lt)
        if not s then fail("malformed closing tag") end
        local top = stack[#stack]
        if not top or top.qname ~= tag then
          fail(top and ("</%s> closes <%s>"):format(tag, top.qname) or ("</%s> closes nothing"):format(tag))
        end
        stack[#stack] = nil
        top.text = table.concat(top.parts)
        top.parts, top.qname = nil, nil
        pos = e + 1
      else
        local s, e, tag = text:find("^<([%a_:][%w_:%.%-]*)", lt)
        if not s then fail("malformed tag") end
        count = count + 1
        if count > M.MAX_ELEMENTS then fail(("more than %d elements"):format(M.MAX_ELEMENTS)) end
        if #stack >= M.MAX_DEPTH then fail(("nested more than %d levels"):format(M.MAX_DEPTH)) end
        local el = { name = local_name(tag), qname = tag, attrs = {}, children = {}, parts = {} }
        local p = e + 1
        while true do
          local s2, e2 = text:find("^%s*/?>", p)
          if s2 then
            p = e2 + 1
            local parent = stack[#stack]
            if parent then parent.children[#parent.children + 1] = el
            elseif root then fail("a second root element", lt)
            else root = el end
            if text:sub(e2 - 1, e2 - 1) == "/" then
              el.text, el.parts, el.qname = "", nil, nil
            else
              stack[#stack + 1] = el
            end
            break
          end
          local s3, e3, an, q = text:find("^%s+([%a_:][%w_:%.%-]*)%s*=%s*([\"'])", p)
          if not s3 then fail("malformed attribute in <" .. tag .. ">", p) end
          local close = text:find(q, e3 + 1, true) or fail("attribute value not closed", e3)
          local v = text:sub(e3 + 1, close - 1)
          if v:find("<", 1, true) then fail("'<' in an attribute value", e3 + 1) end
          el.attrs[local_name(an)] = unescape(v, fail)
          p = close + 1
        end
        pos = p
      end
    end
    if stack[#stack] then fail(("<%s> not closed"):format(stack[#stack].qname), n + 1) end
    if not root then fail("no element", n + 1) end
  end)
  if not ok then
    if type(err) == "table" and err.msg then return nil, err.msg end
    error(err, 0)
  end
  return root
end

function M.child(e, name)
  for _, c in ipairs(e and e.children or {}) do
    if c.name == name then return c end
  end
end

function M.children(e, name)
  local out = {}
  for _, c in ipairs(e and e.children or {}) do
    if c.name == name then out[#out + 1] = c end
  end
  return out
end

function M.text(e, name)
  local c = M.child(e, name)
  return c and c.text:match("^%s*(.-)%s*$") or nil
end

return M
