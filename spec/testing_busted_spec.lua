-- After `make install`, plain busted runs plugin specs that
-- require("fluence.testing"): the Lua modules in LUADIR, the C modules and
-- built-in plugins in LUACDIR/fluence.so.  The same spec files pass under
-- `fluence test`'s built-in runner (spec/test_cli_spec.lua); here busted
-- itself runs them, and a failing one fails.
local cli = require "support.cli"
local tree = require "support.tree"

local function sh(cmd)
  local p = io.popen(cmd .. " 2>&1")
  local out = p:read("a")
  local ok = p:close()
  return out, ok
end

describe("plain busted after make install", function()
  teardown(function() cli.cleanup() end)

  it("runs the example plugins' specs, and fails a wrong one", function()
    if os.getenv("FLUENCE_VALGRIND") or os.getenv("FLUENCE_SANITIZE") then
      return pending("skipped under the memory checkers: busted loads the uninstrumented build/lib/fluence.so")
    end
    local prefix = cli.tmpdir()
    local out, ok = sh(("cd %s && env -u MAKEFLAGS -u MAKELEVEL -u MFLAGS make -s install PREFIX=%s")
                       :format(cli.quote(cli.root), cli.quote(prefix)))
    assert.is_true(ok, out)
    assert.truthy(cli.slurp(prefix .. "/share/lua/5.4/fluence/testing.lua"))
    assert.truthy(cli.slurp(prefix .. "/lib/lua/5.4/fluence.so"))
    local env = ("env -u LD_PRELOAD LUA_PATH=%s LUA_CPATH=%s"):format(
      cli.quote(prefix .. "/share/lua/5.4/?.lua;;"), cli.quote(prefix .. "/lib/lua/5.4/?.so;;"))
    out, ok = sh(("cd %s/examples && %s lua5.4 /usr/bin/busted -o TAP user-policy/tests tests")
                 :format(cli.quote(cli.root), env))
    assert.is_true(ok, out)
    assert.truthy(out:find("\n1..20\n", 1, true) or out:find("^1..20\n"), out)
    assert.falsy(out:find("not ok", 1, true), out)

    local dir = tree.make{ ["policies/p.lua"] = 'return { name = "p", description = "p", compile = function() ' ..
                                                'return function(b) return b end end }\n',
                           ["tests/p_spec.lua"] = 'local t = require("fluence.testing")\n' ..
                                                  'it("wrong", function() assert.are.equal("z", t.rank("p", ' ..
                                                  '{ { name = "a", attrs = {} } }).chosen) end)\n' }
    out, ok = sh(("cd %s && %s lua5.4 /usr/bin/busted -o TAP tests"):format(cli.quote(dir), env))
    assert.is_falsy(ok)
    assert.truthy(out:find("not ok 1 - wrong", 1, true), out)
  end)
end)
