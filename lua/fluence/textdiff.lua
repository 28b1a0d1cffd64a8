-- Unified diffs of two texts, line by line, as `diff -u` writes them (what
-- `fluence diff` prints, as `kubectl diff` does through diff(1); fluence
-- starts no subprocess).  Myers' O(ND) algorithm after the common head and
-- tail are set aside; past MAX_D (500) differences (huge, wholly different texts)
-- the hunk is the whole old text removed and the new one added, still a
-- correct diff, in bounded time.
--
--   textdiff.unified(a, b, label_a, label_b [, context]) -> text | nil
--     nil when a and b are the same; context: lines around each change (3)
local M = {}

M.MAX_D = 500

local function split(s)
  local out = {}
  for l in s:gmatch("([^\n]*)\n") do out[#out + 1] = l end
  local tail = s:match("([^\n]+)$")
  if tail then out[#out + 1] = tail end
  return out
end

-- The edit script of a[lo_a..hi_a] -> b[lo_b..hi_b]: { {" "|"-"|"+", line}, ... }
local function myers(a, b)
  local n, m = #a, #b
  local v, trace = { [1] = 0 }, {}
  for d = 0, math.min(n + m, M.MAX_D) do
    local snap = {}
    for k = -d - 1, d + 1 do snap[k] = v[k] end
    trace[d] = snap
    for k = -d, d, 2 do
      local x
      if k == -d or (k ~= d and v[k - 1] < v[k + 1]) then x = v[k + 1] else x = v[k - 1] + 1 end
      local y = x - k
      while x < n and y < m and a[x + 1] == b[y + 1] do x, y = x + 1, y + 1 end
      v[k] = x
      if x >= n and y >= m then
        -- walk back through the trace
        local ops = {}
        local cx, cy = n, m
        for dd = d, 0, -1 do
          local vv = trace[dd]
          local kk = cx - cy
          local pk
          if kk == -dd or (kk ~= dd and vv[kk - 1] < vv[kk + 1]) then pk = kk + 1 else pk = kk - 1 end
          local px = vv[pk]
          local py = px - pk
          while cx > px and cy > py do
            ops[#ops + 1] = { " ", a[cx] }
            cx, cy = cx - 1, cy - 1
          end
          if dd > 0 then
            if cx == px then ops[#ops + 1] = { "+", b[cy] }; cy = cy - 1
            else ops[#ops + 1] = { "-", a[cx] }; cx = cx - 1 end
          end
        end
        local r = {}
        for i = #ops, 1, -1 do r[#r + 1] = ops[i] end
        return r
      end
    end
  end
  -- too different: all out, all in
  local ops = {}
  for _, l in ipairs(a) do ops[#ops + 1] = { "-", l } end
  for _, l in ipairs(b) do ops[#ops + 1] = { "+", l } end
  return ops
end

local function script(a, b)
  local head = 0
  while head < #a and head < #b and a[head + 1] == b[head + 1] do head = head + 1 end
  local tail = 0
  while tail < #a - head and tail < #b - head and a[#a - tail] == b[#b - tail] do tail = tail + 1 end
  local ma, mb = {}, {}
  for i = head + 1, #a - tail do ma[#ma + 1] = a[i] end
  for i = head + 1, #b - tail do mb[#mb + 1] = b[i] end
  local ops = {}
  for i = 1, head do ops[#ops + 1] = { " ", a[i] } end
  for _, op in ipairs(myers(ma, mb)) do ops[#ops + 1] = op end
  for i = #a - tail + 1, #a do ops[#ops + 1] = { " ", a[i] } end
  return ops
end

function M.unified(a, b, label_a, label_b, context)
  if a == b then return nil end
  context = context or 3
  local ops = script(split(a), split(b))
  -- line numbers before each op
  local an, bn, changes = {}, {}, {}
  local x, y = 0, 0
  for i, op in ipairs(ops) do
    an[i], bn[i] = x, y
    if op[1] ~= "+" then x = x + 1 end
    if op[1] ~= "-" then y = y + 1 end
    if op[1] ~= " " then changes[#changes + 1] = i end
  end
  if #changes == 0 then return nil end      -- only the final newline differs
  local out = { "--- " .. label_a .. "\n", "+++ " .. label_b .. "\n" }
  local j = 1
  while j <= #changes do
    local s, e = changes[j], changes[j]
    while changes[j + 1] and changes[j + 1] - e - 1 <= 2 * context do
      j = j + 1
      e = changes[j]
    end
    j = j + 1
    local from, to = math.max(1, s - context), math.min(#ops, e + context)
    local alen, blen = 0, 0
    for i = from, to do
      if ops[i][1] ~= "+" then alen = alen + 1 end
      if ops[i][1] ~= "-" then blen = blen + 1 end
    end
    -- an empty side names the line before it (diff -u: "-0,0")
    out[#out + 1] = ("@@ -%d,%d +%d,%d @@\n"):format(alen > 0 and an[from] + 1 or an[from], alen,
                                                  blen > 0 and bn[from] + 1 or bn[from], blen)
    for i = from, to do out[#out + 1] = ops[i][1] .. ops[i][2] .. "\n" end
  end
  return table.concat(out)
end

return M
