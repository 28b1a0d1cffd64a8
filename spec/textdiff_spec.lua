-- Unified diffs (lua/fluence/textdiff.lua), what `fluence diff` prints:
-- applying the diff to the old text gives the new one, hunks are what
-- diff -u writes where the edit is unambiguous, and texts too different for
-- the bounded search still get a correct diff.
local textdiff = require "fluence.textdiff"
local cli = require "support.cli"

-- Applies a unified diff to the lines of a: the lines of b.
local function patch(a, diff)
  local old, out, at = {}, {}, 1
  for l in a:gmatch("([^\n]*)\n") do old[#old + 1] = l end
  local lines = {}
  for l in diff:gmatch("([^\n]*)\n") do lines[#lines + 1] = l end
  assert(lines[1]:match("^%-%-%- ") and lines[2]:match("^%+%+%+ "))
  local i = 3
  while lines[i] do
    local astart, alen, _, blen = lines[i]:match("^@@ %-(%d+),(%d+) %+(%d+),(%d+) @@$")
    assert(astart, lines[i])
    astart, alen, blen = tonumber(astart), tonumber(alen), tonumber(blen)
    local first = alen == 0 and astart + 1 or astart
    while at < first do out[#out + 1] = old[at]; at = at + 1 end
    i = i + 1
    local seen_a, seen_b = 0, 0
    while lines[i] and not lines[i]:match("^@@") do
      local op, text = lines[i]:sub(1, 1), lines[i]:sub(2)
      if op == " " or op == "-" then
        assert.are.equal(old[at], text)
        at = at + 1
        seen_a = seen_a + 1
      end
      if op == " " or op == "+" then out[#out + 1] = text; seen_b = seen_b + 1 end
      i = i + 1
    end
    assert.are.equal(alen, seen_a)
    assert.are.equal(blen, seen_b)
  end
  while old[at] do out[#out + 1] = old[at]; at = at + 1 end
  return #out > 0 and table.concat(out, "\n") .. "\n" or ""
end

local function text(list) return #list > 0 and table.concat(list, "\n") .. "\n" or "" end

describe("textdiff", function()
  it("is nil for the same text", function()
    assert.is_nil(textdiff.unified("a\nb\n", "a\nb\n", "x", "y"))
  end)

  it("writes what diff -u writes for a plain change", function()
    local a = text{ "1", "2", "3", "4", "5", "6", "7", "8", "9", "10", "11", "12" }
    local b = text{ "1", "2", "3", "4", "five", "6", "7", "8", "9", "10", "11", "12", "13" }
    local d = textdiff.unified(a, b, "live", "applied")
    assert.are.equal("--- live\n+++ applied\n@@ -2,7 +2,7 @@\n 2\n 3\n 4\n-5\n+five\n 6\n 7\n 8\n" ..
                     "@@ -10,3 +10,4 @@\n 10\n 11\n 12\n+13\n", d)
    local dir = cli.tmpdir()
    cli.write(dir .. "/a", a); cli.write(dir .. "/b", b)
    local p = io.popen(("diff -u %s %s | tail -n +3"):format(cli.quote(dir .. "/a"), cli.quote(dir .. "/b")))
    local gnu = p:read("a")
    p:close()
    assert.are.equal(gnu, d:gsub("^[^\n]*\n[^\n]*\n", ""))
  end)

  it("creates and deletes whole texts", function()
    assert.are.equal("--- a\n+++ b\n@@ -0,0 +1,2 @@\n+x\n+y\n", textdiff.unified("", "x\ny\n", "a", "b"))
    assert.are.equal("--- a\n+++ b\n@@ -1,2 +0,0 @@\n-x\n-y\n", textdiff.unified("x\ny\n", "", "a", "b"))
  end)

  it("gives a diff that turns the old text into the new, for random edits", function()
    math.randomseed(27)
    for _ = 1, 200 do
      local a, b = {}, {}
      for i = 1, math.random(0, 40) do a[i] = tostring(math.random(1, 6)) end
      for i = 1, #a do
        local r = math.random()
        if r < 0.15 then b[#b + 1] = "new" .. math.random(1, 3)
        elseif r > 0.25 then b[#b + 1] = a[i] end
        if math.random() < 0.1 then b[#b + 1] = "ins" end
      end
      local ta, tb = text(a), text(b)
      local d = textdiff.unified(ta, tb, "a", "b")
      if ta == tb then assert.is_nil(d) else assert.are.equal(tb, patch(ta, d)) end
    end
  end)

  it("stays correct and bounded for texts with nothing in common", function()
    local a, b = {}, {}
    for i = 1, 3000 do a[i] = "a" .. i; b[i] = "b" .. i end
    local d = textdiff.unified(text(a), text(b), "a", "b")
    assert.are.equal(text(b), patch(text(a), d))
  end)
end)
