-- "Did you mean": the closest of some words to one a user wrote, within a
-- typo's reach.  One rule for every such hint (unknown policies and
-- attributes, plugin exports, providers, test case keys).
--
--   suggest.closest(word, candidates) -> the closest candidate, or nil
--   suggest.distance(a, b)            -> optimal string alignment distance
local M = {}

-- Optimal string alignment distance (Damerau-Levenshtein with adjacent swaps).
local function distance(a, b)
  local la, lb = #a, #b
  if math.abs(la - lb) > 3 then return math.huge end
  local d = {}
  for i = 0, la do d[i] = { [0] = i } end
  for j = 0, lb do d[0][j] = j end
  for i = 1, la do
    for j = 1, lb do
      local cost = a:byte(i) == b:byte(j) and 0 or 1
      local v = math.min(d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + cost)
      if i > 1 and j > 1 and a:byte(i) == b:byte(j - 1) and a:byte(i - 1) == b:byte(j) then
        v = math.min(v, d[i - 2][j - 2] + 1)
      end
      d[i][j] = v
    end
  end
  return d[la][lb]
end
M.distance = distance

-- The closest candidate within a typo's reach (1 edit for short words, 2
-- else), case aside; ties go to the first in byte order.
function M.closest(word, candidates)
  local best, bd = nil, math.huge
  local limit = #word <= 4 and 1 or 2
  for _, c in ipairs(candidates) do
    local d = distance(word:lower(), c:lower())
    if c ~= word and d <= limit and (d < bd or (d == bd and c < best)) then best, bd = c, d end
  end
  return best
end

return M
