-- Kubernetes resource quantities ("500m", "4Gi", "1e3", "2") as numbers.
local quantity = {}

-- The forms core/kubelists.c reads from the cluster (spec/quantity_spec.lua
-- holds the two to each other): [+-] digits [. digits], then nothing, a
-- suffix or an exponent.
local suffix = {
  [""] = 1, n = 1e-9, u = 1e-6, m = 1e-3, k = 1e3, M = 1e6, G = 1e9, T = 1e12, P = 1e15, E = 1e18,
  Ki = 2^10, Mi = 2^20, Gi = 2^30, Ti = 2^40, Pi = 2^50, Ei = 2^60,
}

-- parse("4Gi") -> 4294967296; parse("bad") -> nil, reason
local known = {}          -- text -> value: a stream repeats a few quantities
function quantity.parse(s)
  if type(s) == "number" then return s end
  if type(s) ~= "string" then return nil, "not a quantity" end
  local v = known[s]
  if v then return v end
  local num, rest = s:match("^%s*([+-]?%d*%.?%d*)(.-)%s*$")
  local mult = num and num:find("%d") and suffix[rest]
  if num and num:find("%d") and not mult then
    local e = rest:match("^[eE]([+-]?%d+)$")
    mult = e and 10.0 ^ tonumber(e)
  end
  if not mult then return nil, ("%q is not a Kubernetes quantity"):format(s) end
  v = tonumber(num) * mult
  known[s] = v
  return v
end

return quantity
