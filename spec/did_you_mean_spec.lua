-- Did you mean (issue 27, point 2): a --context the kubeconfig does not
-- define is a mistake on the command line (exit 2, nothing asked of any
-- cluster), named with the closest context and the nearest others; an
-- unknown verb or option names the nearest one, as kubectl and git do.  One
-- rule finds them all (lua/fluence/suggest.lua, also from C for the
-- command line); what the user typed is escaped.
local cli = require "support.cli"
local json = require "fluence.json"
local envtest = require "support.envtest"

local function usage(r, pattern)
  assert.are.equal(2, r.code, r.err)
  assert.are.equal("", r.out)
  assert.matches("^fluence: [^\n]+\n$", r.err)
  if pattern then assert.matches(pattern, r.err) end
end

describe("an unknown verb or option", function()
  it("names the nearest verb", function()
    usage(cli.run{ "selct" }, 'unknown verb selct; did you mean "select"%?')
    usage(cli.run{ "aply", "-f", "x" }, 'did you mean "apply"%?')
    -- nothing near: no guess
    usage(cli.run{ "frobnicate" }, "^fluence: unknown verb frobnicate %(see 'fluence %-%-help'%)\n$")
  end)

  it("names the nearest option of that verb, with or without a value", function()
    usage(cli.run{ "select", "--atributes", "a.yaml" }, "unknown option %-%-atributes; did you mean %-%-attributes%?")
    usage(cli.run{ "select", "--kubeconfg=k" }, "unknown option %-%-kubeconfg=k; did you mean %-%-kubeconfig%?")
    usage(cli.run{ "graph", "--contxt", "east" }, "did you mean %-%-context%? %(see 'fluence graph %-%-help'%)")
    -- an option of another verb is not suggested where it means nothing
    usage(cli.run{ "graph", "--atributes", "a.yaml" }, "^fluence: unknown option %-%-atributes %(see")
  end)

  it("escapes what was typed", function()
    usage(cli.run{ "sel\27[31m" }, "unknown verb sel\\x1b%[31m ")
    usage(cli.run{ "select", "--cost-tol", "a\27[2J" }, '%-%-cost%-tol: "a\\x1b%[2J" is not')
    usage(cli.run{ "help", "x\27" }, "^fluence: unknown verb x\\x1b %(see 'fluence %-%-help'%)\n$")
  end)

  -- the same message after `help` as anywhere else, from the same code
  it("after help, names the nearest verb as an unknown verb does", function()
    local r = cli.run{ "help", "selct" }
    usage(r, "^fluence: unknown verb selct; did you mean \"select\"%? %(see 'fluence %-%-help'%)\n$")
    assert.are.equal(cli.run{ "selct" }.err, r.err)
    usage(cli.run{ "help", "frobnicate" }, "^fluence: unknown verb frobnicate %(see 'fluence %-%-help'%)\n$")
    usage(cli.run{ "help", "sel\27[31m" }, "unknown verb sel\\x1b%[31m ")
  end)

  -- a short option is one character, which may take several bytes
  it("names an unknown short option whole, escaped", function()
    usage(cli.run{ "-Z" }, "^fluence: unknown option %-Z %(see 'fluence %-%-help'%)\n$")
    usage(cli.run{ "select", "-vZ" }, "^fluence: unknown option %-Z %(see 'fluence select %-%-help'%)\n$")
    usage(cli.run{ "select", "-\195\164" }, "^fluence: unknown option %-\195\164 %(see")
    usage(cli.run{ "select", "-\27[2J" }, "^fluence: unknown option %-\\x1b %(see")
    usage(cli.run{ "select", "-\195" }, "^fluence: unknown option %-\\xc3 %(see")
  end)
end)

describe("an unknown --context", function()
  local dir, kubeconfig
  setup(function()
    dir = cli.tmpdir()
    local contexts, clusters = {}, {}
    for i, name in ipairs{ "east", "west", "staging-east", "prod-west", "dev", "ci", "lab" } do
      clusters[i] = { name = name, cluster = { server = "https://127.0.0.1:1" } }
      contexts[i] = { name = name, context = { cluster = name, user = "u" } }
    end
    kubeconfig = cli.write(dir .. "/config", json.encode{ apiVersion = "v1", kind = "Config",
      ["current-context"] = "east", clusters = json.array(clusters), contexts = json.array(contexts),
      users = json.array{ { name = "u", user = { token = "t" } } } })
  end)
  teardown(cli.cleanup)

  local function run(verb, ...)
    local args = { verb, ... }
    args.env = { KUBECONFIG = kubeconfig, HOME = dir }
    return cli.run(args)
  end

  it("is a usage error naming it, the closest and the nearest others", function()
    local _, pod = cli.workdir()
    for _, verb in ipairs{ "select", "apply", "explain", "graph" } do
      local r = verb == "graph" and run(verb, "--context", "eats") or run(verb, "-f", pod, "--context", "eats")
      usage(r, '^fluence: %-%-context "eats": no such context in the kubeconfig %(' .. dir:gsub("%p", "%%%0") ..
               '/config%); did you mean "east"%? %(its contexts, nearest first: "east", ')
      assert.matches(" and 2 more%)\n$", r.err)
    end
  end)

  it("even beside --attributes, where a cluster that cannot be read is only a note", function()
    local _, pod = cli.workdir()
    usage(run("select", "-f", pod, "--attributes", cli.root .. "/examples/quickstart/attributes.yaml",
              "--context", "wset"), 'did you mean "west"%?')
  end)

  it("with one of several contexts misspelt", function()
    local _, pod = cli.workdir()
    usage(run("select", "-f", pod, "--context", "east", "--context", "prod-wset"), 'did you mean "prod%-west"%?')
  end)

  it("says no more than the contexts when none is near", function()
    local _, pod = cli.workdir()
    local r = run("select", "-f", pod, "--context", "zzzzzzzzzzzz")
    usage(r, '%-%-context "zzzzzzzzzzzz": no such context in the kubeconfig %([^)]+%) %(its contexts, nearest first: ')
    assert.is_nil(r.err:find("did you mean", 1, true))
  end)
end)

envtest.describe("an unknown --context beside real clusters", function(east)
  local west = assert(envtest.get("west"))
  it("asks nothing of any of them", function()
    local dir = cli.tmpdir()
    local kc = envtest.kubeconfig_many(dir .. "/config", { { name = "east", api = east }, { name = "west", api = west } })
    local _, pod = cli.workdir()
    east:audit(); west:audit()
    local r = cli.run{ "select", "-f", pod, "--kubeconfig", kc, "--context", "east", "--context", "wets" }
    usage(r, 'did you mean "west"%?')
    for _, api in ipairs{ east, west } do
      for _, e in ipairs(api:audit()) do
        assert.is_nil(e.uri:find("fluence-resources", 1, true), "a request was sent: " .. e.uri)
      end
    end
    cli.cleanup()
  end)
end)
