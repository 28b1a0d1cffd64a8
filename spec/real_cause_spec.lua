-- Errors that name the real cause (issue 24, class 7): a file that does not
-- end (a device, a FIFO's endless writer) is refused at its size limit with
-- its name (core/readfile.h), not "not enough memory", and a credential or
-- configuration file that is not a regular file is refused as what it is,
-- before it is read; a kubeconfig that is
-- wrong names the kubeconfig file first, located, exit 3 wherever it is
-- read; answers that are not what an API server says (a redirect, an HTML
-- page) are called what they are.
local cli = require "support.cli"
local sys = require "fluence.sys"

local ATTRS = cli.root .. "/examples/quickstart/attributes.yaml"
-- bounded memory: the limits must hold well below it
local LIMITS = os.getenv("FLUENCE_SANITIZE") and "ulimit -t 60; " or "ulimit -v 1048576; ulimit -t 60; "

local function run(args)
  local argv = { "-c", LIMITS .. 'exec "$0" "$@"', cli.bin }
  for _, a in ipairs(args) do argv[#argv + 1] = a end
  argv.bin, argv.stdin = "sh", args.stdin
  argv.env = args.env or {}
  argv.env.HOME = argv.env.HOME or "/nonexistent"
  argv.env.KUBECONFIG = false
  return cli.run(argv)
end

local function refused(r, code, pattern)
  assert.are.equal("", r.out)
  assert.are.equal(code, r.code, r.err)
  assert.matches(pattern, r.err)
  assert.is_nil(r.err:find("not enough memory", 1, true), r.err)
  assert.is_nil(r.err:find("traceback", 1, true), r.err)
end

local function escape(s) return (s:gsub("%p", "%%%0")) end

describe("files that do not end", function()
  local dir, pod
  before_each(function() dir, pod = cli.workdir() end)
  after_each(cli.cleanup)

  it("an attribute file that is /dev/zero: its name and the limit", function()
    refused(run{ "select", "-f", pod, "--attributes", "/dev/zero", "--offline" }, 3,
            "/dev/zero: larger than 64 MiB, the most fluence reads of a file that is not a manifest\n$")
  end)

  it("a kubeconfig, a policy file, a jobspec that are /dev/zero", function()
    refused(run{ "select", "-f", pod, "--attributes", ATTRS, "--kubeconfig", "/dev/zero" }, 3,
            "^fluence: /dev/zero: not a regular file %(a character device%) %(a kubeconfig%)\n$")
    refused(run{ "run", "/dev/zero", "-f", pod, "--attributes", ATTRS, "--offline" }, 3, "/dev/zero: larger than 64 MiB")
  end)

  it("a manifest from a device, at the manifest limit (FLUENCE_MAX_INPUT)", function()
    refused(run{ "select", "-f", "/dev/zero", "--offline", env = { FLUENCE_MAX_INPUT = "1000000" } }, 3,
            "^fluence: cannot read /dev/zero: larger than 1000000 bytes %(FLUENCE_MAX_INPUT sets the limit in bytes%)\n$")
  end)

  it("sys.read_file: the limit given, a directory, a missing file", function()
    local f = cli.write(dir .. "/ten", "0123456789")
    assert.are.equal("0123456789", sys.read_file(f, { limit = 10 }))
    local v, err = sys.read_file(f, { limit = 9 })
    assert.is_nil(v)
    assert.are.equal(f .. ": larger than 9 bytes", err)
    assert.are.same({ nil, dir .. ": is a directory" }, { sys.read_file(dir) })
    assert.matches(": No such file or directory$", select(2, sys.read_file(dir .. "/absent")))
    v, err = sys.read_file("/dev/zero")
    assert.is_nil(v)
    assert.matches("^/dev/zero: larger than 64 MiB", err)
  end)

  it("a plugin's api.read_file: the one limit, and regular files on request", function()
    local api = require("fluence.provider_api").new{}
    local f = cli.write(dir .. "/ten", "0123456789")
    assert.are.equal("0123456789", api.read_file(f, { limit = 5 }))     -- no limit of its own
    assert.are.same({ nil, "/dev/zero: not a regular file (a character device)" },
                    { api.read_file("/dev/zero", { regular = true }) })
    assert.are.equal("", api.read_file("/dev/null", { regular = true }))
  end)

  it("AWS credentials that are not a regular file are refused, not waited on", function()
    local aws = require "fluence.aws"
    local fifo = dir .. "/credentials"
    assert(os.execute("mkfifo " .. cli.quote(fifo)))
    local creds, err = aws.credentials{ env = { AWS_SHARED_CREDENTIALS_FILE = fifo, AWS_CONFIG_FILE = dir .. "/none" } }
    assert.is_nil(creds)
    assert.matches(escape(fifo) .. " %(AWS_SHARED_CREDENTIALS_FILE%) %[not a regular file %(a FIFO%)%]", err)
  end)
end)

describe("a kubeconfig that is wrong", function()
  local dir, pod
  before_each(function() dir, pod = cli.workdir() end)
  after_each(cli.cleanup)

  local function kubeconfig(cluster, user)
    return cli.write(dir .. "/kc.yaml", ([[
apiVersion: v1
kind: Config
current-context: c
contexts: [{name: c, context: {cluster: k, user: u}}]
clusters:
- name: k
  cluster:
    server: https://127.0.0.1:1
%s
users:
- name: u
  user:
%s
]]):format(cluster, user))
  end

  it("names the file first, located at the key, exit 3, even where the cluster is optional", function()
    for _, c in ipairs{
      { "    certificate-authority-data: '!!not base64'", "    token: t",
        ':9:5: cluster "k": certificate%-authority%-data is not valid base64\n$' },
      { "    insecure-skip-tls-verify: true", "    client-certificate-data: '%%'\n    client-key-data: eA==",
        ':13:5: user "u": client%-certificate%-data is not valid base64\n$' },
      { "    certificate-authority: missing-ca.crt", "    token: t",
        ':9:5: cluster "k": certificate%-authority [^\n]*/missing%-ca%.crt: No such file or directory\n$' },
      { "    insecure-skip-tls-verify: true", "    tokenFile: /dev/zero",
        ':13:5: user "u": tokenFile /dev/zero: not a regular file %(a character device%)\n$' },
    } do
      local kc = kubeconfig(c[1], c[2])
      for _, args in ipairs{ { "select", "-f", pod, "--attributes", ATTRS, "--kubeconfig", kc },
                             { "graph", "--kubeconfig", kc } } do
        refused(run(args), 3, "^fluence: " .. escape(kc) .. c[3])
      end
    end
  end)

  it("one that does not parse, or is not a mapping", function()
    local kc = cli.write(dir .. "/kc.yaml", "clusters: [\n")
    refused(run{ "graph", "--kubeconfig", kc }, 3, "^fluence: " .. escape(kc) .. ":2:1: ")
    kc = cli.write(dir .. "/list.yaml", "- a\n")
    refused(run{ "graph", "--kubeconfig", kc }, 3, "^fluence: " .. escape(kc) .. ": not a kubeconfig %(expected a mapping%)\n$")
    refused(run{ "graph", "--kubeconfig", dir .. "/absent.yaml" }, 3,
            "^fluence: " .. escape(dir) .. "/absent%.yaml: No such file or directory %(a kubeconfig%)\n$")
  end)
end)

-- Answers no API server gives, from the stand-in API server's hostile modes
-- (spec/support/kube_server.py: /_redirect, whose Location carries a
-- password and a token; /_html, a login page): named for what they are, on
-- every path that reads the cluster (one request, a list of them at once).
describe("an API server that is not one", function()
  local H = require "fixtures.kube.harness"
  local s, dir, pod
  setup(function()
    s = H.start()
    dir, pod = cli.workdir()
  end)
  teardown(function() s:stop(); cli.cleanup() end)

  local function kubeconfig(mode)
    return H.kubeconfig(s, { cluster = { server = s.url .. "/_" .. mode } }, { dir = dir, name = mode .. ".yaml" })
  end

  for _, c in ipairs{
    { "redirect", 'redirected to "https://127%.0%.0%.1:%d+/_moved/api/v1/namespaces/kube%-system/configmaps/' ..
                  'fluence%-resources" %(not followed%)' },
    { "html", "answered text/html, not JSON %(HTTP 200%)" },
  } do
    it("a " .. c[1] .. ": said so, not 'has no data', not followed", function()
      local kc = kubeconfig(c[1])
      local r = run{ "select", "-f", pod, "--attributes", ATTRS, "--kubeconfig", kc, "--require-offerings" }
      -- one line: the context, the server, what could not be read, why (issue 27)
      refused(r, 4, '^fluence: cluster: context "[^"]+" %(https://127%.0%.0%.1:%d+/_' .. c[1] ..
                    "%): cannot read the ConfigMap kube%-system/fluence%-resources: " .. c[2] ..
                    " %(%-%-require%-offerings%)\n$")
      assert.is_nil(r.err:find("has no data", 1, true))
      assert.is_nil(r.err:find("secret", 1, true))
      assert.is_nil(r.err:find("\27", 1, true))
      refused(run{ "graph", "--kubeconfig", kc }, 4, "%(https://127%.0%.0%.1:%d+/_" .. c[1] .. "%): cannot list the " ..
                                                     "nodes: " .. (c[1] == "html" and c[2] or
                                                                   "redirected to [^\n]* %(not followed%)"))
      refused(run{ "apply", "-f", pod, "--attributes", ATTRS, "--kubeconfig", kc, "--offline" }, 4,
              c[1] == "html" and c[2] or "redirected to [^\n]* %(not followed%)")
    end)
  end
end)
