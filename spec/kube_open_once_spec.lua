-- Every verb opens each cluster once per run (issue 26): the kubeconfig is
-- read, and its exec credential plugin run, once per context, however many
-- parts of the run (the selection, the offerings provider, apply) talk to
-- that cluster.  `apply` used to open the clusters a second time after the
-- selection had: the plugin ran twice (a login prompt twice, a token minted
-- twice).  Counted against a real kube-apiserver, with a plugin that
-- records each of its runs.
local json = require "fluence.json"
local cli = require "support.cli"
local envtest = require "support.envtest"

local POLICY = "fluence.flux-framework.org/select-policy"

envtest.describe("clusters opened once per run", function(api)
  local dir, ns, attrs, job

  -- A plugin that appends a line to $COUNT at each run and answers with
  -- the admin's token.
  local PLUGIN = [[
#!/bin/sh
echo run >> "$COUNT"
printf '{"apiVersion":"client.authentication.k8s.io/v1","kind":"ExecCredential","status":{"token":"%s"}}\n' "$TOKEN"
]]

  -- A kubeconfig whose contexts (names) all reach this server through the
  -- plugin, each counting its runs in DIR/NAME.count.
  local function kubeconfig(names)
    local users, contexts = {}, {}
    for i, n in ipairs(names) do
      users[i] = { name = n, user = { exec = {
        apiVersion = "client.authentication.k8s.io/v1", command = dir .. "/plugin", interactiveMode = "Never",
        env = json.array{ { name = "COUNT", value = dir .. "/" .. n .. ".count" },
                          { name = "TOKEN", value = api.tokens.admin } } } } }
      contexts[i] = { name = n, context = { cluster = "envtest", user = n, namespace = ns } }
    end
    return cli.write(dir .. "/config-" .. table.concat(names, "-"), json.encode{
      apiVersion = "v1", kind = "Config", ["current-context"] = names[1],
      clusters = json.array{ { name = "envtest", cluster = { server = api.url,
                                                             ["certificate-authority"] = api.pki .. "/ca.crt" } } },
      users = json.array(users), contexts = json.array(contexts) })
  end

  -- How many times the plugin of context name ran since the last call.
  local function runs(name)
    local path = dir .. "/" .. name .. ".count"
    local n = select(2, (cli.slurp(path) or ""):gsub("\n", ""))
    os.remove(path)
    return n
  end

  setup(function()
    dir = cli.tmpdir()
    ns = api:namespace("once")
    cli.write(dir .. "/plugin", PLUGIN)
    assert(os.execute("chmod +x " .. cli.quote(dir .. "/plugin")))
    attrs = cli.write(dir .. "/attrs.yaml", "version: 1\nbackends:\n  - name: gpu-l4\n    attributes: {cost_usd: 1}\n")
    job = cli.write(dir .. "/job.yaml", ([[
apiVersion: batch/v1
kind: Job
metadata:
  name: train
  annotations:
    %s: min-cost
spec:
  template:
    spec:
      schedulerName: fluence
      restartPolicy: Never
      containers: [{name: c, image: busybox}]
]]):format(POLICY))
  end)
  teardown(cli.cleanup)

  local function fluence(verb, config, extra)
    local args = { verb, "-f", job, "--attributes", attrs, "--kubeconfig", config, "--fluence-ns", ns }
    for _, a in ipairs(extra or {}) do args[#args + 1] = a end
    return cli.run(args)
  end

  it("select and explain run the credential plugin once", function()
    local config = kubeconfig{ "east" }
    local r = fluence("select", config)
    assert.are.equal(0, r.code, r.err)
    assert.are.equal(1, runs("east"))
    r = fluence("explain", config)
    assert.are.equal(0, r.code, r.err)
    assert.are.equal(1, runs("east"))
  end)

  it("apply runs it once: the selection's clusters are the ones applied to", function()
    local config = kubeconfig{ "east" }
    local r = fluence("apply", config, { "--dry-run=server" })
    assert.are.equal(0, r.code, r.err)
    assert.matches("job.batch/train serverside%-applied", r.out)
    assert.are.equal(1, runs("east"))
    r = fluence("apply", config)
    assert.are.equal(0, r.code, r.err)
    assert.are.equal(1, runs("east"))
    -- offline, the selection reads no cluster: apply opens it, once
    r = fluence("apply", config, { "--offline" })
    assert.are.equal(0, r.code, r.err)
    assert.are.equal(1, runs("east"))
  end)

  it("with several contexts, apply runs each context's plugin once", function()
    local config = kubeconfig{ "east", "west" }
    local r = fluence("apply", config, { "--context", "east", "--context", "west", "--context", "east",
                                         "--dry-run=server" })
    assert.are.equal(0, r.code, r.err)
    assert.are.equal(1, runs("east"))
    assert.are.equal(1, runs("west"))
  end)

  it("with several contexts, diff and apply's plan run each context's plugin once", function()
    -- (placement, the lookup of old copies and the default context, which
    -- is read from the kubeconfig without its credentials: issue 27)
    local config = kubeconfig{ "east", "west" }
    local r = fluence("diff", config, { "--context", "east", "--context", "west" })
    assert.is_true(r.code == 0 or r.code == 1, r.err)
    assert.are.equal(1, runs("east"))
    assert.are.equal(1, runs("west"))
    r = fluence("apply", config, { "--context", "west", "--context", "east", "--dry-run" })
    assert.are.equal(0, r.code, r.err)
    assert.are.equal(1, runs("east"))
    assert.are.equal(1, runs("west"))
  end)
end)
