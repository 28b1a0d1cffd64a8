-- lua/fluence/audit.lua: the select-result annotation within its budget.
-- audit.encode skips encodings it knows cannot fit (dropped reasons larger
-- than the budget); its texts must be the ones the plain trimming sequence
-- gives, kept here as the reference.
local audit = require "fluence.audit"
local json = require "fluence.json"

-- The trimming sequence as it always was: encode, then trim and encode again.
local function reference(a, budget)
  local text = json.encode(a)
  if #text <= budget then return text end
  a.truncated = true
  for i = 2, #a.candidates do
    a.candidates[i].attributes, a.candidates[i].strings = json.object{}, json.object{}
  end
  text = json.encode(a)
  while #text > budget and #a.candidates > 1 do
    local keep = math.max(1, #a.candidates // 2)
    for i = #a.candidates, keep + 1, -1 do a.candidates[i] = nil end
    text = json.encode(a)
  end
  if #text > budget then
    a.dropped = json.object{}
    a.notes = json.array{ "audit trimmed to fit the 256 KiB annotation limit" }
    text = json.encode(a)
  end
  if #text > budget then
    a.candidates = json.array{ { name = a.chosen } }
    text = json.encode(a)
  end
  return text
end

local function selection(ncand, ndropped)
  local survivors, dropped = {}, {}
  for i = 1, ncand do
    survivors[i] = { name = ("c%04d"):format(i), attrs = { cost_usd = i / 10, region = "us-east-1", status = "ONLINE" } }
  end
  for i = 1, ndropped do dropped[("b%05d"):format(i)] = ("queue_size %d is not within 5 of the best (0)"):format(i) end
  return { policy = "min-cost", chosen = "c0001", survivors = survivors, dropped = dropped, notes = { "a note" } }
end

describe("audit.encode", function()
  it("gives the reference's text for every budget, small selections and huge ones", function()
    local cases = { { 3, 0 }, { 40, 10 }, { 2, 10000 }, { 300, 5000 }, { 1, 20000 } }
    for _, c in ipairs(cases) do
      local full = #json.encode(audit.build(selection(c[1], c[2])))
      local budgets = { 64, 200, 4000, 256 * 1024, full - 1, full, full + 1, full // 2, full // 3 }
      for _, budget in ipairs(budgets) do
        local s = selection(c[1], c[2])
        local a1, a2 = audit.build(s), audit.build(s)
        a2.time = a1.time                       -- the same second, whenever each was built
        assert.are.equal(reference(a2, budget), audit.encode(a1, budget),
                         ("%d candidates, %d dropped, budget %d"):format(c[1], c[2], budget))
      end
    end
  end)
end)
