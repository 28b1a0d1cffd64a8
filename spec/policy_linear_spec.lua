-- A policy's compilation and every built-in stage take work linear in the
-- policy's length (issue 24, class 4): a 339 KB prefer took 24 s (each
-- alternative formatted a reason quoting the whole stage for every backend),
-- and 30,000 conditions overflowed LPeg's stack (exit 70).
--
-- Work is measured as memory allocated with the collector stopped: the same
-- on every machine and under every checker, unlike a clock.  Four times the
-- text may cost a little over four times the memory, never sixteen.
local pipeline = require "fluence.pipeline"
local plugins = require "fluence.plugins"
local grammar = require "fluence.grammar"

local root = os.getenv("PWD")
local reg = plugins.load_policies{ source_dir = root, home = "", path = "" }

local function B(name, attrs) return { name = name, attrs = attrs or {} } end

-- backends that each alternative misses but the last
local function pool(n)
  local out = {}
  for i = 1, n do out[i] = B("b" .. i, { region = "zone" .. i, cost_usd = i }) end
  return out
end

-- KiB allocated while compiling text and running it over backends
local function cost(text, backends)
  collectgarbage("collect")
  collectgarbage("stop")
  local before = collectgarbage("count")
  local pl, err = pipeline.compile(text, { policies = reg, known_attributes = { "region" } })
  assert(pl, err and err.message)
  local r = pl:run(backends, { shots = 1000 })
  local after = collectgarbage("count")
  collectgarbage("restart")
  return after - before, r
end

-- the policy made by make(n), its cost at 300 and 1200 (small enough that a
-- quadratic regression, the collector stopped, stays within memory)
local function growth(make, backends)
  local small = cost(make(300), backends)
  local big, r = cost(make(1200), backends)
  return big / small, r
end

local function list(n, item, sep)
  local t = {}
  for i = 1, n do t[i] = item(i) end
  return table.concat(t, sep)
end

describe("policies linear in their length", function()
  local backends = pool(10)

  -- make(n): a policy of about n alternatives or values; chosen: what it picks
  local function linear(make, chosen)
    local ratio, r = growth(make, backends)
    assert.is_true(ratio < 6, ("4x the text cost %.1fx the memory"):format(ratio))
    assert.are.equal(chosen, r.chosen)
  end

  it("prefer: names", function()
    linear(function(n) return "prefer:" .. list(n, function(i) return "absent" .. i end, "|") .. "|b10" end, "b10")
  end)

  it("prefer: attribute tests", function()
    linear(function(n)
      return "prefer:" .. list(n, function(i) return "region=nowhere" .. i end, "|") .. "|region=zone7"
    end, "b7")
  end)

  it("require: a long list of values", function()
    linear(function(n) return "require:region=" .. list(n, function(i) return "nowhere" .. i end, "|") .. "|zone3" end,
           "b3")
  end)

  it("exclude: a long list of names", function()
    linear(function(n) return "exclude:" .. list(n, function(i) return "b" .. (i + 1) end, "|") end, "b1")
  end)

  it("many stages", function()
    local ratio = growth(function(n) return list(n // 10, function() return "min-cost~100%" end, ",") end, backends)
    assert.is_true(ratio < 6, ("4x the stages cost %.1fx the memory"):format(ratio))
  end)

  it("30,000 conditions parse (they overflowed LPeg's stack: exit 70)", function()
    local tree, err = grammar.parse("prefer:" .. list(30000, function(i) return "region=r" .. i end, "|"))
    assert.is_table(tree, err and err.msg)
    assert.are.equal(30000, #tree.stages[1].args.items)
    -- the first bad operator is still the one told
    local _, e = grammar.parse("require:" .. list(30000, function(i) return "x" .. i .. "=1" end, ",") .. ",y=<2,z=>3")
    assert.matches('^bad operator "=<"', e.msg)
  end)
end)

describe("drop reasons quote a long stage briefly", function()
  local backends = pool(5)

  local function reasons(text)
    local pl = assert(pipeline.compile(text, { policies = reg, known_attributes = { "region" } }))
    return pl:run(backends, { shots = 1000 }).dropped
  end

  it("prefer, exclude, require: at most the stage's first 60 bytes and its length", function()
    local long = list(20000, function(i) return "absent" .. i end, "|")
    for _, text in ipairs{ "prefer:" .. long .. "|b2", "exclude:b1|b3|b4|b5|" .. long,
                           "require:region=zone2|" .. long } do
      local why = reasons(text)
      assert.is_not_nil(next(why), text:sub(1, 20))
      for name, r in pairs(why) do
        assert.is_true(#r < 200, name .. ": a reason of " .. #r .. " bytes")
        assert.matches("%.%.%. %(%d+ bytes%)", r)
      end
    end
    local text = "prefer:" .. long .. "|b2"
    assert.are.equal(("not preferred (%s... (%d bytes) chose b2)"):format(text:sub(1, 60), #text), reasons(text).b1)
  end)

  it("a short stage is quoted whole, as before", function()
    assert.are.equal("not preferred (prefer:zzz|b2 chose b2)", reasons("prefer:zzz|b2").b1)
    assert.are.equal("excluded by exclude:b1", reasons("exclude:b1").b1)
  end)

  it("never cuts a UTF-8 character", function()
    local brief = require("fluence.errors").brief
    local s = ("é"):rep(100)
    local b = brief(s)
    assert.is_true(utf8.len(b) ~= nil, b)
    assert.are.equal(("é"):rep(30) .. "... (200 bytes)", b)
  end)
end)

-- The messages on stderr too (errors.brief): a 1 MB policy made the
-- "selected backend" line 1 MB long.
describe("messages quote a long policy briefly", function()
  local cli = require "support.cli"
  local ATTRS = root .. "/examples/quickstart/attributes.yaml"
  after_each(cli.cleanup)

  local function select(policy)
    local dir = cli.tmpdir()
    return cli.run{ "select", "-f", cli.write(dir .. "/pod.yaml", cli.POD:format(policy)), "--attributes", ATTRS,
                    "--offline" }
  end

  local long = list(5000, function(i) return "absent" .. i end, "|")

  it("the selected backend line", function()
    local policy = "prefer:" .. long .. "|gpu-l4,min-cost"
    local r = select(policy)
    assert.are.equal(0, r.code, r.err)
    assert.are.equal(('selected backend "gpu-l4" for Pod/p (policy "%s... (%d bytes)")'):format(policy:sub(1, 60), #policy),
                     r.err:match("selected backend [^\n]*"))
    assert.is_true(#r.err < 1000, #r.err .. " bytes on stderr")
    -- the manifest's audit records the policy whole
    assert.is_not_nil(r.out:find(long, 1, true))
  end)

  it("a stage that eliminated every candidate", function()
    local stage = "exclude:gpu-l4|gpu-a100|gpu-t4|" .. long
    local r = select(stage .. ",min-cost")
    assert.are.equal(1, r.code, r.err)
    assert.are.equal("", r.out)
    assert.matches(('policy "%s%%.%%.%%. %%(%d bytes%%)" eliminated all candidates'):format(
                     stage:sub(1, 60):gsub("%p", "%%%0"), #stage), r.err)
    assert.is_true(#r.err < 1000, #r.err .. " bytes on stderr")
  end)
end)
