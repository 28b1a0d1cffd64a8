-- What kubectl makes of YAML, for the specs that hold fluence's JSON to it
-- (spec/yaml_kubectl_spec.lua) and the tool that records its answers
-- (tools/yaml-kubectl-golden.lua).
--
--   M.available()            the real kubectl is on PATH
--   M.local_json(yaml)       -> {out, err, code}: `kubectl patch --local -p {}`
--                            prints the object exactly as kubectl read it,
--                            no cluster needed (the same conversion `apply`
--                            and `create` make before sending)
--   M.compact(json)          the text without whitespace outside strings
--   M.split(text)            -> {raw, ...}: the JSON values of a text of several
--   M.elements(json)         -> {raw, ...}: an array's elements
--   M.objects(json)          -> {raw, ...}: the objects of -o json output (a
--                            List's items, or the one object)
--   M.members(json)          -> {{key =, raw =}, ...}: an object's members in
--                            order, each value's text exactly as written
--   M.canonical(json)        one text for every writing of the same value
--   M.same_value(a, b)       two raw JSON value texts say the same thing:
--                            numbers and literals byte for byte (1000 is not
--                            1e3 to a Go decoder of int32), strings by value
--                            (\u003c and < are one character), members in
--                            any order
--   M.read_table(path)       -> {{form =, answer =, line =}, ...} from a
--                            FORM<TAB>ANSWER file (# comments)
local json = require "fluence.json"

local M = {}

function M.available()
  return os.execute("command -v kubectl >/dev/null 2>&1") == true
end

function M.local_json(yaml)
  local cli = require "support.cli"
  return cli.run{ bin = "kubectl", "patch", "--local", "-f", "-", "-p", "{}", "--type", "merge", "-o", "json",
                  stdin = yaml, env = { KUBECONFIG = "/dev/null" }, valgrind = false }
end

function M.compact(text)
  local out, i, n = {}, 1, #text
  while i <= n do
    local c = text:sub(i, i)
    if c == '"' then
      local j = i + 1
      while j <= n do
        local d = text:sub(j, j)
        if d == "\\" then j = j + 2
        elseif d == '"' then break
        else j = j + 1 end
      end
      out[#out + 1] = text:sub(i, j)
      i = j + 1
    elseif c:match("%s") then
      i = i + 1
    else
      local j = i
      while j <= n and not text:sub(j, j):match('[%s"]') do j = j + 1 end
      out[#out + 1] = text:sub(i, j - 1)
      i = j
    end
  end
  return table.concat(out)
end

-- the end of the string starting at i (its closing quote)
local function string_end(s, i)
  local j = i + 1
  while s:sub(j, j) ~= '"' do j = j + (s:sub(j, j) == "\\" and 2 or 1) end
  return j
end

-- the end of the JSON value starting at i of compact text s
local function value_end(s, i)
  local c = s:sub(i, i)
  if c == '"' then return string_end(s, i) end
  if c ~= "{" and c ~= "[" then return (s:find("[,}%]]", i) or #s + 1) - 1 end
  local depth, j = 0, i
  while true do
    c = s:sub(j, j)
    if c == '"' then j = string_end(s, j)
    elseif c == "{" or c == "[" then depth = depth + 1
    elseif c == "}" or c == "]" then
      depth = depth - 1
      if depth == 0 then return j end
    end
    j = j + 1
  end
end

-- the values of compact array or object text s: {{key =, raw =}, ...}
-- (key nil in an array)
local function items(s)
  local out, i, obj = {}, 2, s:sub(1, 1) == "{"
  while i <= #s and s:sub(i, i) ~= (obj and "}" or "]") do
    local key
    if obj then
      local kend = value_end(s, i)
      key = json.decode(s:sub(i, kend))
      i = kend + 2
    end
    local vend = value_end(s, i)
    out[#out + 1] = { key = key, raw = s:sub(i, vend) }
    i = vend + 2
  end
  return out
end

function M.members(text)
  local s = M.compact(text)
  assert(s:sub(1, 1) == "{", "not an object: " .. s:sub(1, 40))
  return items(s)
end

-- The elements of array text (raw), each as compact raw text
function M.elements(text)
  local s = M.compact(text)
  assert(s:sub(1, 1) == "[", "not an array: " .. s:sub(1, 40))
  local out = {}
  for _, it in ipairs(items(s)) do out[#out + 1] = it.raw end
  return out
end

-- The objects of fluence's or kubectl's -o json output: a List's items, or
-- the one object
function M.objects(text)
  local s = M.compact(text)
  if s:sub(1, 1) == "[" then return M.elements(s) end
  local list, got = false, nil
  for _, m in ipairs(M.members(s)) do
    if m.key == "kind" and m.raw == '"List"' then list = true end
    if m.key == "items" then got = m.raw end
  end
  if list and got then return M.elements(got) end
  return { s }
end

-- One text for every way of writing the same JSON value: members sorted by
-- key, strings with one escaping; numbers and literals as written.
function M.canonical(raw)
  local s = M.compact(raw)
  local c = s:sub(1, 1)
  if c == '"' then return json.encode(json.decode(s)) end
  if c ~= "{" and c ~= "[" then return s end
  local parts = {}
  for _, it in ipairs(items(s)) do
    parts[#parts + 1] = (it.key and json.encode(it.key) .. ":" or "") .. M.canonical(it.raw)
  end
  if c == "{" then table.sort(parts) end
  return c .. table.concat(parts, ",") .. (c == "{" and "}" or "]")
end

function M.same_value(a, b)
  return M.canonical(a) == M.canonical(b)
end

-- The values of a text of JSON values one after another (kubectl's output
-- for several objects), each as compact raw text.
function M.split(text)
  local s, out, i = M.compact(text), {}, 1
  while i <= #s do
    local e = value_end(s, i)
    out[#out + 1] = s:sub(i, e)
    i = e + 1
  end
  return out
end

function M.read_table(path)
  local rows, n = {}, 0
  for line in assert(io.open(path, "rb")):lines() do
    n = n + 1
    if not line:match("^#") and line ~= "" then
      local form, answer = line:match("^(.-)\t(.*)$")
      assert(form, path .. ":" .. n .. ": no tab")
      rows[#rows + 1] = { form = form, answer = answer, line = n }
    end
  end
  return rows
end

return M
