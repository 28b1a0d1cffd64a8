-- The pipeline engine (lua/fluence/pipeline.lua) with the built-in policy
-- plugins: compile errors with carets, every policy, and what a run records.
local pipeline = require "fluence.pipeline"
local plugins = require "fluence.plugins"
local cli = require "support.cli"

local root = os.getenv("PWD")
local reg = plugins.load_policies{ source_dir = root, home = "", path = "" }

local function B(name, attrs) return { name = name, attrs = attrs or {} } end

local function compile(text, opts)
  opts = opts or {}
  opts.policies = opts.policies or reg
  local pl, err = pipeline.compile(text, opts)
  assert(pl, err and err.message)
  return pl
end

local function run(text, backends, opts, request)
  return compile(text, opts):run(backends, request or { shots = 1000 })
end

local function names(list)
  local out = {}
  for i, b in ipairs(list) do out[i] = type(b) == "table" and b.name or b end
  return out
end

local function cerr(text, opts)
  opts = opts or {}
  opts.policies = opts.policies or reg
  local pl, err = pipeline.compile(text, opts)
  assert.is_nil(pl)
  assert.are.equal("INPUT", err.kind)
  return err.message
end

local pool = {
  B("c", { cost_usd = 0.9, queue_size = 9, memory_gb = 80, throughput = 5, qubits = 20 }),
  B("a", { cost_usd = 1.3, queue_size = 2, memory_gb = 16, throughput = 30, status = "offline", qubits = 20 }),
  B("b", { cost_usd = 1.0, queue_size = 5, memory_gb = 24, throughput = 10, status = "ONLINE",
           region = "us-east-1", qubits = 30 }),
  B("d", { queue_size = 1, status = "Online", region = "us east" }),
}

describe("pipeline.compile", function()
  it("resolves stage words to plugins, keeping text and positions", function()
    local pl = compile("min-cost, require:memory_gb>=24,online-only")
    assert.are.equal("min-cost, require:memory_gb>=24,online-only", pl.text)
    local s = pl.stages
    assert.are.same({ "min-cost", "min", "cost", 1 }, { s[1].text, s[1].head, s[1].suffix, s[1].pos })
    assert.are.same({ "require:memory_gb>=24", "require", 11 }, { s[2].text, s[2].head, s[2].pos })
    assert.are.equal("memory_gb>=24", s[2].args.raw)
    assert.are.equal("online-only", s[3].head)
  end)

  it("reports the attributes a pipeline reads", function()
    local set, complete = compile("min-cost,max-queue,require:min_qubits=2,region=x,online-only,prefer:a," ..
                                  "weighted:throughput=1,memory_gb=-1"):attributes()
    assert.are.same({ cost_usd = true, queue_size = true, qubits = true, region = true, status = true,
                      throughput = true, memory_gb = true }, set)
    assert.is_true(complete)
  end)

  describe("errors point into the text", function()
    it("an unknown attribute after min-, with a suggestion: not an unknown policy", function()
      assert.are.equal('select-policy:1:14: unknown attribute "kost" in "min-kost" (did you mean "min-cost"?)\n' ..
                       '    require:x>=1,min-kost\n' ..
                       '                 ^', cerr("require:x>=1,min-kost"))
    end)
    it("unknown policy names: suggestions from plugin names, none when far", function()
      assert.are.equal('select-policy:1:1: unknown policy "onlin-only" (did you mean "online-only"?)\n' ..
                       '    onlin-only\n    ^', cerr("onlin-only"))
      assert.are.equal('select-policy:1:10: unknown policy "fastest"\n' ..
                       '    min-cost,fastest\n             ^', cerr("min-cost,fastest"))
      assert.are.equal('select-policy:1:1: unknown attribute "qbits" in "max-qbits" (did you mean "max-qubits"?)\n' ..
                       '    max-qbits\n    ^', cerr("max-qbits"))
    end)
    it("suggests the right case", function()
      assert.are.equal('select-policy:1:1: unknown policy "Min-Cost" (did you mean "min-cost"?)\n' ..
                       '    Min-Cost\n    ^', cerr("Min-Cost"))
    end)
    it("uses the caller's name and lines of a multi-line text", function()
      assert.are.equal('job.yaml:select-policy:2:3: unknown policy "prefr" (did you mean "prefer"?)\n' ..
                       '      prefr:x\n      ^',
                       cerr("min-cost,\n  prefr:x", { name = "job.yaml:select-policy" }))
    end)
    it("parse errors", function()
      assert.are.equal('select-policy:1:10: missing value after "|"\n    prefer:a|\n             ^',
                       cerr("prefer:a|"))
      assert.are.equal('select-policy:1:10: empty stage\n    min-cost,,min-queue\n             ^',
                       cerr("min-cost,,min-queue"))
      assert.are.equal('select-policy:1:18: bad operator "=<" (expected one of = != < <= > >=)\n' ..
                       '    require:memory_gb=<4\n                     ^', cerr("require:memory_gb=<4"))
    end)
    it("bad numbers", function()
      assert.are.equal('select-policy:1:20: bad number "abc"\n    require:min_qubits=abc\n' ..
                       '                       ^', cerr("require:min_qubits=abc"))
      assert.are.equal('select-policy:1:20: bad number "lots"\n    require:memory_gb>=lots\n' ..
                       '                       ^', cerr("require:memory_gb>=lots"))
      assert.are.equal('select-policy:1:21: bad weight "x" (expected a number)\n' ..
                       '    weighted:throughput=x\n                        ^', cerr("weighted:throughput=x"))
    end)
    it("misspelt attributes in require and weighted", function()
      assert.are.equal('select-policy:1:13: unknown attribute "memry_gb" (did you mean "memory_gb"?)\n' ..
                       '    require:min_memry_gb=4\n                ^', cerr("require:min_memry_gb=4"))
      assert.are.equal('select-policy:1:10: unknown attribute "cots" (did you mean "cost"?)\n' ..
                       '    weighted:cots=1\n             ^', cerr("weighted:cots=1"))
    end)
    it("accepts an attribute the caller knows even when it is close to a well-known one", function()
      assert.is_truthy(pipeline.compile("min-costs", { policies = reg, known_attributes = { "costs" } }))
      assert.is_truthy(pipeline.compile("min-latency_ms", { policies = reg }))
    end)
    it("arguments and tolerances a policy does not take", function()
      assert.are.equal('select-policy:1:13: policy "online-only" takes no arguments\n' ..
                       '    online-only:x\n                ^', cerr("online-only:x"))
      assert.are.equal('select-policy:1:8: policy "prefer" takes no tolerance\n' ..
                       '    prefer~5:a\n           ^', cerr("prefer~5:a"))
      assert.are.equal('select-policy:1:8: policy "require" needs arguments (require:...)\n' ..
                       '    require\n           ^', cerr("require"))
      assert.are.equal('select-policy:1:10: prefer takes backend names or tests separated by "|", found "x=1"\n' ..
                       '    prefer:a,x=1\n             ^', cerr("prefer:a,x=1"))
      assert.are.equal('select-policy:1:20: policy "require" takes no alternatives ("|" between conditions)\n' ..
                       '    require:memory_gb>1|region=x\n                       ^', cerr("require:memory_gb>1|region=x"))
      assert.are.equal('select-policy:1:10: policy "exclude" takes no alternatives ("|" between conditions)\n' ..
                       '    exclude:a|region=x\n             ^', cerr("exclude:a|region=x"))
      assert.are.equal('select-policy:1:9: expected a condition such as min_qubits=10 or memory_gb>=24, ' ..
                       'found "foo"\n    require:foo\n            ^', cerr("require:foo"))
      assert.are.equal('select-policy:1:21: ">=" compares with one number, not a list\n' ..
                       '    require:memory_gb>=1|2\n                        ^', cerr("require:memory_gb>=1|2"))
      assert.are.equal('select-policy:1:10: tolerance must not be negative\n' ..
                       '    min-cost~-1\n             ^', cerr("min-cost~-1"))
    end)
  end)
end)

describe("pipeline:run", function()
  it("sorts the pool by name before the first stage and picks the head", function()
    local r = run("prefer:nothing", pool)
    assert.is_true(r.ok)
    assert.are.same({ "a", "b", "c", "d" }, names(r.survivors))
    assert.are.equal("a", r.chosen)
    assert.are.same({ { text = "prefer:nothing", kept = { "a", "b", "c", "d" }, dropped = {},
                        order_changed = false } }, r.stages)
  end)

  it("never changes the backends it is given", function()
    local before = { #pool, pool[1].name }
    run("min-cost", pool)
    assert.are.same({ 4, "c" }, before)
    assert.are.equal("c", pool[1].name)
  end)

  describe("min-X / max-X", function()
    it("drops backends lacking the attribute and keeps the best", function()
      local r = run("min-cost", pool)
      assert.are.same({ "c" }, names(r.survivors))
      assert.are.same({ a = "cost_usd 1.3 is not within 0 of the best (0.9)",
                        b = "cost_usd 1 is not within 0 of the best (0.9)",
                        d = 'no attribute "cost_usd"' }, r.dropped)
    end)
    it("keeps the best-equivalent group within --cost-tol (absolute), best first", function()
      local r = run("min-cost", pool, { cost_tol = 0.1 })
      assert.are.same({ "c", "b" }, names(r.survivors))
      assert.is_true(r.stages[1].order_changed)
      r = run("min-cost", pool, { cost_tol = 0.4 })
      assert.are.same({ "c", "b", "a" }, names(r.survivors))
    end)
    it("applies --cost-tol to queue too, but not to other attributes", function()
      assert.are.same({ "d", "a" }, names(run("min-queue", pool, { cost_tol = 1 }).survivors))
      assert.are.same({ "b" }, names(run("max-qubits", pool, { cost_tol = 100 }).survivors))
      assert.are.same({ "a" }, names(run("max-throughput", pool, { cost_tol = 100 }).survivors))
    end)
    it("takes a per-stage tolerance, absolute or relative", function()
      assert.are.same({ "b", "a", "c" }, names(run("max-qubits~10", pool).survivors))
      assert.are.same({ "c", "b" }, names(run("min-cost~0.1", pool, { cost_tol = 0 }).survivors))
      assert.are.same({ "c" }, names(run("min-cost~0.05", pool, { cost_tol = 1 }).survivors))
      assert.are.same({ "c", "b" }, names(run("min-cost~12%", pool).survivors))
      assert.are.same({ "c", "b", "a" }, names(run("min-cost~50%", pool).survivors))
    end)
    it("ranks any numeric attribute in either direction; ties keep the name order", function()
      assert.are.same({ "c" }, names(run("max-memory_gb", pool).survivors))
      assert.are.same({ "a", "c" }, names(run("min-qubits", pool).survivors))
      assert.are.same({ "a", "c", "b" }, names(run("min-qubits~10", pool).survivors))
    end)
    it("fails naming the backends without the attribute when none has it", function()
      local r = run("min-latency", pool)
      assert.is_false(r.ok)
      assert.is_nil(r.chosen)
      assert.are.equal('policy "min-latency": no candidate has attribute "latency" (missing: a, b, c, d)', r.error)
      assert.is_nil(r.plugin_error)
    end)
    it("treats a string value as missing", function()
      local r = run("max-region", pool)
      assert.are.equal('policy "max-region": no candidate has attribute "region" (missing: a, b, c, d)', r.error)
    end)
  end)

  describe("require", function()
    it("Go client forms with aliases", function()
      assert.are.same({ "b", "c" }, names(run("require:min_memory_gb=24", pool).survivors))
      assert.are.same({ "a", "b" }, names(run("require:max_memory_gb=24", pool).survivors))
      assert.are.same({ "b", "c" }, names(run("require:max_cost=1", pool).survivors))
      assert.are.same({ "a", "d" }, names(run("require:max_queue=2", pool).survivors))
      local r = run("require:min_cost_usd=1", pool)
      assert.are.same({ "a", "b" }, names(r.survivors))
      assert.are.equal('cost_usd 0.9, wants >= 1', r.dropped.c)
      assert.are.equal('no attribute "cost_usd"', r.dropped.d)
    end)
    it("comparisons", function()
      local function got(t) return names(run("require:" .. t, pool).survivors) end
      assert.are.same({ "b", "c" }, got("memory_gb>=24"))
      assert.are.same({ "c" }, got("memory_gb>24"))
      assert.are.same({ "a" }, got("memory_gb<24"))
      assert.are.same({ "a", "b" }, got("memory_gb<=24"))
      assert.are.same({ "b" }, got("memory_gb=24"))
      assert.are.same({ "a", "c" }, got("memory_gb!=24"))
    end)
    it("string equality, quoted values, alternatives", function()
      local function got(t) return names(run("require:" .. t, pool).survivors) end
      assert.are.same({ "b" }, got("region=us-east-1"))
      assert.are.same({ "d" }, got('region="us east"'))
      assert.are.same({ "b", "d" }, got('region=us-east-1|"us east"'))
      assert.are.same({ "d" }, got("region!=us-east-1"))
      assert.are.same({ "b", "d" }, got("status=ONLINE|Online"))
    end)
    it("several conditions must all hold", function()
      local r = run("require:memory_gb>=16,throughput>8", pool)
      assert.are.same({ "a", "b" }, names(r.survivors))
      assert.are.equal("throughput 5, wants > 8", r.dropped.c)
    end)
    it("a string where a number is compared is a drop, not a crash", function()
      local r = run("require:region>1", { B("x", { region = "eu" }) })
      assert.is_false(r.ok)
      assert.are.same({ x = 'region is "eu", not a number' }, r.dropped)
    end)
  end)

  it("online-only keeps ONLINE in any case and absent status", function()
    local r = run("online-only", pool)
    assert.are.same({ "b", "c", "d" }, names(r.survivors))
    assert.are.same({ a = 'status is "offline"' }, r.dropped)
    assert.are.same({ "x" }, names(run("online-only", { B("x", { status = 1 }) }).survivors))
  end)

  it("prefer narrows to the first present name or passes through", function()
    assert.are.same({ "c" }, names(run("prefer:c", pool).survivors))
    assert.are.same({ "a", "b", "c", "d" }, names(run("prefer:zzz", pool).survivors))
    local r = run("prefer:zzz|d|b", pool)
    assert.are.same({ "d" }, names(r.survivors))
    assert.are.equal("not preferred (prefer:zzz|d|b chose d)", r.dropped.a)
    assert.are.equal("b", run("min-cost~0.2,prefer:b", pool).chosen)
  end)

  describe("prefer with attribute tests (issue 15)", function()
    it("narrows to the backends passing a test, ordered like names", function()
      local r = run("prefer:region=us-east-1", pool)
      assert.are.same({ "b" }, names(r.survivors))
      assert.are.equal("not preferred (prefer:region=us-east-1 chose region=us-east-1)", r.dropped.a)
      -- several pass: all kept, in order
      assert.are.same({ "c", "b" }, names(run("min-cost~0.2,prefer:memory_gb>=24", pool).survivors))
      -- the first alternative that any backend passes wins
      assert.are.same({ "d" }, names(run('prefer:region=eu-west-2|region="us east"|region=us-east-1', pool).survivors))
      assert.are.same({ "b" }, names(run("prefer:region=us-east-1|status=Online", pool).survivors))
      -- none passes: the list passes through
      assert.are.same({ "a", "b", "c", "d" }, names(run("prefer:region=mars|cost<0", pool).survivors))
    end)
    it("joins tests with commas inside one alternative, and mixes names first", function()
      assert.are.same({ "c" }, names(run("prefer:memory_gb>=24,throughput<10|memory_gb>=16", pool).survivors))
      assert.are.same({ "a", "b", "c" }, names(run("prefer:memory_gb>=24,throughput>10|memory_gb>=16", pool).survivors))
      assert.are.same({ "a" }, names(run("prefer:a|memory_gb>=24", pool).survivors))
      assert.are.same({ "b", "c" }, names(run("prefer:zzz|memory_gb>=24", pool).survivors))
      -- region=a|b after a test is one test with two values
      assert.are.same({ "b", "d" }, names(run('prefer:region=us-east-1|"us east"', pool).survivors))
    end)
    it("compares booleans, numbers and strings; a missing attribute does not pass", function()
      local spot = { B("x", { spot = true, cost_usd = 2 }), B("y", { spot = false, cost_usd = 1 }), B("z", {}) }
      assert.are.same({ "x" }, names(run("prefer:spot=true", spot).survivors))
      assert.are.same({ "y" }, names(run("prefer:spot=false", spot).survivors))
      assert.are.same({ "y" }, names(run("prefer:spot!=true", spot).survivors))
      assert.are.same({ "y" }, names(run("prefer:spot=true,cost<2|cost=1", spot).survivors))
    end)
    it("reads the attributes it tests (so live providers run) and reports bad tests", function()
      local set = compile("prefer:queue<10|status=ONLINE"):attributes()
      assert.is_true(set.queue_size and set.status)
      assert.are.equal('select-policy:1:15: bad number "x"\n    prefer:memory>x\n                  ^',
                       cerr("prefer:memory>x"))
      assert.matches('unknown attribute "regoin" %(did you mean "region"%?%)', cerr("prefer:regoin=x"))
    end)
  end)

  it("exclude drops the named backends", function()
    local r = run("exclude:a|c|nothing", pool)
    assert.are.same({ "b", "d" }, names(r.survivors))
    assert.are.equal("excluded by exclude:a|c|nothing", r.dropped.a)
    assert.are.equal('policy "exclude:a|b|c|d" eliminated all candidates', run("exclude:a|b|c|d", pool).error)
  end)

  describe("weighted", function()
    it("orders by the weighted min-max normalised score, keeping all", function()
      local r = run("weighted:throughput=1,cost=-2", pool)
      assert.are.same({ "c", "b", "a" }, names(r.survivors))
      assert.are.equal('no attribute "throughput"', r.dropped.d)
      assert.are.same({ "a", "b", "c" }, names(run("weighted:throughput=1", pool).survivors))
      assert.are.same({ "c", "b", "a" }, names(run("weighted:throughput=-1", pool).survivors))
    end)
    it("narrows with a tolerance on the score", function()
      assert.are.same({ "c", "b" }, names(run("weighted~0.5:throughput=1,cost=-2", pool).survivors))
    end)
    it("fails when no backend has every attribute", function()
      assert.are.equal('policy "weighted:latency=1": no candidate has every attribute of latency',
                       run("weighted:latency=1", pool).error)
    end)
  end)

  it("records every stage and the first reason a backend was dropped", function()
    local r = run("online-only,min-cost~0.2,prefer:b", pool)
    assert.is_true(r.ok)
    assert.are.equal("b", r.chosen)
    assert.are.same({ "online-only", "min-cost~0.2", "prefer:b" },
                    { r.stages[1].text, r.stages[2].text, r.stages[3].text })
    assert.are.same({ "b", "c", "d" }, r.stages[1].kept)
    assert.are.same({ "c", "b" }, r.stages[2].kept)
    assert.is_true(r.stages[2].order_changed)
    assert.are.same({ d = 'no attribute "cost_usd"' }, r.stages[2].dropped)
    assert.are.same({ a = 'status is "offline"', d = 'no attribute "cost_usd"',
                      c = "not preferred (prefer:b chose b)" }, r.dropped)
  end)

  it("fails when a stage eliminates every candidate, and on an empty pool", function()
    local r = run("require:memory_gb>1000,min-cost", pool)
    assert.is_false(r.ok)
    assert.are.equal('policy "require:memory_gb>1000" eliminated all candidates', r.error)
    assert.are.equal(1, #r.stages)
    assert.are.equal(1, r.failed_stage)
    assert.are.equal(r.error, r.stages[1].error)
    assert.are.same({}, r.survivors)
    assert.is_false(run("min-cost", {}).ok)
  end)

  describe("user policies", function()
    local ureg
    setup(function()
      local dir = cli.tmpdir()
      cli.write(dir .. "/cheap-first.lua", [[
return { name = "cheap-first", description = "cheapest first, keep all; cheap-first:limit=N keeps N",
  compile = function(stage, ctx)
    local limit = math.huge
    if stage.args then
      local it = stage.args.items[1]
      if it.key ~= "limit" or not it.values[1].number then ctx.error("want limit=N", it.pos) end
      limit = it.values[1].number
    end
    return function(backends, request)
      local l = {}
      for _, b in ipairs(backends) do if b.attrs.cost_usd then l[#l + 1] = b end end
      ctx.sort(l, function(a, b) return a.attrs.cost_usd < b.attrs.cost_usd end)
      local out = {}
      for i = 1, math.min(limit, #l) do out[i] = l[i] end
      return out, { d = "too mysterious" }
    end, { "cost_usd" }
  end }]])
      cli.write(dir .. "/raw.lua", [[
return { name = "raw", description = "echo args",
  compile = function(stage) local raw = stage.args and stage.args.raw or ""
    return function(backends, request)
      if raw == "shots" and request.shots ~= 1000 then return {} end
      return { backends[#backends] }
    end end }]])
      cli.write(dir .. "/mutate.lua", [[
return { name = "mutate", description = "tries to change a backend",
  compile = function() return function(backends) backends[1].attrs.cost_usd = 0; return backends end end }]])
      cli.write(dir .. "/forge.lua", [[
return { name = "forge", description = "returns a backend of its own",
  compile = function() return function() return { { name = "fake", attrs = {} } } end end }]])
      cli.write(dir .. "/twice.lua", [[
return { name = "twice", description = "returns a backend twice",
  compile = function() return function(b) return { b[1], b[1] } end end }]])
      cli.write(dir .. "/crash.lua", [[
return { name = "crash", description = "crashes at run time",
  compile = function() return function(b) return nil + 1 end end }]])
      ureg = plugins.load_policies{ dirs = { dir }, source_dir = root, home = "", path = "" }
    end)
    teardown(cli.cleanup)

    it("run as stages by name, with raw and parsed arguments", function()
      local r = run("cheap-first", pool, { policies = ureg })
      assert.are.same({ "c", "b", "a" }, names(r.survivors))
      assert.are.equal("too mysterious", r.dropped.d)
      assert.are.same({ "c", "b" }, names(run("cheap-first:limit=2", pool, { policies = ureg }).survivors))
      assert.are.equal('select-policy:1:13: want limit=N\n    cheap-first:lim=2\n                ^',
                       cerr("cheap-first:lim=2", { policies = ureg }))
      assert.are.same({ "d" }, names(run("raw:shots", pool, { policies = ureg }).survivors))
      assert.is_false(run("raw:shots", pool, { policies = ureg }, { shots = 5 }).ok)
      assert.are.same({ cost_usd = true }, (compile("cheap-first", { policies = ureg }):attributes()))
      local _, complete = compile("raw,min-cost", { policies = ureg }):attributes()
      assert.is_false(complete)
    end)

    it("cannot change backends, forge or repeat them; a crash is the plugin's fault", function()
      local r = run("mutate", pool, { policies = ureg })
      assert.is_false(r.ok)
      assert.is_true(r.plugin_error)
      assert.matches('policy "mutate" %(.*/mutate.lua%): .*/mutate.lua:2: attempt to modify a read%-only table', r.error)
      assert.are.equal(0.9, pool[1].attrs.cost_usd)
      r = run("forge", pool, { policies = ureg })
      assert.matches('returned a backend that was not in its input', r.error)
      assert.is_true(r.plugin_error)
      assert.matches('returned a backend twice', run("twice", pool, { policies = ureg }).error)
      r = run("crash", pool, { policies = ureg })
      assert.matches('crash.lua:2: attempt to perform arithmetic on a nil value', r.error)
      assert.is_true(r.plugin_error)
    end)
  end)
end)

describe("examples/policies", function()
  local ereg = plugins.load_policies{ dirs = { root .. "/examples/policies" }, source_dir = root,
                                      home = "", path = "" }
  local q = {
    B("q1", { qubits = 100, cost_usd = 10, region = "us-west-2", queue_size = 3 }),
    B("q2", { qubits = 20, cost_usd = 1, region = "us-east-1", queue_size = 9 }),
    B("q3", { qubits = 50, cost_usd = 2.6, region = "eu-north-1", queue_size = 1 }),
    B("sim", { cost_usd = 0.01 }),
  }
  local function erun(text, request) return run(text, q, { policies = ereg }, request) end

  it("within-budget uses the request's pod count", function()
    assert.are.same({ "q2", "q3", "sim" }, names(erun("within-budget:usd=5", { pods = 1 }).survivors))
    local r = erun("within-budget:usd=5", { pods = 4 })
    assert.are.same({ "q2", "sim" }, names(r.survivors))
    assert.are.equal("costs 10.4 for 4 pods, over the budget of 5", r.dropped.q3)
    assert.are.equal('select-policy:1:15: expected usd=N\n    within-budget:dollars=5\n                  ^',
                     cerr("within-budget:dollars=5", { policies = ereg }))
  end)

  it("region-order reorders without dropping", function()
    local r = erun("region-order:us-east-1|us-west-2")
    assert.are.same({ "q2", "q1", "q3", "sim" }, names(r.survivors))
    assert.is_true(r.stages[1].order_changed)
  end)

  it("qubits-per-dollar ranks by ratio, narrowing with a tolerance", function()
    assert.are.same({ "q2", "q3", "q1" }, names(erun("qubits-per-dollar").survivors))
    assert.are.same({ "q2", "q3" }, names(erun("qubits-per-dollar~10%").survivors))
    assert.are.equal("q3", erun("qubits-per-dollar~10%,min-queue").chosen)
  end)
end)
