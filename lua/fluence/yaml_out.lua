-- Values as YAML for -o yaml: the same values, keys and order json.encode
-- writes (a metatable's __order first, then the other keys sorted), in
-- block style.  Strings are written plain when YAML reads them back as the
-- same string, else as JSON strings (valid YAML double-quoted scalars), so
-- -o yaml and -o json decode to the same data.
--
--   yaml_out.encode(value) -> text ending in a newline
local json = require "fluence.json"

local M = {}

-- Words YAML 1.1 or 1.2 would read as something other than a string.
local RESERVED = {}
for w in ([[null Null NULL ~ true True TRUE false False FALSE yes Yes YES no No NO
            on On ON off Off OFF y Y n N .nan .NaN .NAN .inf .Inf .INF -.inf -.Inf -.INF]]):gmatch("%S+") do
  RESERVED[w] = true
end

local function scalar_string(s)
  if s == "" or RESERVED[s] or tonumber(s) or s:find("^[%s%-?:,%[%]{}#&*!|>'\"%%@`]") or s:find("%s$")
     or s:find(": ", 1, true) or s:find(" #", 1, true) or s:find("[%c\128-\255]") or s:sub(-1) == ":" then
    return json.encode(s)
  end
  return s
end

local function is_array(t)
  if json.is_array(t) then return true end
  local mt = getmetatable(t)
  if mt and mt.__order then return false end
  local n = #t
  if n == 0 then return false end
  for k in pairs(t) do
    if math.type(k) ~= "integer" or k < 1 or k > n then return false end
  end
  return true
end

local function keys_of(t)
  local mt = getmetatable(t)
  local order, seen, out = mt and mt.__order or {}, {}, {}
  for _, k in ipairs(order) do
    if t[k] ~= nil then out[#out + 1] = k; seen[k] = true end
  end
  local rest = {}
  for k in pairs(t) do if not seen[k] then rest[#rest + 1] = k end end
  table.sort(rest, function(a, b) return tostring(a) < tostring(b) end)
  for _, k in ipairs(rest) do out[#out + 1] = k end
  return out
end

local function inline(v)
  if v == nil or v == json.null then return "null" end
  local t = type(v)
  if t == "string" then return scalar_string(v) end
  if t == "number" or t == "boolean" then return json.encode(v) end
  if t == "table" then
    if next(v) == nil then return is_array(v) and "[]" or (json.is_array(v) and "[]" or "{}") end
    return nil                         -- a block
  end
  return json.encode(tostring(v))
end

local function emit(out, v, indent)
  local pad = (" "):rep(indent)
  if is_array(v) then
    for _, x in ipairs(v) do
      local s = inline(x)
      if s then out[#out + 1] = pad .. "- " .. s
      elseif is_array(x) then
        out[#out + 1] = pad .. "-"
        emit(out, x, indent + 2)
      else
        -- a mapping in a list: its first key on the dash's line
        local sub = {}
        emit(sub, x, indent + 2)
        sub[1] = pad .. "- " .. sub[1]:sub(indent + 3)
        for _, l in ipairs(sub) do out[#out + 1] = l end
      end
    end
    return
  end
  for _, k in ipairs(keys_of(v)) do
    local x = v[k]
    local key = scalar_string(tostring(k))
    local s = inline(x)
    if s then out[#out + 1] = pad .. key .. ": " .. s
    else
      out[#out + 1] = pad .. key .. ":"
      emit(out, x, is_array(x) and indent or indent + 2)
    end
  end
end

function M.encode(v)
  local s = inline(v)
  if s then return s .. "\n" end
  local out = {}
  emit(out, v, 0)
  return table.concat(out, "\n") .. "\n"
end

return M
