-- Hints that are exact and safe (issue 27, point 3).  A command fluence
-- suggests is pasted into a shell as it stands: it must name the context
-- (the user's current one may be another cluster: the hint after a 422 used
-- to delete in the current context), the namespace and KIND.GROUP/NAME, the
-- kubeconfig the run was given, every word quoted by the one shell quoting
-- (fluence.shell) -- never prose like `(context "west")`.  Each hint here is
-- run, as printed, against two real API servers.  A server-side apply
-- conflict (409) names the other field manager and its fields and suggests
-- the same run with --force-conflicts, which is run too.
local json = require "fluence.json"
local cli = require "support.cli"
local envtest = require "support.envtest"
local shell = require "fluence.shell"
local hint = require "fluence.hint"

local PIN = "fluence.flux-framework.org/require-backend"

-- What bash makes of word: the bytes it passes to a program.
local function through_bash(word)
  local r = cli.run{ bin = "bash", valgrind = false, "-c", "printf %s " .. word }
  assert.are.equal(0, r.code, r.err)
  return r.out
end

describe("shell.quote", function()
  it("leaves plain words alone and quotes the rest so the shell gives back the same bytes", function()
    assert.are.equal("job.batch/train", shell.quote("job.batch/train"))
    assert.are.equal("--context=west", shell.quote("--context=west"))
    for _, s in ipairs{ "", "we st", "it's", "$(rm -rf ~)", "`id`", "a;b", "a|b", "*", "~", "=ls", "x\ny",
                        "\27[31mred", "tab\there", "back\\slash", "quote'\"", "caf\u{e9}", "rtl\u{202e}x",
                        "\xff\xfe", "a'b\nc'd" } do
      local q = shell.quote(s)
      assert.are.equal(s, through_bash(q), q)
      -- a hint is printed: nothing in it may reach the terminal raw
      assert.is_nil(q:find("[%c\127]"), q)
      assert.is_nil(q:find("\u{202e}", 1, true), q)
    end
  end)

  it("builds kubectl commands that name the context, the namespace, the object and the kubeconfig", function()
    assert.are.equal("kubectl delete job.batch/train -n team --context west --kubeconfig '/tmp/my config'",
                     hint.kubectl("delete", { ref = "job.batch/train", namespace = "team", context = "west",
                                              kubeconfig = "/tmp/my config" }))
    -- cluster-scoped: no -n; a context a flag parser could misread
    assert.are.equal("kubectl delete clusterrole.rbac.authorization.k8s.io/x --context=-odd",
                     hint.kubectl("delete", { ref = "clusterrole.rbac.authorization.k8s.io/x", context = "-odd" }))
    assert.are.equal("kubectl fluence apply -f 'my job.yaml' --force-conflicts",
                     hint.again({ prog = "kubectl fluence", argv = { "apply", "-f", "my job.yaml" } },
                                { "--force-conflicts" }))
    assert.are.equal("fluence apply -f - --force-conflicts (with the same manifest on its stdin)",
                     hint.again({ prog = "fluence", argv = { "apply", "-f", "-" }, opts = { filename = { "-" } } },
                                { "--force-conflicts" }))
  end)
end)

envtest.describe("hints against real API servers", function(east)
  local west = assert(envtest.get("west"))
  local dir, ns, kubeconfig, attrs, bindir

  setup(function()
    dir = cli.tmpdir()
    ns = "hints"
    -- current context: east; the contexts named with spaces and quotes, so
    -- a hint that does not quote them cannot work
    kubeconfig = envtest.contexts(dir .. "/kube config", ns, { { "east", east }, { "the west's", west } })
    attrs = cli.write(dir .. "/attrs.yaml", "version: 1\nbackends:\n  - name: gpu-a\n    attributes: {tier: 1}\n" ..
                                        "  - name: gpu-b\n    attributes: {tier: 2}\n")
    -- `fluence` on PATH for the hints that run fluence again
    bindir = cli.tmpdir()
    assert(os.execute(("ln -s %s %s"):format(cli.quote(cli.bin), cli.quote(bindir .. "/fluence"))))
  end)
  teardown(cli.cleanup)

  local function job(name, backend, parallelism)
    return cli.write(dir .. "/" .. name .. ".yaml", ([[
apiVersion: batch/v1
kind: Job
metadata:
  name: %s
  annotations:
    fluence.flux-framework.org/select-policy: "require:tier=%s"
spec:
  parallelism: %d
  template:
    spec:
      schedulerName: fluence
      restartPolicy: Never
      containers: [{name: c, image: busybox}]
]]):format(name, backend == "gpu-a" and 1 or 2, parallelism or 1))
  end

  local function apply(file, contexts, extra)
    local args = { "apply", "-f", file, "--attributes", attrs, "--kubeconfig", kubeconfig }
    for _, c in ipairs(contexts) do args[#args + 1] = "--context"; args[#args + 1] = c end
    for _, a in ipairs(extra or {}) do args[#args + 1] = a end
    return cli.run(args)
  end

  -- Runs a printed command line as a user would paste it.
  local function run_hint(line)
    return cli.run{ bin = "bash", valgrind = false, "-c", line,
                    env = { PATH = bindir .. ":" .. os.getenv("PATH"), HOME = dir, KUBECONFIG = false } }
  end

  local function jobs_path(name) return ("/apis/batch/v1/namespaces/%s/jobs/%s"):format(ns, name) end

  it("after a 422, suggests a delete that acts on the other context's copy, not the current one's", function()
    -- the same Job name in the current context (east): must survive the hint
    east:request("POST", ("/apis/batch/v1/namespaces/%s/jobs"):format(ns), json.decode(json.encode{
      apiVersion = "batch/v1", kind = "Job", metadata = { name = "train" },
      spec = { template = { spec = { restartPolicy = "Never", containers = json.array{ { name = "c", image = "x" } } } } } }))
    local r = apply(job("train", "gpu-a"), { "the west's" })
    assert.are.equal(0, r.code, r.err)
    assert.are.equal("gpu-a", west:get(jobs_path("train")).spec.template.metadata.annotations[PIN])
    -- another backend: the pod template cannot change in place
    r = apply(job("train", "gpu-b"), { "the west's" })
    assert.are.equal(4, r.code, r.err)
    local cmd = r.err:match("delete it %((kubectl delete .-)%) and apply again")
    assert.is_string(cmd, r.err)
    assert.are.equal("kubectl delete job.batch/train -n hints --context 'the west'\\''s' --kubeconfig " ..
                     shell.quote(kubeconfig), cmd)
    local h = run_hint(cmd)
    assert.are.equal(0, h.code, h.err)
    assert.is_nil(west:get(jobs_path("train")))
    assert.is_table(east:get(jobs_path("train")))
    -- and with it gone, the new selection applies
    r = apply(job("train", "gpu-b"), { "the west's" })
    assert.are.equal(0, r.code, r.err)
    assert.are.equal("gpu-b", west:get(jobs_path("train")).spec.template.metadata.annotations[PIN])
  end)

  it("with several contexts, names each cluster in shell words, not prose", function()
    local function west_only(backend)
      local text = cli.slurp(job("twice", backend)):gsub('"(require:tier=.)"',
                                                          [['%1,require:context="the west''s"']])
      return cli.write(dir .. "/twice.yaml", text)
    end
    local r = apply(west_only("gpu-a"), { "east", "the west's" })
    assert.are.equal(0, r.code, r.err)
    assert.matches("job.batch/twice %(context the west's%) serverside%-applied", r.out)
    r = apply(west_only("gpu-b"), { "east", "the west's" })
    assert.are.equal(4, r.code, r.err)
    local cmd = r.err:match("delete it %((kubectl delete .-)%) and apply again")
    assert.is_string(cmd, r.err)
    assert.is_nil(cmd:find("(context", 1, true), cmd)
    assert.matches("%-%-context 'the west'\\''s'", cmd)
    local h = run_hint(cmd)
    assert.are.equal(0, h.code, h.err)
    assert.is_nil(west:get(jobs_path("twice")))
  end)

  it("names the other field manager and its fields on a 409, and the rerun with --force-conflicts works", function()
    -- another manager owns .spec.parallelism
    local other = json.decode(json.encode{
      apiVersion = "batch/v1", kind = "Job", metadata = { name = "owned", namespace = ns },
      spec = { parallelism = 1, template = { metadata = { annotations = { [PIN] = "gpu-a" } },
        spec = { schedulerName = "fluence", restartPolicy = "Never",
                 containers = json.array{ { name = "c", image = "busybox" } } } } } })
    west:request("PATCH", jobs_path("owned"), other, "application/apply-patch+yaml", { fieldManager = "helm" })
    local file = job("owned", "gpu-a", 3)
    local r = apply(file, { "the west's" })
    assert.are.equal(4, r.code, r.err)
    assert.truthy(r.err:find('fluence: job.batch/owned: conflict: .spec.parallelism set by field manager "helm" ' ..
                             "(HTTP 409 Conflict); to take them over, run again with --force-conflicts: ", 1, true), r.err)
    local cmd = r.err:match("run again with %-%-force%-conflicts: ([^\n]+)")
    assert.are.equal(shell.command{ "fluence", "apply", "-f", file, "--attributes", attrs, "--kubeconfig", kubeconfig,
                                    "--context", "the west's", "--force-conflicts" }, cmd)
    local h = run_hint(cmd)
    assert.are.equal(0, h.code, h.err)
    assert.are.equal("job.batch/owned serverside-applied\n", h.out)
    assert.are.equal(3, west:get(jobs_path("owned")).spec.parallelism)
  end)
end)
