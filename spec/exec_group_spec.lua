-- An exec credential plugin runs in a process group of its own, and the
-- group is killed (SIGKILL) before the plugin is reaped, on every way out:
-- whatever the plugin started in the background (a shell script's `sleep &`)
-- ends with it, and such a child holding our pipe open delays nothing — the
-- plugin's output is what it wrote before it exited.  Each background child
-- is a `sleep` of a unique duration, looked for after fluence has exited.
local cli = require "support.cli"
local json = require "fluence.json"
local sleeper = require "support.sleeper"
local envtest = require "support.envtest"

local HANG = 60   -- the hang detector (cli.run), far past every bound here

local CREDENTIAL = '{"apiVersion":"client.authentication.k8s.io/v1","kind":"ExecCredential",' ..
                   '"status":{"token":"t0k3n-never-shown"}}'

describe("exec credential plugins' children", function()
  local dir
  before_each(function() dir = cli.tmpdir() end)
  after_each(cli.cleanup)

  local function marker() return sleeper.marker(300) end
  local running = sleeper.running

  local function plugin(body)
    return sleeper.script(dir .. "/plugin.sh", body)
  end

  -- a kubeconfig whose user runs `path`; its cluster refuses connections
  local function kubeconfig(path)
    return cli.write(dir .. "/config", json.encode{
      apiVersion = "v1", kind = "Config", ["current-context"] = "t",
      clusters = json.array{ { name = "c", cluster = { server = "https://127.0.0.1:1" } } },
      users = json.array{ { name = "u", user = { exec = { apiVersion = "client.authentication.k8s.io/v1",
                                                            command = path } } } },
      contexts = json.array{ { name = "t", context = { cluster = "c", user = "u" } } },
    })
  end

  local function graph(path, timeout)
    local r = cli.run{ "graph", "--kubeconfig", kubeconfig(path), "--request-timeout", timeout, timeout = HANG,
                       env = { HOME = dir, KUBECONFIG = false, KUBERNETES_SERVICE_HOST = false } }
    assert.is_true(r.code ~= 124 and r.code ~= 137, "stopped by the hang detector: " .. r.err)
    assert.are.equal("", r.out)
    assert.are.equal(4, r.code, r.err)
    assert.is_nil(r.err:find("t0k3n", 1, true), r.err)
    return r
  end

  it("one that answers and exits, leaving a child that holds its stdout: answer taken, child killed", function()
    local m = marker()
    local path = plugin("sleep " .. m .. " &\necho '" .. CREDENTIAL .. "'\n")
    -- half a minute for the plugin (the hang detector is at a minute): before,
    -- the child's open pipe made the plugin look unfinished until then
    local r = graph(path, "30")
    assert.is_nil(r.err:find("exec credential plugin", 1, true), r.err)
    assert.matches("^fluence: [^\n]*127%.0%.0%.1:1", r.err)
    assert.is_false(running(m), "the plugin's child is still running")
  end)

  it("one that does not finish: killed at its limit with what it started", function()
    local m = marker()
    local path = plugin("sleep " .. m .. " &\nsleep " .. m .. "\n")
    local r = graph(path, "1")
    assert.matches('^fluence: [^\n]*user "u": exec credential plugin [^\n]*plugin%.sh failed: it did not finish ' ..
                   'within 1 s, and was stopped %(SIGKILL%)\n$', r.err)
    assert.is_false(running(m), "the plugin or its child is still running")
  end)

  it("one that fails, leaving a child: the failure said, the child killed", function()
    local m = marker()
    local path = plugin("sleep " .. m .. " >/dev/null 2>&1 &\necho nope >&2\nexit 3\n")
    local r = graph(path, "60")
    assert.matches("plugin%.sh failed", r.err)
    assert.is_false(running(m), "the plugin's child is still running")
  end)

  -- while its output is read, and while its exit is waited for (it closed
  -- its stdout)
  for _, closes in ipairs{ "", "exec >&-\n" } do
    it("fluence stopped by a signal meanwhile: the plugin's group killed first, the signal then ends fluence" ..
       (closes == "" and "" or " (stdout closed)"), function()
      local m = marker()
      local started = dir .. "/started"
      local path = plugin(closes .. "sleep " .. m .. " &\necho $$ > " .. cli.quote(started) .. "\nsleep " .. m .. "\n")
      -- the run in the background, SIGTERM once the plugin has started, then
      -- its exit status.  The plugin has 10 minutes; the hang detector
      -- (SIGKILL, 137) is at half a minute: a fluence that went on waiting
      -- for the plugin after the signal is caught by it.
      local r = cli.sh(("HOME=%s %s graph --kubeconfig %s --request-timeout 600 >/dev/null 2>%s/err &\n" ..
                        "f=$!; i=0\n" ..
                        "while [ ! -e %s ] && [ $i -lt 300 ]; do sleep 0.1; i=$((i+1)); done\n" ..
                        "kill -TERM $f; i=0\n" ..
                        "while [ \"$(cut -d' ' -f3 /proc/$f/stat)\" != Z ] && [ $i -lt 300 ]; do\n" ..
                        "  sleep 0.1; i=$((i+1)); done\n" ..
                        "kill -KILL $f 2>/dev/null; wait $f; echo $?\n")
                       :format(cli.quote(dir), cli.quote(cli.bin), cli.quote(kubeconfig(path)), cli.quote(dir),
                               cli.quote(started)))
      -- what a failure leaves behind does not outlive the spec
      finally(function()
        local group = (cli.slurp(started) or ""):match("^%d+")
        if group and running(m) then os.execute("kill -9 -" .. group .. " 2>/dev/null") end
      end)
      assert.are.equal("143\n", r.out, r.err .. (cli.slurp(dir .. "/err") or ""))
      assert.is_false(running(m), "the plugin or its child is still running")
    end)
  end
end)

-- The answer taken for real: a plugin leaving a child on its stdout gives the
-- token a real kube-apiserver accepts, at once rather than at its limit.
envtest.describe("exec credential plugins' children, against a real kube-apiserver", function(api)
  it("the plugin's token reads the cluster; its child is killed", function()
    local dir = cli.tmpdir()
    local m = sleeper.marker(400)
    local plugin = sleeper.script(dir .. "/plugin", "sleep " .. m .. " &\n" ..
      "printf '{\"apiVersion\":\"client.authentication.k8s.io/v1\",\"kind\":\"ExecCredential\",\"status\":{\"token\":\"%s\"}}\\n' \"$TOKEN\"\n")
    local config = cli.write(dir .. "/config", json.encode{
      apiVersion = "v1", kind = "Config", ["current-context"] = "t",
      clusters = json.array{ { name = "c", cluster = { server = api.url, ["certificate-authority"] = api.pki .. "/ca.crt" } } },
      users = json.array{ { name = "u", user = { exec = { apiVersion = "client.authentication.k8s.io/v1", command = plugin,
        env = json.array{ { name = "TOKEN", value = api.tokens.admin } } } } } },
      contexts = json.array{ { name = "t", context = { cluster = "c", user = "u" } } },
    })
    local job = cli.write(dir .. "/pod.yaml", cli.POD:format("min-cost"))
    local attrs = cli.write(dir .. "/attrs.yaml", "version: 1\nbackends:\n  - name: gpu-l4\n    attributes: {cost_usd: 1}\n")
    -- the plugin has half a minute, the hang detector a whole one
    local r = cli.run{ "select", "-f", job, "--attributes", attrs, "--kubeconfig", config,
                       "--fluence-ns", api:namespace("children"), "--request-timeout", "30", timeout = 60,
                       env = { HOME = dir, KUBECONFIG = false, KUBERNETES_SERVICE_HOST = false } }
    assert.are.equal(0, r.code, r.err)
    assert.matches("gpu%-l4", r.out)
    -- read with the token: the server answered that the offerings are not there (not 401)
    assert.matches("fluence%-resources\" not found %(HTTP 404", r.err)
    assert.is_false(sleeper.running(m), "the plugin's child is still running")
    cli.cleanup()
  end)
end)
