-- `fluence test --coverage` and --coverage-min: the lines of each plugin file
-- the tests ran, counted by a line hook in the sandbox, against the lines
-- that hold instructions (read from the compiled chunk, as luac lists them).
local cli = require "support.cli"
local coverage = require "fluence.testing.coverage"

local q = cli.quote

local have = cli.have

-- A project: a policy with two branches, a spec that takes one, and a
-- provider no test loads.
local POLICY = [[
return {
  name = "pick",
  description = "pick keeps the backends marked ok",
  compile = function(stage, ctx)
    return function(backends)
      local keep, reasons = {}, {}
      for _, b in ipairs(backends) do
        if b.attrs.ok then
          keep[#keep + 1] = b
        else
          reasons[b.name] = "not ok"
        end
      end
      return keep, reasons
    end
  end,
}
]]

local SPEC = [[
local t = require "fluence.testing"
describe("pick", function()
  it("keeps the one named", function()
    local r = t.rank("pick", { { name = "a", attrs = { ok = true } } })
    assert.are.same({ "a" }, r.order)
  end)
end)
]]

local PROVIDER = [[
return {
  name = "unused",
  description = "never loaded by a test",
  candidates = function(ctx)
    return { { name = "x", attrs = {} } }
  end,
}
]]

local function project()
  local d = cli.tmpdir()
  os.execute("mkdir -p " .. q(d .. "/policies") .. " " .. q(d .. "/providers") .. " " .. q(d .. "/tests"))
  cli.write(d .. "/policies/pick.lua", POLICY)
  cli.write(d .. "/providers/unused.lua", PROVIDER)
  cli.write(d .. "/tests/pick_spec.lua", SPEC)
  return d
end

-- The report's row for a file: lines, ran, missed (a string).
local function row(out, file)
  local lines, ran, missed = out:match(file:gsub("%p", "%%%0") .. "%s+(%d+)%s+(%d+)%s+[%d.]+%%%s*([^\n]*)")
  return tonumber(lines), tonumber(ran), missed
end

describe("fluence test --coverage", function()
  teardown(function() cli.cleanup() end)

  it("reports per plugin file the lines run and the lines missed", function()
    local d = project()
    local r = cli.run{ "test", d, "--coverage" }
    assert.are.equal(0, r.code, r.out .. r.err)
    assert.truthy(r.out:find("1 passed, 0 failed\n", 1, true), r.out)
    -- the else branch (line 11) never ran; every other line with an
    -- instruction did
    local lines, ran, missed = row(r.out, d .. "/policies/pick.lua")
    assert.are.equal(13, lines, r.out)
    assert.are.equal(12, ran)
    assert.are.equal("11", missed)
    -- a plugin no test loaded: every line missed
    lines, ran, missed = row(r.out, d .. "/providers/unused.lua")
    assert.are.equal(0, ran, r.out)
    assert.truthy(lines > 0)
    assert.are.equal("1-3, 5-7", missed)   -- line 4 (candidates = function) holds no instruction of its own
    assert.matches("\ntotal%s+19%s+12%s+63%.2%%\n$", r.out)
  end)

  it("fails below --coverage-min, passes at or above it", function()
    local d = project()
    local r = cli.run{ "test", d, "--coverage-min", "70" }
    assert.are.equal(1, r.code)
    assert.are.equal("fluence: test: the tests ran 63.2% of the plugins' lines, below --coverage-min 70\n", r.err)
    assert.truthy(r.out:find("coverage", 1, true))
    r = cli.run{ "test", d, "--coverage-min", "63" }
    assert.are.equal(0, r.code, r.err)
  end)

  it("refuses a --coverage-min that is not a percentage", function()
    for _, v in ipairs{ "abc", "-5", "101" } do
      local r = cli.run{ "test", ".", "--coverage-min", v }
      assert.are.equal(2, r.code, v)
      assert.are.equal("", r.out)
    end
  end)

  it("refuses --coverage-min 101 before reading the tests (a broken test file is not the answer)", function()
    local d = project()
    cli.write(d .. "/tests/broken_spec.lua", "this is not lua (\n")
    local r = cli.run{ "test", d, "--coverage-min", "101" }
    assert.are.equal(2, r.code, r.err)
    assert.are.equal("", r.out)
    assert.matches("--coverage-min: \"101\" is not a percentage", r.err, 1, true)
  end)

  it("writes the report on stderr under -o junit, keeping stdout XML", function()
    local d = project()
    local r = cli.run{ "test", d, "--coverage", "-o", "junit" }
    assert.are.equal(0, r.code, r.err)
    assert.matches("^<%?xml", r.out)
    assert.falsy(r.out:find("coverage", 1, true))
    assert.truthy(r.err:find("pick.lua", 1, true))
  end)

  it("counts the lines luac lists for every instruction of every function", function()
    if not have("luac5.4") then pending("luac5.4 is not installed (Debian: lua5.4)") return end
    local files = {}
    for f in io.popen("ls " .. cli.root .. "/policies/*.lua " .. cli.root .. "/providers/*.lua " ..
                      cli.root .. "/examples/policies/*.lua"):lines() do files[#files + 1] = f end
    assert.truthy(#files > 5)
    for _, f in ipairs(files) do
      -- a vararg function's VARARGPREP (its first instruction) fires no
      -- line event: luac lists its line, a line hook never sees it
      local want = {}
      for line in io.popen("luac5.4 -l -l -p " .. q(f)):lines() do
        local pc, l, op = line:match("^%s+(%d+)%s+%[(%d+)%]%s+(%u+)")
        if l and not (pc == "1" and op == "VARARGPREP") then want[tonumber(l)] = true end
      end
      local got = assert(coverage.executable_lines(cli.slurp(f), f))
      for l in pairs(got) do assert.truthy(want[l], f .. ": line " .. l .. " has no instruction") end
      for l in pairs(want) do assert.truthy(got[l], f .. ": line " .. l .. " with an instruction left out") end
    end
  end)
end)
