-- The progress line keeps moving while one live provider call blocks for
-- seconds: the transfer loop redraws it, "(waiting for HOST, N s)", on a
-- terminal only (core/progress.c; issue 15).
local cli = require "support.cli"
local server = require "support.server"

local q = cli.quote

local have = cli.have

describe("the progress line during a slow provider call", function()
  local s, dir, job, provider
  setup(function()
    s = server.start("spec/support/http_server.py")
    dir = cli.tmpdir()
    os.execute("mkdir -p " .. q(dir .. "/.fluence/providers"))
    provider = cli.write(dir .. "/.fluence/providers/slow.lua", [[
return {
  name = "slow", description = "asks a slow server",
  candidates = function(ctx)
    local r, err = ctx.api.http.request{ url = ctx.api.env("SLOW_URL") }
    assert(r, err)
    return { { name = "a", attrs = { cost_usd = 1 } } }
  end,
}
]])
    job = cli.write(dir .. "/job.yaml", [[
apiVersion: v1
kind: Pod
metadata:
  name: p
  annotations:
    fluence.flux-framework.org/select-policy: min-cost
spec:
  schedulerName: fluence
  containers: [{name: c, image: x}]
]])
  end)
  teardown(function()
    s:stop()
    cli.cleanup()
  end)

  local function command(file, ms)
    return ("env -u LD_PRELOAD HOME=%s SLOW_URL=%s %s select -f %s --offline --provider slow"):format(
      q(dir), q(("http://127.0.0.1:%d/delay?ms=%d&token=SECRET"):format(s.port, ms or 3300)), q(cli.bin),
      q(file or job))
  end

  it("is redrawn each second while the call blocks, then cleared", function()
    if not have("script") then return pending("script(1) is not installed (bsdutils) for a terminal") end
    local p = io.popen("script -qec " .. q(command() .. " >/dev/null") .. " /dev/null")
    local out = p:read("a")
    p:close()
    local host = "127.0.0.1:" .. s.port
    local seen = {}
    -- (the text may be cut with "..." to keep the line within 79 columns)
    for secs in out:gmatch("\r\27%[Kfluence: selecting: 1 object so far [^\r]-%(waiting for " ..
                           host:gsub("%.", "%%.") .. ", (%d) s%)") do
      seen[#seen + 1] = tonumber(secs)
    end
    -- drawn once the operation is 1 s old, then again each second
    assert.is_true(#seen >= 2, out)
    for i = 2, #seen do assert.are.equal(seen[i - 1] + 1, seen[i], out) end
    assert.is_nil(out:find("SECRET", 1, true))          -- the host only, never the query
    assert.is_nil(out:find("/delay", 1, true))
    -- cleared before the result lines
    assert.matches('\r\27%[Kselected backend "a" for Pod/p', out)
    -- no line is wider than 79 columns
    for line in out:gmatch("\27%[K([^\r\n]*)") do assert.is_true(#line <= 79, line) end
  end)

  it("is erased before an error message", function()
    if not have("script") then return pending("script(1) is not installed (bsdutils) for a terminal") end
    local bad = cli.write(dir .. "/bad.yaml", (cli.slurp(job):gsub("min%-cost", "min-kost")))
    local cmd = command(bad, 1600)
    local p = io.popen("script -qec " .. q(cmd .. " >/dev/null") .. " /dev/null")
    local out = p:read("a")
    p:close()
    assert.matches("%(waiting for [^\r]*\r\27%[Kfluence: [^\r\n]*bad%.yaml:6:47: Pod/p: unknown attribute", out)
  end)

  it("is never drawn when stderr is not a terminal", function()
    local r = cli.run{ "select", "-f", job, "--offline", "--provider", "slow",
                       env = { HOME = dir, SLOW_URL = ("http://127.0.0.1:%d/delay?ms=1500"):format(s.port) } }
    assert.are.equal(0, r.code, r.err)
    assert.is_nil(r.err:find("\27", 1, true))
    assert.matches('^selected backend "a" for Pod/p', r.err)
  end)
end)

-- A caller that updates per object asks progress.due() first, so that off a
-- terminal it formats nothing: that held from the second object on, and now
-- for the first too (a small selection formatted its one text, and loaded
-- fluence.plural for it, for nobody).  spec/run pipes busted's stderr.
describe("progress.due", function()
  it("is false off a terminal, even before any update started the clock", function()
    local progress = require "fluence.progress"
    local tty = io.popen("test -t 2 && echo yes || echo no"):read("l") == "yes"
    if tty then return pending("stderr is a terminal here; spec/run pipes it") end
    progress.update(nil)               -- no operation: the clock not started
    assert.is_false(progress.due())
    progress.update("selecting")
    assert.is_false(progress.due())
    progress.update(nil)
  end)
end)
