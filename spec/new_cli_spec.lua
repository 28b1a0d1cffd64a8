-- `fluence new policy|provider NAME`: the scaffold passes `fluence test`
-- and `fluence check` untouched, is found by select, and overwrites nothing.
local cli = require "support.cli"

local JOB = [[
apiVersion: batch/v1
kind: Job
metadata:
  name: j
  annotations:
    fluence.flux-framework.org/select-policy: "%s"
spec:
  template:
    spec:
      schedulerName: fluence
      containers: [{name: a, image: b}]
]]

describe("fluence new", function()
  teardown(function() cli.cleanup() end)

  it("makes a policy and a provider whose tests pass as generated, under any valid name", function()
    local dir = cli.tmpdir() .. "/plugins"
    for _, args in ipairs{ { "policy", "cheap-enough" }, { "provider", "inventory" }, { "policy", "my.v2_policy" },
                           { "provider", "x-1.y" }, { "provider", "null" } } do
      local run = { "new", args[1], args[2], "--dir", dir }
      -- (one run under valgrind is enough: the others take the same paths)
      if args[2] ~= "cheap-enough" then run.valgrind = false end
      local r = cli.run(run)
      assert.are.equal(0, r.code, r.err)
      assert.are.equal("", r.err)
      assert.truthy(r.out:find("created " .. dir .. "/tests/" .. args[2] .. "_spec.lua\n", 1, true), r.out)
      assert.truthy(r.out:find("next: fluence test " .. dir .. "\n", 1, true), r.out)
    end
    local r = cli.run{ "test", dir }
    assert.are.equal("", r.err)
    assert.are.equal(0, r.code)
    assert.are.equal("30 passed, 0 failed\n", r.out)
    r = cli.run{ "check", dir }
    assert.are.equal("", r.err)
    assert.are.equal(0, r.code)
    -- and select uses them
    local job = cli.write(cli.tmpdir() .. "/job.yaml", JOB:format("cheap-enough:1"))
    local attrs = cli.write(cli.tmpdir() .. "/a.yaml", "backends:\n  - {name: a, attributes: {cost_usd: 0.5}}\n" ..
                                                       "  - {name: b, attributes: {cost_usd: 2}}\n")
    r = cli.run{ "select", "-f", job, "--attributes", attrs, "--offline", "--policy-dir", dir .. "/policies", valgrind = false }
    assert.are.equal(0, r.code, r.err)
    assert.truthy(r.err:find("dropped b: cost_usd 2 is over the limit of 1", 1, true), r.err)
  end)

  it("a wrong edit makes its tests fail with a clear line (the scaffold's tests can fail)", function()
    local dir = cli.tmpdir()
    assert.are.equal(0, cli.run{ "new", "policy", "cheap", "--dir", dir, valgrind = false }.code)
    local path = dir .. "/policies/cheap.lua"
    cli.write(path, (cli.slurp(path):gsub("cost > limit", "cost >= limit * 100")))
    local r = cli.run{ "test", dir }
    assert.are.equal(1, r.code)
    assert.truthy(r.out:find("tests/cheap_spec.lua:16: cheap keeps the backends within the limit, cheapest first: " ..
                             'expected { "small" }, got { "small", "large" } (first difference at [2]: "large", not nil)\n',
                             1, true), r.out)
    assert.truthy(r.out:find("tests/cheap.test.yaml:24: the cheapest backend within the limit: Job/train: expected large " ..
                             'dropped ("over the limit"), but it was not dropped\n', 1, true), r.out)
    assert.truthy(r.out:find("\n2 passed, 4 failed\n$"), r.out)
  end)

  it("defaults to ~/.fluence, the search path's own directory", function()
    local home = cli.tmpdir()
    local r = cli.run{ "new", "provider", "inv", env = { HOME = home }, valgrind = false }
    assert.are.equal(0, r.code, r.err)
    assert.truthy(cli.slurp(home .. "/.fluence/providers/inv.lua"))
    r = cli.run{ "providers", "-o", "name", env = { HOME = home }, valgrind = false }
    assert.truthy(r.out:find("\ninv\n", 1, true), r.out)
    r = cli.run{ "test", home .. "/.fluence", env = { HOME = home } }
    assert.are.equal(0, r.code, r.out .. r.err)
  end)

  it("overwrites nothing, and checks its arguments", function()
    local dir = cli.tmpdir()
    assert.are.equal(0, cli.run{ "new", "policy", "p", "--dir", dir, valgrind = false }.code)
    cli.write(dir .. "/policies/p.lua", "-- mine\n")
    local r = cli.run{ "new", "policy", "p", "--dir", dir }
    assert.are.equal(3, r.code)
    assert.are.equal("", r.out)
    assert.truthy(r.err:find(dir .. "/policies/p.lua already exists; nothing was written", 1, true), r.err)
    assert.are.equal("-- mine\n", cli.slurp(dir .. "/policies/p.lua"))
    for _, bad in ipairs{ { "new" }, { "new", "stage", "x" }, { "new", "policy" }, { "new", "policy", "9lives" },
                          { "new", "policy", "a/b" }, { "new", "policy", "a", "b" } } do
      if bad[3] ~= "9lives" then bad.valgrind = false end
      r = cli.run(bad)
      assert.are.equal(2, r.code, table.concat(bad, " "))
      assert.are.equal("", r.out)
    end
    -- a file where a directory must go
    cli.write(dir .. "/file", "x")
    r = cli.run{ "new", "policy", "q", "--dir", dir .. "/file" }
    assert.are.equal(3, r.code)
    assert.truthy(r.err:find("cannot create " .. dir .. "/file", 1, true), r.err)
  end)

  it("notes that a built-in's name replaces the built-in", function()
    local r = cli.run{ "new", "policy", "min", "--dir", cli.tmpdir(), valgrind = false }
    assert.are.equal(0, r.code)
    assert.truthy(r.err:find('note: policy "min" replaces the built-in', 1, true), r.err)
  end)
end)
