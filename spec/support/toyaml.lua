-- A small YAML writer for spec fixtures built from Lua tables (block style,
-- sorted keys, strings double-quoted when they could read as another type).
local M = {}

local function scalar(v)
  if type(v) == "number" then
    if math.type(v) == "integer" then return tostring(v) end
    return (("%.17g"):format(v):gsub("^(%-?%d+)$", "%1.0"))
  elseif type(v) == "boolean" then return tostring(v) end
  return '"' .. tostring(v):gsub('[\\"]', "\\%0"):gsub("\n", "\\n") .. '"'
end

local function is_list(t)
  return type(t) == "table" and (#t > 0 or next(t) == nil and getmetatable(t) and getmetatable(t).__name == "fluence.json.array")
end

local function emit(v, indent, out)
  local pad = (" "):rep(indent)
  if is_list(v) then
    for _, x in ipairs(v) do
      if type(x) == "table" and next(x) ~= nil then
        local sub = {}
        emit(x, indent + 2, sub)
        sub[1] = pad .. "- " .. sub[1]:sub(indent + 3)
        for _, l in ipairs(sub) do out[#out + 1] = l end
      else
        out[#out + 1] = pad .. "- " .. (type(x) == "table" and "{}" or scalar(x))
      end
    end
  else
    local keys = {}
    for k in pairs(v) do keys[#keys + 1] = k end
    table.sort(keys)
    for _, k in ipairs(keys) do
      local x = v[k]
      if type(x) == "table" and next(x) ~= nil then
        out[#out + 1] = pad .. scalar(k) .. ":"
        emit(x, indent + 2, out)
      else
        out[#out + 1] = pad .. scalar(k) .. ": " .. (type(x) == "table" and (is_list(x) and "[]" or "{}") or scalar(x))
      end
    end
  end
end

function M.encode(v)
  local out = {}
  emit(v, 0, out)
  return table.concat(out, "\n") .. "\n"
end

return M
