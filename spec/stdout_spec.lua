-- No silent data loss (issue 24, class 3): every verb that writes to stdout,
-- into a full disk (/dev/full) or a closed stdout, ends with
-- "fluence: write error: REASON" and exit 74 (core/output.h), as coreutils'
-- close_stdout makes a program do; a reader that goes away still ends the
-- run with SIGPIPE (141 in a shell).
local cli = require "support.cli"
local envtest = require "support.envtest"

local EX = cli.root .. "/examples"
local ATTRS = EX .. "/quickstart/attributes.yaml"
local OUTPUT = 74

-- Runs fluence with its stdout redirected by `how` (a shell redirection).
local function run(how, args)
  local argv = { "-c", 'exec "$0" "$@" ' .. how, cli.bin }
  for _, a in ipairs(args) do argv[#argv + 1] = a end
  argv.bin, argv.env = "sh", { HOME = "/nonexistent", KUBECONFIG = false }
  return cli.run(argv)
end

local function write_error(r, reason, code)
  assert.are.equal(code or OUTPUT, r.code, r.err)
  assert.matches("fluence: write error: " .. reason .. "\n$", r.err)
end

describe("stdout that cannot be written", function()
  local dir, pod, jobspec, policy
  setup(function()
    dir, pod = cli.workdir()
    policy = cli.write(dir .. "/policy.lua", 'return "min-cost"\n')
    local r = cli.run{ "jobspec", "-f", EX .. "/gang-does-not-fit/job-fits.yaml" }
    assert.are.equal(0, r.code, r.err)
    jobspec = cli.write(dir .. "/jobspec.yaml", r.out)
  end)
  teardown(cli.cleanup)

  local verbs = {
    { "select", "-f", "POD", "--attributes", ATTRS, "--offline" },
    { "select", "-f", "POD", "--attributes", ATTRS, "--offline", "-o", "json" },
    { "run", "POLICY", "-f", "POD", "--attributes", ATTRS, "--offline" },
    { "explain", "-f", "POD", "--attributes", ATTRS, "--offline" },
    { "apply", "-f", "POD", "--attributes", ATTRS, "--offline", "--dry-run" },
    { "match", "--graph", EX .. "/gang-does-not-fit/cluster.json", "JOBSPEC" },
    { "jobspec", "-f", "POD" },
    { "policies" },
    { "completion", "bash" },
    { "version" },
    { "help" },
    { "select", "--help" },
  }
  for _, v in ipairs(verbs) do
    it(table.concat(v, " "):gsub(cli.root .. "/", ""), function()
      local args = {}
      local files = { POD = pod, JOBSPEC = jobspec, POLICY = policy }
      for i, a in ipairs(v) do args[i] = files[a] or a end
      local ok = run("", args)
      assert.are.equal(0, ok.code, ok.err)
      assert.is_true(#ok.out > 0)
      write_error(run(">/dev/full", args), "No space left on device")
      write_error(run(">&-", args), "Bad file descriptor")
    end)
  end

  it("keeps the code of an error already reported, which wrote nothing", function()
    local bad = cli.write(dir .. "/bad.yaml", "kind: [\n")
    for _, how in ipairs{ ">&-", ">/dev/full" } do
      local r = run(how, { "select", "-f", bad, "--offline" })
      assert.are.equal(3, r.code)
      assert.is_nil(r.err:find("write error", 1, true))
    end
  end)

  it("a closed stdout is never taken by a file fluence opens", function()
    -- the manifest is opened while stdout is closed: were it given fd 1, the
    -- selection would be written into... nothing (read-only) or the input
    local copy = cli.write(dir .. "/copy.yaml", cli.slurp(pod))
    write_error(run(">&-", { "select", "-f", copy, "--attributes", ATTRS, "--offline" }), "Bad file descriptor")
    assert.are.equal(cli.slurp(pod), cli.slurp(copy))
  end)

  it("a reader that goes away: SIGPIPE, 141", function()
    -- more than a pipe holds, to a reader that takes one byte
    local stream = {}
    for i = 1, 3000 do stream[#stream + 1] = (cli.POD:format("min-cost"):gsub("name: p", "name: p" .. i)) end
    local big = cli.write(dir .. "/big.yaml", table.concat(stream, "---\n"))
    local r = cli.run{ bin = "sh", "-c", '"$0" "$@"; echo "status $?" >&2', cli.bin,
                       "select", "-f", big, "--attributes", ATTRS, "--offline",
                       env = { HOME = "/nonexistent" } }
    assert.are.equal(0, r.code)
    r = cli.run{ bin = "sh", "-c", '{ "$0" "$@"; echo "status $?" >&2; } | head -c 1 >/dev/null', cli.bin,
                 "select", "-f", big, "--attributes", ATTRS, "--offline", env = { HOME = "/nonexistent" } }
    assert.matches("status 141\n$", r.err)
  end)
end)

envtest.describe("stdout that cannot be written, with a cluster", function(api)
  local ns
  setup(function() ns = api:namespace("stdout") end)
  teardown(cli.cleanup)

  it("graph, and apply -o json (applied, then the report fails)", function()
    local env = { HOME = "/nonexistent" }
    local function go(how, args)
      local argv = { bin = "sh", "-c", 'exec "$0" "$@" ' .. how, cli.bin, env = env }
      for _, a in ipairs(args) do argv[#argv + 1] = a end
      return cli.run(argv)
    end
    local graph = { "graph", "--kubeconfig", api.kubeconfig }
    assert.are.equal(0, go("", graph).code)
    write_error(go(">/dev/full", graph), "No space left on device")
    local _, pod = cli.workdir()
    local apply = { "apply", "-f", pod, "--attributes", ATTRS, "--kubeconfig", api.kubeconfig, "-n", ns, "-o", "json" }
    write_error(go(">/dev/full", apply), "No space left on device")
    write_error(go(">&-", apply), "Bad file descriptor")
  end)
end)
