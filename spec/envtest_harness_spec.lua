-- The real-API-server harness itself (spec/support/envtest.lua): without
-- kube-apiserver and etcd, each envtest.describe block is one pending spec
-- that says how to run it -- never a silent pass.
local cli = require "support.cli"

describe("the envtest harness without assets", function()
  it("reports its block as pending, with the way to run it", function()
    local dir = cli.tmpdir()
    local spec = cli.write(dir .. "/probe_spec.lua", [[
local envtest = require "support.envtest"
envtest.describe("probe", function(api)
  it("would talk to the server", function() error("must not run") end)
end)
]])
    -- Under `make check-asan` the inner busted loads the instrumented
    -- fluence.so like the outer one does: it needs the same preload, and
    -- lua5.4 itself is not leak-checked.
    local r = cli.run{ "/usr/bin/busted", "-o", "TAP", "--helper=spec/helper.lua", "--lpath=./lua/?.lua;./spec/?.lua",
                       spec, bin = "lua5.4", valgrind = false, cwd = cli.root,
                       env = { KUBEBUILDER_ASSETS = dir .. "/nothing-here",
                               LD_PRELOAD = os.getenv("LD_PRELOAD") or false,
                               ASAN_OPTIONS = os.getenv("FLUENCE_SANITIZE") and "detect_leaks=0" or false } }
    assert.are.equal(0, r.code, r.err)
    assert.matches("^ok 1 %- # SKIP [^\n]*skipped %(no kube%-apiserver and etcd in ", r.out)
    assert.matches("\n1%.%.1\n$", r.out)
    assert.matches("set KUBEBUILDER_ASSETS to a directory holding kube%-apiserver and etcd", r.out)
    assert.is_nil(r.out:find("must not run", 1, true))
    cli.cleanup()
  end)
end)
