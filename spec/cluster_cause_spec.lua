-- Errors name their cause without -v (issue 27, point 1), against two real
-- kube-apiservers: a dead server, a rejected token (401), a missing right
-- (403) and a missing ConfigMap (404) are said on one line naming the
-- context, the server and the cause; exit 4 when the cluster was needed
-- for the answer (no other source of backends, --require-offerings,
-- graph), a note and on when it was not (--attributes, another cluster).
local cli = require "support.cli"
local envtest = require "support.envtest"

local ATTRS = cli.root .. "/examples/quickstart/attributes.yaml"

local function esc(s) return (s:gsub("%p", "%%%0")) end

envtest.describe("the cause of a cluster that cannot be read", function(east)
  local west = assert(envtest.get("west"))
  local dir, kubeconfig, pod, ns
  local DEAD = "https://127.0.0.1:1"

  setup(function()
    dir = cli.tmpdir()
    ns = west:namespace("cause")
    west:request("POST", ("/api/v1/namespaces/%s/configmaps"):format(ns), {
      apiVersion = "v1", kind = "ConfigMap", metadata = { name = "fluence-resources" },
      data = { ["resources.yaml"] = "resources:\n  - type: gpu\n    name: gpu-l4\n    attributes: {cost_usd: 1}\n" } })
    kubeconfig = envtest.kubeconfig_many(dir .. "/config", {
      { name = "east", api = east }, { name = "west", api = west }, { name = "dead", api = east, server = DEAD },
      { name = "east-nobody", api = east, user = { token = east.tokens.nobody } },
      { name = "east-expired", api = east, user = { token = "fluence-envtest-expired" } } })
    _, pod = cli.workdir()
  end)
  teardown(cli.cleanup)

  local function run(...)
    local args = { ... }
    args.env = { KUBECONFIG = kubeconfig, HOME = dir }
    return cli.run(args)
  end

  -- exit 4, nothing on stdout, one line: the context, its server, the cause
  local function cluster_error(r, context, server, cause)
    assert.are.equal(4, r.code, r.err)
    assert.are.equal("", r.out)
    assert.matches("^fluence: [^\n]+\n$", r.err)
    assert.matches(('context "%s" %%(%s%%): '):format(esc(context), esc(server)), r.err)
    assert.matches(cause, r.err)
    assert.is_nil(r.err:find("no candidate backends", 1, true), r.err)
    assert.is_nil(r.err:find("selecting over all", 1, true), r.err)
  end

  local NEEDED = "; no other source of backends %(give %-%-attributes FILE or %-%-provider NAME%)\n$"

  it("a dead server, with nothing else to select from: exit 4, not 'no candidate backends'", function()
    cluster_error(run("select", "-f", pod, "--context", "dead"), "dead", DEAD,
                  "cannot read the ConfigMap kube%-system/fluence%-resources: Failed to connect to 127%.0%.0%.1 port 1 " ..
                  ".*" .. NEEDED)
    -- explain too: it would have nothing to explain
    cluster_error(run("explain", "-f", pod, "--context", "dead"), "dead", DEAD, "Failed to connect")
  end)

  it("a rejected token (401), a missing right (403), no ConfigMap (404)", function()
    cluster_error(run("select", "-f", pod, "--context", "east-expired"), "east-expired", east.url,
                  "Unauthorized %(HTTP 401 Unauthorized%); the server rejected the credentials of user \"east%-expired\"" ..
                  ".*" .. NEEDED)
    cluster_error(run("select", "-f", pod, "--context", "east-nobody"), "east-nobody", east.url,
                  'cannot read the ConfigMap kube%-system/fluence%-resources: configmaps "fluence%-resources" is ' ..
                  'forbidden: User "nobody" cannot get resource "configmaps".-%(HTTP 403 Forbidden%)' .. NEEDED)
    cluster_error(run("select", "-f", pod, "--context", "east"), "east", east.url,
                  'configmaps "fluence%-resources" not found %(HTTP 404 Not Found%)' .. NEEDED)
  end)

  it("--attributes: a note naming the cause, and the selection goes on", function()
    local r = run("select", "-f", pod, "--context", "dead", "--attributes", ATTRS)
    assert.are.equal(0, r.code, r.err)
    assert.matches("require%-backend", r.out)
    assert.matches(('^note: scheduler offerings unknown: context "dead" %%(%s%%): cannot read the ConfigMap ' ..
                    'kube%%-system/fluence%%-resources: Failed to connect[^\n]*; selecting over all provided backends\n')
                   :format(esc(DEAD)), r.err)
  end)

  it("--require-offerings: exit 4 with the cause, never 'selecting over all'", function()
    local r = run("select", "-f", pod, "--context", "dead", "--attributes", ATTRS, "--require-offerings")
    cluster_error(r, "dead", DEAD, "Failed to connect.*%(%-%-require%-offerings%)\n$")
  end)

  it("several contexts: every cluster that could not be read is named when none gave a backend", function()
    local r = run("select", "-f", pod, "--context", "dead", "--context", "east-expired")
    cluster_error(r, "dead", DEAD, "Failed to connect")
    assert.matches(('; context "east%%-expired" %%(%s%%): cannot read the ConfigMap [^\n]*HTTP 401'):format(esc(east.url)),
                   r.err)
  end)

  it("several contexts: one dead while another offers backends is a note, and the other is chosen", function()
    local r = run("select", "-f", pod, "--context", "dead", "--context", "west", "--fluence-ns", ns)
    assert.are.equal(0, r.code, r.err)
    assert.matches('selected backend "gpu%-l4" on context "west"', r.err)
    assert.matches(('note: scheduler offerings unknown: context "dead" %%(%s%%): cannot read the ConfigMap %s/' ..
                    'fluence%%-resources: Failed to connect'):format(esc(DEAD), esc(ns)), r.err)
  end)

  it("graph needs the nodes: exit 4 with the cause", function()
    cluster_error(run("graph", "--context", "dead"), "dead", DEAD, "cannot list the nodes: Failed to connect")
    cluster_error(run("graph", "--context", "east-nobody"), "east-nobody", east.url,
                  'cannot list the nodes: nodes is forbidden: User "nobody" cannot list resource "nodes"')
  end)
end)
