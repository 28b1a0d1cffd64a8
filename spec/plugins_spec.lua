-- Plugin loading (lua/fluence/plugins.lua) and the sandbox it uses
-- (lua/fluence/sandbox.lua): search order and shadowing, broken plugins as
-- FILE:LINE, escapes that must fail, the instruction budget, and the
-- `fluence policies` / `fluence providers` verbs.
local plugins = require "fluence.plugins"
local sandbox = require "fluence.sandbox"
local pipeline = require "fluence.pipeline"
local errors = require "fluence.errors"
local json = require "fluence.json"
local cli = require "support.cli"

local root = os.getenv("PWD")

local function policy_src(name, body)
  return ("return { name = %q, description = %q, compile = function(stage, ctx)\n%s\nend }\n")
    :format(name, name .. " policy\nsecond line", body or "return function(b) return b end")
end

-- a directory holding the given files {name = source}
local function dir_with(files)
  local d = cli.tmpdir()
  for name, src in pairs(files) do cli.write(d .. "/" .. name, src) end
  return d
end

-- load_policies restricted to the given dirs (no $HOME, no env path)
local function load(dirs, extra)
  local opts = { dirs = dirs, source_dir = root, home = "", path = "" }
  for k, v in pairs(extra or {}) do opts[k] = v end
  return plugins.load_policies(opts)
end

local function load_error(dirs, extra)
  local ok, e = errors.try(load, dirs, extra)
  assert.is_false(ok)
  assert.are.equal("INPUT", e.kind)
  return e.message
end

describe("plugins", function()
  after_each(cli.cleanup)

  describe("search order", function()
    it("lists the built-ins with their origin and first description line", function()
      local reg = load({})
      local got = {}
      for _, e in ipairs(reg.list) do got[#got + 1] = e.name .. " " .. e.origin end
      assert.are.same({ "exclude built-in:policies/exclude.lua", "fits built-in:policies/fits.lua",
                        "max built-in:policies/max.lua",
                        "min built-in:policies/min.lua", "online-only built-in:policies/online-only.lua",
                        "prefer built-in:policies/prefer.lua", "require built-in:policies/require.lua",
                        "weighted built-in:policies/weighted.lua" }, got)
      assert.are.equal("built-in", reg.get("min").source)
      assert.is_function(reg.get("min").plugin.compile)
    end)

    it("loads built-ins from the binary when no source tree is given", function()
      local reg = plugins.load_policies{ source_dir = "", home = "", path = "" }
      assert.are.equal("built-in:policies/prefer.lua", reg.get("prefer").origin)
    end)

    it("--policy-dir, then FLUENCE_POLICY_PATH, then ~/.fluence/policies, then built-ins", function()
      local opt1 = dir_with{ ["a.lua"] = policy_src("a") }
      local opt2 = dir_with{ ["b.lua"] = policy_src("b"), ["a.lua"] = policy_src("a") }
      local env1 = dir_with{ ["b.lua"] = policy_src("b"), ["c.lua"] = policy_src("c") }
      local env2 = dir_with{ ["d.lua"] = policy_src("d"), ["c.lua"] = policy_src("c") }
      local home = cli.tmpdir()
      os.execute("mkdir -p " .. cli.quote(home .. "/.fluence/policies"))
      cli.write(home .. "/.fluence/policies/d.lua", policy_src("d"))
      cli.write(home .. "/.fluence/policies/e.lua", policy_src("e"))
      cli.write(home .. "/.fluence/policies/min.lua", policy_src("min"))
      cli.write(home .. "/.fluence/policies/README.txt", "not a plugin")
      local reg = load({ opt1, opt2 }, { path = env1 .. "::" .. env2 .. ":/no/such/dir", home = home })
      local want = { a = opt1 .. "/a.lua", b = opt2 .. "/b.lua", c = env1 .. "/c.lua",
                     d = env2 .. "/d.lua", e = home .. "/.fluence/policies/e.lua",
                     min = home .. "/.fluence/policies/min.lua" }
      for name, origin in pairs(want) do assert.are.equal(origin, reg.get(name).origin) end
      assert.are.same({ opt2 .. "/a.lua" }, reg.get("a").shadows)
      assert.are.equal("--policy-dir", reg.get("a").source)
      assert.are.equal("FLUENCE_POLICY_PATH", reg.get("c").source)
      assert.are.equal("~/.fluence/policies", reg.get("e").source)
      assert.are.equal("built-in", reg.get("min").overrides)
      assert.are.same({ "built-in:policies/min.lua" }, reg.get("min").shadows)
      assert.are.equal("min policy", reg.get("min").description)
      assert.are.same({ opt1, opt2, env1, env2, "/no/such/dir", home .. "/.fluence/policies" },
                      (function() local t = {} for i, d in ipairs(reg.dirs) do t[i] = d.dir end return t end)())
    end)

    it("a user policy replaces the built-in of the same name in pipelines", function()
      local d = dir_with{ ["prefer.lua"] = policy_src("prefer",
        "return function(b) return { b[#b] } end") }
      local reg = load({ d })
      local pl = assert(pipeline.compile("prefer:a", { policies = reg }))
      assert.are.equal("z", pl:run({ { name = "a", attrs = {} }, { name = "z", attrs = {} } }, {}).chosen)
    end)

    it("FLUENCE_SOURCE_DIR: the tree's built-ins first, the binary's for the rest", function()
      local tree = cli.tmpdir()
      os.execute("mkdir -p " .. cli.quote(tree .. "/policies"))
      cli.write(tree .. "/policies/min.lua", policy_src("min"))
      cli.write(tree .. "/policies/extra.lua", policy_src("extra"))
      local reg = plugins.load_policies{ source_dir = tree, home = "", path = "" }
      assert.are.equal("built-in:policies/min.lua", reg.get("min").origin)
      assert.are.equal("min policy", reg.get("min").description)
      assert.are.equal("built-in:policies/extra.lua", reg.get("extra").origin)
      assert.matches("^max%-ATTR", reg.get("max").description)
      local r = cli.run{ "policies", "-o", "name", env = { FLUENCE_SOURCE_DIR = tree, HOME = cli.tmpdir() } }
      assert.are.equal("exclude\nextra\nfits\nmax\nmin\nonline-only\nprefer\nrequire\nweighted\n", r.out)
    end)

    it("an explicit --policy-dir that does not exist is an error", function()
      assert.are.equal("--policy-dir /no/such/dir: No such file or directory",
                       load_error({ "/no/such/dir" }))
    end)
  end)

  describe("broken plugins are FILE:LINE errors", function()
    it("syntax errors", function()
      local d = dir_with{ ["bad.lua"] = "return {\n  name = 'bad',\n  description = 'x' compile = 1 }\n" }
      assert.are.equal(d .. "/bad.lua:3:21: '}' expected (to close '{' at line 1) near 'compile'\n" ..
                       "      description = 'x' compile = 1 }\n" ..
                       "                        ^", load_error({ d }))
    end)
    it("errors while loading", function()
      local d = dir_with{ ["bad.lua"] = "local x = nil\n\nreturn x.y\n" }
      assert.are.equal(d .. "/bad.lua:3: attempt to index a nil value (local 'x')", load_error({ d }))
      d = dir_with{ ["bad.lua"] = "error('no thanks', 0)\n" }
      assert.are.equal(d .. "/bad.lua: no thanks", load_error({ d }))
    end)
    it("missing or wrong exports", function()
      local d = dir_with{ ["bad.lua"] = "return { name = 'bad', description = 'x' }\n" }
      assert.are.equal(d .. '/bad.lua: policy plugin export "compile" must be a function, got nil',
                       load_error({ d }))
      d = dir_with{ ["bad.lua"] = "return 42\n" }
      assert.are.equal(d .. "/bad.lua: a policy plugin must return a table, got number", load_error({ d }))
      d = dir_with{ ["bad.lua"] = policy_src("other") }
      assert.are.equal(d .. '/bad.lua: policy plugin is named "other" but its file is bad.lua (they must match)',
                       load_error({ d }))
    end)
    it("binary chunks are refused (text mode)", function()
      local d = cli.tmpdir()
      cli.write(d .. "/bin.lua", string.dump(function() return { name = "bin" } end))
      assert.matches("^" .. d:gsub("%p", "%%%0") .. "/bin.lua: .*binary chunk", load_error({ d }))
    end)
  end)

  describe("the sandbox", function()
    it("offers no I/O, loading or debugging", function()
      local env = sandbox.env()
      for _, k in ipairs({ "io", "os", "require", "load", "loadfile", "dofile", "debug", "package",
                           "collectgarbage", "print", "loadstring", "module" }) do
        assert.is_nil(env[k], k)
      end
      assert.is_nil(env.string.dump)
      assert.are.equal(env, env._G)
      assert.are_not.equal(string, env.string)
    end)

    local escapes = {
      { "io", "return io.open('/etc/passwd')", "attempt to index a nil value (global 'io')" },
      { "os.execute", "os.execute('touch ESCAPED')", "attempt to index a nil value (global 'os')" },
      { "require", "local sys = require 'fluence.sys'", "attempt to call a nil value (global 'require')" },
      { "load", "return load('return 1')", "attempt to call a nil value (global 'load')" },
      { "load of a binary chunk", "return load(string.dump(function() end), 'x', 'b')",
        "attempt to call a nil value (field 'dump')" },
      { "string.dump", "return string.dump(print)", "attempt to call a nil value (field 'dump')" },
      { "debug", "debug.sethook()", "attempt to index a nil value (global 'debug')" },
      { "the string metatable", "getmetatable('').__index.upper = nil",
        "attempt to index a nil value" },
      { "_ENV tricks", "local g = _ENV._G._G; return g.io.open", "attempt to index a nil value (field 'io')" },
      { "_ENV replaced", "_ENV = setmetatable({}, { __index = _G }); return io.open",
        "attempt to index a nil value (global 'io')" },
      { "rawget on _G", "return rawget(_G, 'os').exit", "attempt to index a nil value" },
      { "package via string", "return ('').package.loaded", "attempt to index a nil value (field 'package')" },
      { "collectgarbage", "collectgarbage()", "attempt to call a nil value (global 'collectgarbage')" },
      { "huge strings", "local s = string.rep('x', 1e9)", "string.rep: result too large" },
    }
    for _, c in ipairs(escapes) do
      it("stops " .. c[1], function()
        local d = dir_with{ ["esc.lua"] = c[2] .. "\n" }
        local msg = load_error({ d })
        assert.are.equal(d .. "/esc.lua:1: ", msg:sub(1, #d + 12))
        assert.is_truthy(msg:find(c[3], 1, true), msg)
      end)
    end

    it("runs no plugin code outside the budget: finalizers, error objects, metamethods", function()
      local d = dir_with{ ["gc.lua"] = "setmetatable({}, { __gc = function() while true do end end })\n" }
      assert.matches("gc.lua:1: __gc metamethods are not allowed in plugins", load_error({ d }))
      d = dir_with{ ["obj.lua"] = "error(setmetatable({}, { __tostring = function() while true do end end }))\n" }
      assert.are.equal(d .. "/obj.lua: error object (table)", load_error({ d }))
      d = dir_with{ ["meta.lua"] = policy_src("meta", [[
        local spin = { __index = function() while true do end end, __len = function() while true do end end }
        return function(b) return setmetatable({}, spin), setmetatable({}, spin) end, setmetatable({}, {
          __pairs = function() while true do end end })]]) }
      local reg = load({ d })
      local pl = assert(pipeline.compile("meta", { policies = reg }))
      assert.are.same({}, (pl:attributes()))
      local r = pl:run({ { name = "a", attrs = {} } }, {})
      assert.are.equal('policy "meta" eliminated all candidates', r.error)
      assert.are.same({ a = "dropped by meta" }, r.dropped)
      local ok, msg = sandbox.call(function() error(setmetatable({}, { __tostring = function() return "x" end })) end)
      assert.are.same({ false, "error object (table)" }, { ok, msg })
      local e = errors.new("INPUT", "structured")
      ok, msg = sandbox.call(function() error(e) end)
      assert.are.equal(e, msg)
    end)

    it("lets no plugin forge or edit the host's structured errors (their code is main's exit code)", function()
      local src = [[
local ok, e = pcall(host_error)
local took = getmetatable(e)
if type(took) == "table" then error(setmetatable({ code = 0, kind = "OK", message = "forged" }, took), 0) end
e.code, e.kind, e.message = 0, "OK", "all is well"
error(e, 0)
]]
      local host = errors.new("INPUT", "a real one")
      local env = sandbox.env{ host_error = function() error(host, 0) end }
      local chunk = assert(_G.load(src, "=forge.lua", "t", env))
      local ok, msg = sandbox.call(chunk)
      assert.is_false(ok)
      assert.are.equal("error object (table)", msg)
      assert.is_false(errors.is(host))
      local fresh = errors.new("INPUT", "untouched")
      assert.is_true(errors.is(fresh))
      assert.are.equal("fluence error", getmetatable(fresh))
    end)

    it("leaves the host's string library alone", function()
      local d = dir_with{ ["s.lua"] = "string.upper = nil; string.format = nil\n" .. policy_src("s") }
      load({ d })
      assert.are.equal("X", ("x"):upper())
      assert.are.equal("1", string.format("%d", 1))
      assert.is_false(io.open("ESCAPED") ~= nil)
    end)

    it("gives read-only views: no field writes, rawset or setmetatable", function()
      local t = { a = { b = 1 }, list = { 1, 2, 3 } }
      local v = sandbox.readonly(t)
      local env = sandbox.env()
      assert.are.equal(1, v.a.b)
      assert.are.equal(3, #v.list)
      assert.are.equal(v.a, v.a)
      assert.has_error(function() v.a.b = 2 end)
      assert.has_error(function() env.rawset(v.a, "b", 2) end, "attempt to modify a read-only table")
      assert.has_error(function() env.setmetatable(v, {}) end, "cannot change a protected metatable")
      assert.is_false(getmetatable(v))
      local keys = {}
      for k in pairs(v) do keys[#keys + 1] = k end
      table.sort(keys)
      assert.are.same({ "a", "list" }, keys)
      assert.are.equal(1, t.a.b)
      assert.are.equal(t, sandbox.unwrap(v))
    end)

    describe("instruction budget", function()
      local function loops(body)
        local d = dir_with{ ["loop.lua"] = body }
        return load_error({ d }, { budget = 200000 }), d
      end
      it("stops an endless loop, naming the plugin file and line", function()
        local msg, d = loops("local n = 0\nwhile true do\n  n = n + 1\nend\n")
        assert.matches("^" .. d:gsub("%p", "%%%0") .. "/loop.lua:[23]: instruction budget of 200000 " ..
                       "exceeded %(endless loop%?%)$", msg)
      end)
      it("cannot be caught with pcall", function()
        local msg = loops("while true do pcall(function() while true do end end) end\n")
        assert.matches("instruction budget of 200000 exceeded", msg)
        msg = loops("while true do xpcall(function() while true do end end, function() end) end\n")
        assert.matches("instruction budget of 200000 exceeded", msg)
      end)
      it("covers coroutines the plugin creates", function()
        assert.matches("loop.lua:1: instruction budget", loops("coroutine.wrap(function() while true do end end)()\n"))
        assert.matches("instruction budget", loops(
          "local co = coroutine.create(function() while true do end end)\n" ..
          "while true do coroutine.resume(co) end\n"))
      end)
      it("stops a runaway policy at run time as the plugin's fault", function()
        local d = dir_with{ ["spin.lua"] = policy_src("spin",
          "return function(b)\n  while true do end\nend") }
        local reg = load({ d }, { budget = 100000 })
        local pl = assert(pipeline.compile("spin", { policies = reg, budget = 100000 }))
        local r = pl:run({ { name = "a", attrs = {} } }, {})
        assert.is_false(r.ok)
        assert.is_true(r.plugin_error)
        assert.matches('^policy "spin" %(.*spin.lua%): .*spin.lua:%d: instruction budget of 100000 exceeded', r.error)
      end)
      it("names the plugin line even when the budget runs out in a host helper", function()
        local d = dir_with{ ["sorty.lua"] = policy_src("sorty", [[
          return function(b)
            local big = {}
            for i = 1, 3000 do big[i] = (i * 7919) % 3000 end
            ctx.sort(big, function(x, y) return x < y end)
            return b
          end]]) }
        local reg = load({ d })
        local pl = assert(pipeline.compile("sorty", { policies = reg, budget = 200000 }))
        local r = pl:run({ { name = "a", attrs = {} } }, {})
        assert.matches("sorty.lua:%d+: instruction budget of 200000 exceeded", r.error)
      end)
      it("returns results, restores the caller's hook and clears its own", function()
        local function mine() end
        debug.sethook(mine, "", 1e9)
        local ok, a, b = sandbox.call(function(x) return x + 1, "y" end, 1000, 1)
        assert.are.same({ true, 2, "y" }, { ok, a, b })
        assert.are.equal(mine, (debug.gethook()))
        debug.sethook()
        sandbox.call(function() end)
        assert.is_nil(debug.gethook())
        local ok2, err = sandbox.call(function() error("plain", 0) end)
        assert.are.same({ false, "plain" }, { ok2, err })
      end)
      it("hooks the coroutine that runs the plugin, leaving the main thread alone", function()
        local ok, inner = coroutine.wrap(function()
          return true, sandbox.call(function() while true do end end, 10000)
        end)()
        assert.is_true(ok)
        assert.is_false(inner)
        assert.is_nil(debug.gethook())
      end)
      it("budgets are per call: nested calls restore the outer budget", function()
        local ok, inner_ok = sandbox.call(function()
          local iok = sandbox.call(function() while true do end end, 10000)
          return iok
        end, 1e6)
        assert.is_true(ok)
        assert.is_false(inner_ok)
      end)
    end)
  end)

  describe("providers", function()
    it("load with the api table, read-only, and need candidates()", function()
      local d = dir_with{
        ["mine.lua"] = "local v = api.version\nreturn { name = 'mine', description = 'm', " ..
                       "candidates = function(ctx) return {} end, v = v }\n",
        ["evil.lua"] = "api.version = 2\n",
      }
      local ok, e = errors.try(plugins.load_providers,
        { dirs = { d }, api = { version = 1 }, source_dir = root, home = "", path = "" })
      assert.is_false(ok)
      assert.matches("evil.lua:1: attempt to modify a read%-only table", e.message)
      os.remove(d .. "/evil.lua")
      local reg = plugins.load_providers{ dirs = { d }, api = { version = 1 }, source_dir = root,
                                          home = "", path = "" }
      assert.are.equal(1, reg.get("mine").plugin.v)
      assert.are.equal(d .. "/mine.lua", reg.get("mine").origin)
      d = dir_with{ ["p.lua"] = "return { name = 'p', description = 'p' }\n" }
      ok, e = errors.try(plugins.load_providers, { dirs = { d }, source_dir = root, home = "", path = "" })
      assert.are.equal(d .. '/p.lua: provider plugin export "candidates" must be a function, got nil', e.message)
    end)
  end)

  describe("fluence policies / providers", function()
    it("prints a table of name, origin and description", function()
      local home = cli.tmpdir()
      local r = cli.run{ "policies", env = { HOME = home, FLUENCE_POLICY_PATH = false } }
      assert.are.equal(0, r.code)
      assert.are.equal("", r.err)
      assert.matches("^NAME%s+ORIGIN%s+DESCRIPTION\n", r.out)
      assert.matches("\nmin%s+built%-in:policies/min.lua%s+min%-ATTR: keep the backends", r.out)
      assert.matches("\nsearch order: " .. home:gsub("%p", "%%%0") .. "/.fluence/policies, built%-in\n$", r.out)
    end)

    it("shows user plugins in precedence order, -o json", function()
      local home = cli.tmpdir()
      os.execute("mkdir -p " .. cli.quote(home .. "/.fluence/policies"))
      cli.write(home .. "/.fluence/policies/min.lua", policy_src("min"))
      cli.write(home .. "/.fluence/policies/mine.lua", policy_src("mine"))
      local envdir = dir_with{ ["mine.lua"] = policy_src("mine"), ["team.lua"] = policy_src("team") }
      local optdir = dir_with{ ["team.lua"] = policy_src("team") }
      local r = cli.run{ "policies", "--policy-dir", optdir, "-o", "json",
                         env = { HOME = home, FLUENCE_POLICY_PATH = envdir } }
      assert.are.equal(0, r.code, r.err)
      local list = json.decode(r.out)
      local got = {}
      for _, e in ipairs(list) do got[e.name] = e end
      assert.are.equal(home .. "/.fluence/policies/min.lua", got.min.origin)
      assert.are.equal("built-in", got.min.overrides)
      assert.are.equal(envdir .. "/mine.lua", got.mine.origin)
      assert.are.equal(optdir .. "/team.lua", got.team.origin)
      assert.are.same({ envdir .. "/team.lua" }, got.team.shadows)
      assert.are.equal("team policy", got.team.description)
      assert.are.equal("built-in:policies/require.lua", got.require.origin)
      r = cli.run{ "policies", env = { HOME = home, FLUENCE_POLICY_PATH = false } }
      assert.matches("\nmin%s+" .. home:gsub("%p", "%%%0") .. "/.fluence/policies/min.lua %(overrides built%-in%)", r.out)
    end)

    it("reports a broken plugin as FILE:LINE with exit 3 and nothing on stdout", function()
      local d = dir_with{ ["broken.lua"] = "return {\n  name = 'broken',\n  oops =\n}\n" }
      local r = cli.run{ "policies", "--policy-dir", d, env = { HOME = cli.tmpdir() } }
      assert.are.equal(3, r.code)
      assert.are.equal("", r.out)
      assert.matches("^fluence: " .. d:gsub("%p", "%%%0") .. "/broken.lua:4:1: unexpected symbol near '}'\n    }\n    %^\n$", r.err)
    end)

    it("-o name, and unknown formats are usage errors", function()
      local r = cli.run{ "policies", "-o", "name", env = { HOME = cli.tmpdir(), FLUENCE_POLICY_PATH = false } }
      assert.are.equal("exclude\nfits\nmax\nmin\nonline-only\nprefer\nrequire\nweighted\n", r.out)
      r = cli.run{ "policies", "-o", "xml" }
      assert.are.equal(2, r.code)
      assert.are.equal("", r.out)
    end)

    it("lists providers the same way", function()
      local d = dir_with{ ["mine.lua"] = "return { name = 'mine', description = 'my backends', " ..
                                         "candidates = function() return {} end }\n" }
      local r = cli.run{ "providers", "--provider-dir", d, "-o", "json",
                         env = { HOME = cli.tmpdir(), FLUENCE_PROVIDER_PATH = false } }
      assert.are.equal(0, r.code, r.err)
      local got = {}
      for _, e in ipairs(json.decode(r.out)) do got[e.name] = e end
      assert.are.equal(d .. "/mine.lua", got.mine.origin)
      assert.are.equal("my backends", got.mine.description)
    end)
  end)
end)

-- The built-ins compiled into the binary (fluence.so here, as in bin/fluence)
-- load on first use; what the providers among them declare is known before.
describe("built-in plugins", function()
  local function registry(kind)
    local opts = { source_dir = "", home = "", path = "", api = require("fluence.provider_api").new{} }
    return kind == "policy" and plugins.load_policies(opts) or plugins.load_providers(opts)
  end

  it("load when a run first uses one, not before", function()
    local reg = registry("policy")
    local e = assert(reg.get("min"))
    assert.is_nil(rawget(e, "plugin"))
    assert.are.equal("built-in:policies/min.lua", e.origin)
    assert.are.equal("function", type(e.plugin.compile))    -- loads it
    assert.is_table(rawget(e, "plugin"))
    assert.is_nil(rawget(reg.get("max"), "plugin"))         -- the others stay unloaded
    assert.matches("lowest", e.description)
  end)

  it("declare, unloaded, what they declare once loaded (the build reads it from each file)", function()
    local reg = registry("provider")
    assert.is_true(#reg.list >= 3)
    for _, e in ipairs(reg.list) do
      local decl = e.decl                                   -- before loading
      assert.is_nil(rawget(e, "plugin"), e.name)
      local p = e.plugin
      assert.are.same({ p.live and true or nil, p.family, p.provides, p.enriches },
                      { decl.live and true or nil, decl.family, decl.provides, decl.enriches }, e.name)
    end
    assert.are.same({ "device_arn" }, reg.get("braket-live").decl.enriches)
  end)

  it("and a broken plugin in a directory is reported even when the run would not use it", function()
    local d = dir_with{ ["unused.lua"] = "return {" }
    assert.matches("unused%.lua", load_error({ d }))
  end)
end)
