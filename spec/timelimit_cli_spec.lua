-- No plugin can hang a run (issue 19), end to end against the built binary:
-- a policy or provider that runs past --plugin-timeout (in Lua, or inside one
-- C call such as a backtracking pattern) stops the run with exit 3, one line
-- naming the plugin, its file and line and what it was doing, and nothing on
-- stdout; C work that checks no deadline meets the hard stop one second
-- later; values a plugin returns are never read through its metamethods.
local cli = require "support.cli"

local EX = cli.root .. "/examples"
local ATTRS = EX .. "/quickstart/attributes.yaml"
local HOSTILE = 'string.find(string.rep("a", 40000), ".-.-.-.-.-.-.-.-b")'
local HINT = "; raise it with %-%-plugin%-timeout SECONDS or FLUENCE_PLUGIN_TIMEOUT$"
-- a CPU limit well above any case here, so a regression fails instead of hanging
local LIMIT = "ulimit -t 60; "
-- under valgrind or the sanitizers everything around the limit is slower
local SLOW = (os.getenv("FLUENCE_VALGRIND") or os.getenv("FLUENCE_SANITIZE")) and 3 or 1

local POD = cli.POD

local function esc(s) return (s:gsub("%p", "%%%0")) end

describe("plugin time limit (CLI)", function()
  local dir
  before_each(function()
    dir = cli.tmpdir()
    os.execute("mkdir -p " .. cli.quote(dir .. "/policies") .. " " .. cli.quote(dir .. "/providers"))
  end)
  after_each(cli.cleanup)

  local function file(name, text) return cli.write(dir .. "/" .. name, text) end
  -- runs fluence; returns {out, err, code, secs}
  local function run(args)
    local argv = { "-c", LIMIT .. 'exec "$0" "$@"', cli.bin }
    for _, a in ipairs(args) do argv[#argv + 1] = a end
    argv.bin, argv.env = "sh", args.env or {}
    argv.env.HOME = "/nonexistent"
    argv.env.KUBECONFIG = false
    if argv.env.FLUENCE_PLUGIN_TIMEOUT == nil then argv.env.FLUENCE_PLUGIN_TIMEOUT = false end
    local t0 = require("fluence.sys").monotonic()
    local r = cli.run(argv)
    r.secs = require("fluence.sys").monotonic() - t0
    return r
  end
  local function stopped(r, pattern, max_secs)
    assert.are.equal("", r.out)
    assert.are.equal(3, r.code, r.err)
    assert.matches("^fluence: [^\n]*\n$", r.err)        -- one line
    assert.matches(pattern, r.err:sub(1, -2))
    assert.is_true(r.secs < max_secs * SLOW, ("took %.1f s"):format(r.secs))
  end
  local function policy(name, body)
    return file("policies/" .. name .. ".lua", ("return { name = %q, description = %q,\n%s }\n"):format(name, name, body))
  end
  local function select(policy_text, ...)
    return run{ "select", "-f", file("job.yaml", POD:format(policy_text)), "--attributes", ATTRS, "--offline",
                "--policy-dir", dir .. "/policies", "--provider-dir", dir .. "/providers", ... }
  end

  it("stops the hostile pattern in a policy stage within the limit", function()
    policy("slow", "compile = function() return function(b)\n  " .. HOSTILE .. "\n  return b end end")
    local where = esc(dir .. "/policies/slow.lua")
    stopped(select("slow,min-cost", "--plugin-timeout", "1"),
            "^fluence: " .. where .. ':3: policy "slow" %(stage%): time limit of 1 s exceeded in string%.find' .. HINT,
            4)
    -- the same from the environment, for apply and explain (the run stops there too)
    for _, verb in ipairs{ "apply", "explain" } do
      stopped(run{ verb, "-f", file("job.yaml", POD:format("slow")), "--attributes", ATTRS, "--offline",
                   "--policy-dir", dir .. "/policies", env = { FLUENCE_PLUGIN_TIMEOUT = "0.5" } },
              where .. ':3: policy "slow" %(stage%): time limit of 0%.5 s exceeded in string%.find' .. HINT, 4)
    end
  end)

  it("has a default of a few seconds", function()
    policy("slow", "compile = function() return function(b)\n  " .. HOSTILE .. "\n  return b end end")
    local r = select("slow")
    stopped(r, 'policy "slow" %(stage%): time limit of 5 s exceeded in string%.find' .. HINT, 9)
    assert.is_true(r.secs > 4.5, ("took %.1f s"):format(r.secs))
  end)

  it("names the phase: load, compile, a fluence run function", function()
    file("policies/slowload.lua", HOSTILE .. "\nreturn {}\n")
    stopped(select("min-cost", "--plugin-timeout", "0.5"),
            "^fluence: " .. esc(dir) .. '/policies/slowload%.lua:1: policy "slowload" %(load%): time limit of 0%.5 s', 4)
    os.remove(dir .. "/policies/slowload.lua")
    policy("slowc", "compile = function()\n  " .. HOSTILE .. "\n  return function(b) return b end end")
    stopped(select("slowc", "--plugin-timeout", "0.5"),
            "^fluence: " .. esc(dir) .. '/job%.yaml:1:1: Pod/p: ' .. esc(dir) ..
            '/policies/slowc%.lua:3: policy "slowc" %(compile%): time limit of 0%.5 s exceeded in string%.find', 4)
    -- slow per instruction: the time limit comes before the instruction budget
    local fn = file("cheapest.lua", "return function(backends)\n  local s\n" ..
                                    "  while true do s = string.rep('x', 100000) end\nend\n")
    stopped(run{ "run", fn, "-f", file("job.yaml", POD:format("x")), "--attributes", ATTRS, "--offline",
                 "--plugin-timeout", "0.5" },
            "^fluence: " .. esc(fn) .. ':3: policy file "' .. esc(fn) .. '" %(run%): time limit of 0%.5 s exceeded' .. HINT,
            4)
  end)

  it("stops a provider that spins in C", function()
    file("providers/spin.lua", "return { name = 'spin', description = 'spins in C',\n" ..
         "  candidates = function()\n    return table.move({}, 1, 1e15, 2)\n  end }\n")
    stopped(select("min-cost", "--provider", "spin", "--plugin-timeout", "0.5"),
            "^fluence: " .. esc(dir) .. '/providers/spin%.lua:3: provider "spin" %(candidates%): ' ..
            "time limit of 0%.5 s exceeded in table%.move" .. HINT, 4)
  end)

  it("ends the process when C work that checks no deadline outlives the limit", function()
    -- sorting 200,000 references to one 100 kB string: each comparison reads
    -- it all, in C, with no Lua in between
    local fn = file("sorter.lua", "return function(backends)\n  local s, t = string.rep('x', 100000), {}\n" ..
                                  "  for i = 1, 200000 do t[i] = s end\n  table.sort(t)\n  return backends\nend\n")
    stopped(run{ "run", fn, "-f", file("job.yaml", POD:format("x")), "--attributes", ATTRS, "--offline",
                 "--plugin-timeout", "0.5" },
            "^fluence: " .. esc(fn) .. ': policy file "' .. esc(fn) .. '" %(run%): time limit of 0%.5 s exceeded, ' ..
            "and 1 s later still inside one C call that checks no deadline: stopped" .. HINT, 5)
  end)

  it("lets well-behaved plugins run, and refuses a limit that is not seconds", function()
    policy("fine", "compile = function() return function(b)\n  string.find(string.rep('a', 400), '.-.-b')\n" ..
                   "  return b end end")
    local r = select("fine,min-cost", "--plugin-timeout", "2")
    assert.are.equal(0, r.code, r.err)
    assert.matches("selected backend", r.err)
    r = select("fine", "--plugin-timeout", "soon")
    assert.are.equal(2, r.code)
    assert.are.equal("", r.out)
    assert.matches('^fluence: %-%-plugin%-timeout: "soon" is not a number of seconds', r.err)
    r = run{ "select", "-f", file("job.yaml", POD:format("fine")), "--attributes", ATTRS, "--offline",
             "--policy-dir", dir .. "/policies", env = { FLUENCE_PLUGIN_TIMEOUT = "-3" } }
    assert.are.equal(2, r.code)
    assert.matches('^fluence: FLUENCE_PLUGIN_TIMEOUT: "%-3" is not a number of seconds', r.err)
  end)

  it("never reads a plugin's results through its metamethods", function()
    local trap = "setmetatable({}, { __index = function() while true do end end, __len = function() while true do end end })"
    file("providers/trapb.lua", "return { name = 'trapb', description = 'x',\n" ..
         "  candidates = function() return { " .. trap .. " } end }\n")
    file("providers/trapn.lua", "return { name = 'trapn', description = 'x',\n" ..
         "  candidates = function() return {}, " .. trap .. " end }\n")
    file("providers/trapl.lua", "return { name = 'trapl', description = 'x',\n" ..
         "  candidates = function() return " .. trap .. " end }\n")
    file("providers/trapp.lua", "return { name = 'trapp', description = 'x', live = true, provides = " .. trap .. ",\n" ..
         "  candidates = function() return {} end }\n")
    for _, p in ipairs{ "trapb", "trapn", "trapl", "trapp" } do
      local r = select("min-cost", "--provider", p, "--plugin-timeout", "0.5")
      assert.is_true(r.secs < 4 * SLOW, p .. (" took %.1f s"):format(r.secs))
      -- refused as bad input, or the trap simply not read
      assert.is_true(r.code == 0 or (r.code == 3 and r.out == ""), p .. ": " .. r.err)
    end
    local fn = file("trap.lua", "return " .. trap .. "\n")
    local r = run{ "run", fn, "-f", file("job.yaml", POD:format("x")), "--attributes", ATTRS, "--offline" }
    assert.are.equal(3, r.code, r.err)
    assert.is_true(r.secs < 4 * SLOW, ("took %.1f s"):format(r.secs))
    fn = file("trapf.lua", "return function(b) return { " .. trap .. " } end\n")
    r = run{ "run", fn, "-f", file("job.yaml", POD:format("x")), "--attributes", ATTRS, "--offline" }
    assert.are.equal(3, r.code, r.err)
    assert.matches("unknown backend at position 1", r.err)
  end)
end)
