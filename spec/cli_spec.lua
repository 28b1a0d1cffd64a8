-- The command line: verbs, help, usage errors, exit codes, kubectl plugin.
local cli = require "support.cli"

describe("fluence command line", function()
  it("prints its version", function()
    local r = cli.run{ "version" }
    assert.are.equal(0, r.code)
    assert.matches("^fluence %d+%.%d+%.%d+ %(Lua 5%.4%)\n$", r.out)
    assert.are.equal(r.out, cli.run{ "--version" }.out)
  end)

  it("prints help with every verb and the exit codes", function()
    local r = cli.run{ "--help" }
    assert.are.equal(0, r.code)
    for _, verb in ipairs{ "select", "apply", "create", "run", "explain", "match",
                           "policies", "providers", "version", "help" } do
      assert.matches("\n  " .. verb .. " ", r.out, 1, true)
    end
    assert.matches("Exit codes:", r.out, 1, true)
    assert.are.equal(r.out, cli.run{}.out)
    assert.are.equal(r.out, cli.run{ "help" }.out)
  end)

  it("prints a verb's help with its options", function()
    local r = cli.run{ "select", "--help" }
    assert.are.equal(0, r.code)
    assert.matches("Usage: fluence select", r.out, 1, true)
    assert.matches("--attributes FILE", r.out, 1, true)
    assert.are.equal(r.out, cli.run{ "help", "select" }.out)
    assert.are.equal(r.out, cli.run{ "select", "-h" }.out)
  end)

  it("rejects unknown verbs and options with the usage exit code", function()
    for _, args in ipairs{ { "frobnicate" }, { "select", "--nope" }, { "select", "-x" },
                           { "version", "--attributes", "x" }, { "select", "-f" },
                           { "select", "--offline=yes" }, { "help", "nope" } } do
      local r = cli.run(args)
      assert.are.equal(2, r.code)
      assert.are.equal("", r.out)
      assert.matches("^fluence: [^\n]+\n$", r.err)
    end
  end)

  it("speaks as kubectl fluence when installed as kubectl-fluence", function()
    local r = cli.run{ "--help", bin = cli.root .. "/bin/kubectl-fluence" }
    assert.matches("^Usage: kubectl fluence VERB", r.out)
  end)

  it("is discovered by the real kubectl as a plugin", function()
    if not os.execute("command -v kubectl >/dev/null 2>&1") then
      pending("kubectl is not installed")
      return
    end
    local r = cli.run{ "fluence", "version", bin = "kubectl",
                       env = { PATH = cli.root .. "/bin:" .. os.getenv("PATH") } }
    assert.are.equal(0, r.code, r.err)
    assert.matches("^fluence %d+%.%d+%.%d+", r.out)
    r = cli.run{ "fluence", "help", bin = "kubectl",
                 env = { PATH = cli.root .. "/bin:" .. os.getenv("PATH") } }
    assert.matches("Usage: kubectl fluence", r.out, 1, true)
  end)
end)

describe("startup", function()
  -- libcurl (and the 30-odd libraries under it) cost ~15 ms per start when
  -- linked: they are loaded on first use (core/lazylib.c).  An offline
  -- selection must not load them at all; a run that needs them must.
  local function loaded_libs(args)
    args.env = args.env or {}
    args.env.LD_DEBUG = "libs"
    args.env.HOME = "/nonexistent"
    local r = cli.run(args)
    return r, r.err
  end

  it("loads neither libcurl nor libcrypto for an offline selection", function()
    local r, trace = loaded_libs{ "select", "-f", cli.root .. "/examples/quickstart/job.yaml", "--attributes",
                                  cli.root .. "/examples/quickstart/attributes.yaml", "--offline" }
    assert.are.equal(0, r.code)
    assert.is_nil(trace:find("libcurl", 1, true), "libcurl was loaded")
    assert.is_nil(trace:find("libcrypto", 1, true), "libcrypto was loaded")
  end)

  it("loads libcurl when it talks to a cluster", function()
    local dir = cli.tmpdir()
    local kc = cli.write(dir .. "/kubeconfig", "apiVersion: v1\nkind: Config\ncurrent-context: c\n" ..
      "clusters: [{name: k, cluster: {server: 'https://127.0.0.1:1'}}]\n" ..
      "users: [{name: u, user: {token: t}}]\ncontexts: [{name: c, context: {cluster: k, user: u}}]\n")
    local _, trace = loaded_libs{ "select", "-f", cli.root .. "/examples/quickstart/job.yaml", "--attributes",
                                  cli.root .. "/examples/quickstart/attributes.yaml", "--kubeconfig", kc }
    cli.cleanup()
    assert.truthy(trace:find("libcurl", 1, true), "libcurl was not loaded")
  end)
end)
