-- The built-in plugins compiled into fluence (lua/fluence/plugins.lua): they
-- join a registry when first asked for (get(NAME) one, reg.list all), with
-- the same entries either way, and share one sandbox environment per
-- registry, which is safe only while no built-in writes a global; plugins
-- from files keep their own; their contract is checked when the binary is
-- built (tools/embed.lua), not at every load.
local plugins = require "fluence.plugins"
local cli = require "support.cli"

local root = os.getenv("PWD")

-- the embedded built-ins (source_dir ""), no $HOME, no path
local function load(kind, dirs)
  local opts = { dirs = dirs or {}, source_dir = "", home = "", path = "" }
  return kind == "provider" and plugins.load_providers(opts) or plugins.load_policies(opts)
end

-- a plugin's environment: the table upvalue that is its own _G
local function env_of(f)
  for i = 1, 255 do
    local name, v = debug.getupvalue(f, i)
    if not name then return nil end
    if type(v) == "table" and rawget(v, "_G") == v then return v end
  end
end

local function summary(e)
  return { name = e.name, origin = e.origin, source = e.source, shadows = e.shadows,
           overrides = e.overrides }
end

describe("built-in plugins", function()
  after_each(cli.cleanup)

  it("join the registry by name or all at once, to the same entries", function()
    local d = cli.tmpdir()
    cli.write(d .. "/min.lua", 'return { name = "min", description = "mine", compile = function() end }\n')
    local by_get = load("policy", { d })
    local first = by_get.get("max")
    assert.are.equal("built-in:policies/max.lua", first.origin)
    -- a file shadowing a built-in: the built-in is counted when asked for
    local shadowing = by_get.get("min")
    assert.are.equal(d .. "/min.lua", shadowing.origin)
    assert.are.same({ "built-in:policies/min.lua" }, shadowing.shadows)
    assert.are.equal("built-in", shadowing.overrides)
    assert.is_nil(by_get.get("no-such-policy"))
    assert.is_nil(by_get.get(nil))
    local by_list = load("policy", { d })
    local names, want = {}, {}
    for _, e in ipairs(by_list.list) do
      names[#names + 1] = e.name
      want[e.name] = summary(e)
    end
    local sorted = { table.unpack(names) }
    table.sort(sorted)
    assert.are.same(sorted, names)
    assert.is_true(#names >= 8)
    for _, e in ipairs(by_get.list) do assert.are.same(want[e.name], summary(e)) end
    assert.are.equal(#by_list.list, #by_get.list)
    -- after the list, get returns the listed entries
    assert.are.equal(by_get.list[1], by_get.get(by_get.list[1].name))
  end)

  it("are listed as the binary was built: every file of policies/ and providers/", function()
    for _, k in ipairs{ { "policy", "policies" }, { "provider", "providers" } } do
      local want = {}
      local p = io.popen("cd " .. cli.quote(root .. "/" .. k[2]) .. " && ls *.lua | LC_ALL=C sort")
      for f in p:lines() do
        local name = f:match("^(.*)%.lua$")
        want[#want + 1] = name .. " built-in:" .. k[2] .. "/" .. f .. " built-in"
      end
      p:close()
      local got = {}
      for _, e in ipairs(load(k[1]).list) do got[#got + 1] = e.name .. " " .. e.origin .. " " .. e.source end
      assert.are.same(want, got)
      assert.is_true(#got >= 6)
    end
    -- what a built-in provider declares is known before it loads
    assert.are.equal("braket", load("provider").get("braket-live").decl.family)
  end)

  it("share one environment per registry; a plugin from a file has its own", function()
    local d = cli.tmpdir()
    cli.write(d .. "/mine.lua", 'return { name = "mine", description = "m", compile = function() return x end }\n')
    local sandbox = require "fluence.sandbox"
    local env, made = sandbox.env, {}
    sandbox.env = function(...)
      local e = env(...)
      made[#made + 1] = e
      return e
    end
    local ok, err = pcall(function()
      local reg = load("policy", { d })
      assert.are.equal(1, #made)                   -- the file's, at once
      local mine = made[1]
      assert.are.equal(mine, env_of(reg.get("mine").plugin.compile))
      assert.is_table(reg.get("min").plugin)
      assert.is_table(reg.get("max").plugin)
      assert.is_table(reg.get("require").plugin)
      assert.are.equal(2, #made)                   -- one for the three built-ins
      assert.are_not.equal(mine, made[2])
      assert.is_table(load("policy").get("min").plugin)
      assert.are.equal(3, #made)                   -- another registry, another one
    end)
    sandbox.env = env
    assert(ok, err)
  end)

  -- tools/embed.lua checks the built-ins' contract when the binary is
  -- built; fluence.plugins no longer does when it loads one
  describe("are checked when the binary is built", function()
    local function embed(files)
      local d = cli.tmpdir()
      assert(os.execute("mkdir -p " .. cli.quote(d .. "/policies") .. " " .. cli.quote(d .. "/providers") ..
                        " && ln -s " .. cli.quote(root .. "/lua") .. " " .. cli.quote(d .. "/lua")))
      local args = {}
      for path, src in pairs(files) do
        cli.write(d .. "/" .. path, src)
        args[#args + 1] = cli.quote(path)
      end
      table.sort(args)
      return cli.sh("lua5.4 " .. cli.quote(root .. "/tools/embed.lua") .. " " .. table.concat(args, " "), d)
    end
    local GOOD = 'return { name = "%s", description = "d", compile = function() end }\n'

    it("builds with plugins that keep the contract", function()
      local r = embed{ ["policies/good.lua"] = GOOD:format("good"),
                       ["providers/p.lua"] = 'return { name = "p", description = "d", candidates = function() end }' }
      assert.are.equal(0, r.code, r.err)
      assert.truthy(r.out:find('"policies/good.lua"', 1, true))
    end)

    for _, case in ipairs{
      { "a required export missing", 'return { name = "bad", description = "d" }', "compile" },
      { "an export of the wrong type", 'return { name = "bad", description = 1, compile = function() end }',
        "description" },
      { "a name that is not its file's", GOOD:format("other"), "other" },
      { "a bad name", GOOD:format("9bad"), "9bad" },
      { "no table", "return 1", "returns number" },
    } do
      it("fails on " .. case[1], function()
        local path = case[3] == "9bad" and "policies/9bad.lua" or "policies/bad.lua"
        local r = embed{ [path] = case[2] }
        assert.are_not.equal(0, r.code)
        assert.truthy(r.err:find(path, 1, true), r.err)
        assert.truthy(r.err:find(case[3], 1, true), r.err)
      end)
    end
  end)

  -- sharing is safe while no built-in sets a global (its own or another's)
  it("write no globals", function()
    local files = {}
    for _, dir in ipairs{ "policies", "providers" } do
      local p = io.popen("ls " .. root .. "/" .. dir .. "/*.lua")
      for f in p:lines() do files[#files + 1] = f end
      p:close()
    end
    assert.is_true(#files >= 14)
    for _, f in ipairs(files) do
      local p = io.popen("luac5.4 -l -l -p " .. cli.quote(f) .. " 2>&1")
      local listing = p:read("a")
      p:close()
      assert.truthy(listing:find("main <", 1, true), listing)
      for line in listing:gmatch("[^\n]+") do
        if line:find("SETTABUP", 1, true) and line:find("_ENV", 1, true) then
          error(f .. " sets a global: " .. line)
        end
      end
    end
  end)
end)
