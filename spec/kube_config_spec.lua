-- fluence.kube: kubeconfig selection, merging and precedence; bearer tokens,
-- token files, client certificates, the in-pod service account and TLS checks
-- against a real kube-apiserver (spec/support/envtest.lua); basic
-- credentials and exec credential plugins against the stand-in
-- (spec/support/kube_server.py: kube-apiserver 1.26 has no basic auth, and a
-- plugin's answers are what is under test); secrets kept out of every message.
local kube = require "fluence.kube"
local json = require "fluence.json"
local cli = require "support.cli"
local H = require "fixtures.kube.harness"
local envtest = require "support.envtest"

local function info(o) return kube.load(o):info() end

local function get(cfg, path)
  local r, err = cfg:request{ path = path or "/api/v1/namespaces/default/configmaps", timeout = 10 }
  return r, err
end

local function whoami(cfg)
  -- the server's request log names the authenticated user
  local r, err = get(cfg)
  return r, err
end

local function no_secrets(text)
  for name, t in pairs(H.TOKENS) do
    assert.is_nil(text:find(t, 1, true), "token " .. name .. " leaked: " .. text)
  end
  assert.is_nil(text:find(H.BASIC.password, 1, true), "password leaked: " .. text)
  assert.is_nil(text:find("PRIVATE KEY", 1, true), "a private key leaked: " .. text)
end

describe("kubeconfig", function()
  local s
  setup(function() s = H.start() end)
  teardown(function() s.stop(); cli.cleanup() end)

  local function last_user()
    local reqs = H.requests(s)
    return reqs[#reqs] and reqs[#reqs].user, reqs[#reqs]
  end

  describe("selection and merging", function()
    local a, b, dir
    setup(function()
      dir = cli.tmpdir()
      a = H.kubeconfig(s, { doc = {
        ["current-context"] = "ctx-a",
        clusters = json.array{ { name = "shared", cluster = { server = "https://a.example:6443" } } },
        users = json.array{ { name = "u", user = { token = "x" } } },
        contexts = json.array{ { name = "ctx-a", context = { cluster = "shared", user = "u", namespace = "ns-a" } },
                               { name = "both", context = { cluster = "shared", user = "u", namespace = "from-a" } } },
      } }, { dir = dir, name = "a.yaml" })
      b = H.kubeconfig(s, { doc = {
        ["current-context"] = "ctx-b",
        clusters = json.array{ { name = "shared", cluster = { server = "https://b.example:6443" } },
                               { name = "only-b", cluster = { server = "https://only-b.example" } } },
        users = json.array{ { name = "u", user = { token = "y" } } },
        contexts = json.array{ { name = "ctx-b", context = { cluster = "only-b", user = "u" } },
                               { name = "both", context = { cluster = "only-b", user = "u", namespace = "from-b" } } },
      } }, { dir = dir, name = "b.yaml" })
    end)

    it("uses --kubeconfig alone, its current-context and the context's namespace", function()
      local i = info{ kubeconfig = a }
      assert.are.equal("ctx-a", i.context)
      assert.are.equal("https://a.example:6443", i.server)
      assert.are.equal("ns-a", i.namespace)
      assert.are.equal("token", i.auth)
    end)

    it("lets -n and --context override", function()
      local i = info{ kubeconfig = a, context = "both", namespace = "mine" }
      assert.are.equal("both", i.context)
      assert.are.equal("mine", i.namespace)
      assert.are.equal("from-a", info{ kubeconfig = a, context = "both" }.namespace)
    end)

    it("defaults the namespace to default", function()
      assert.are.equal("default", info{ kubeconfig = b }.namespace)
    end)

    it("merges every KUBECONFIG file, the first setter winning", function()
      local r = H.lua(H.info_code(), { KUBECONFIG = a .. "::" .. dir .. "/missing.yaml:" .. b })
      local i = json.decode(r.out)
      assert.is_table(i, r.out .. r.err)
      assert.are.equal("ctx-a", i.context)               -- first current-context
      assert.are.equal("https://a.example:6443", i.server) -- first "shared" cluster
      r = H.lua(H.info_code("{context = 'both'}"), { KUBECONFIG = a .. ":" .. b })
      i = json.decode(r.out)
      assert.is_table(i, r.out .. r.err .. tostring(r.code))
      assert.are.equal("from-a", i.namespace)             -- first "both" context
      r = H.lua(H.info_code("{context = 'ctx-b'}"), { KUBECONFIG = b .. ":" .. a })
      i = json.decode(r.out)
      assert.are.equal("https://only-b.example", i.server)
      r = H.lua(H.info_code(), { KUBECONFIG = b .. ":" .. a })
      assert.are.equal("ctx-b", json.decode(r.out).context)
    end)

    it("ignores KUBECONFIG when --kubeconfig is given", function()
      local r = H.lua(H.info_code(("{kubeconfig = %q}"):format(b)), { KUBECONFIG = a })
      assert.are.equal("ctx-b", json.decode(r.out).context)
    end)

    it("falls back to ~/.kube/config", function()
      local home = cli.tmpdir()
      os.execute("mkdir -p " .. cli.quote(home .. "/.kube") .. " && cp " .. cli.quote(b) .. " " .. cli.quote(home .. "/.kube/config"))
      local r = H.lua(H.info_code(), { HOME = home, KUBECONFIG = false, KUBERNETES_SERVICE_HOST = false })
      assert.are.equal("ctx-b", json.decode(r.out).context, r.out)
      r = H.lua(H.info_code(), { HOME = cli.tmpdir(), KUBECONFIG = false, KUBERNETES_SERVICE_HOST = false })
      assert.matches("^ERR: no kubeconfig", r.out)
    end)

    it("reports a missing context, cluster or user, and located YAML errors", function()
      assert.has_error(function() kube.load{ kubeconfig = a, context = "nope" } end,
                       'context "nope" not found in the kubeconfig')
      local bad = cli.write(dir .. "/bad.yaml", "clusters:\n  - name: x\n    cluster: [\n")
      local ok, err = pcall(kube.load, { kubeconfig = bad })
      assert.is_false(ok)
      assert.matches("bad%.yaml:%d+:%d+:", tostring(err))
      -- located, but no excerpt of the file: the line may hold a secret
      bad = cli.write(dir .. "/bad.yaml", "users:\n- name: u\n  user: {token: 'fluence-fake-excerpt-token\n")
      ok, err = pcall(kube.load, { kubeconfig = bad })
      assert.is_false(ok)
      assert.matches("^[^\n]*bad%.yaml:%d+:%d+: [^\n]*$", tostring(err))
      assert.is_nil(tostring(err):find("fluence-fake-excerpt-token", 1, true))
      ok, err = pcall(kube.load, { kubeconfig = dir .. "/absent.yaml" })
      assert.matches("^[^\n]*absent%.yaml: No such file or directory %(a kubeconfig%)$", tostring(err))
      local nouser = H.kubeconfig(s, { doc = {
        ["current-context"] = "c",
        clusters = json.array{ { name = "k", cluster = { server = "https://x" } } },
        contexts = json.array{ { name = "c", context = { cluster = "k", user = "ghost" } } } } })
      ok, err = pcall(kube.load, { kubeconfig = nouser })
      assert.matches('user "ghost"', err)
    end)
  end)

  describe("authentication", function()
    it("sends basic credentials", function()
      local path = H.kubeconfig(s, { user = { username = H.BASIC.user, password = H.BASIC.password } })
      local cfg = kube.load{ kubeconfig = path }
      assert.are.equal("basic", cfg:info().auth)
      assert.are.equal(200, assert(get(cfg)).status)
      local user, req = last_user()
      assert.are.equal("basic-user", user)
      assert.are.equal("basic", req.auth)
    end)

    for _, api in ipairs{ "client.authentication.k8s.io/v1", "client.authentication.k8s.io/v1beta1" } do
      it("runs an exec credential plugin (" .. api .. ") with args, env and KUBERNETES_EXEC_INFO", function()
        local dir = cli.tmpdir()
        os.execute(("mkdir -p %s/bin && cp %s %s/bin/plugin"):format(dir, H.PLUGIN, dir))
        local record = dir .. "/record"
        local path = H.kubeconfig(s, { user = { exec = {
          apiVersion = api, command = "./bin/plugin", args = json.array{ "--flag", "two words" },
          env = json.array{ { name = "PLUGIN_TOKEN", value = H.TOKENS.plugin }, { name = "EXEC_RECORD", value = record } },
          provideClusterInfo = true, interactiveMode = "Never" } } }, { dir = dir })
        local cfg = kube.load{ kubeconfig = path }
        assert.are.equal("exec", cfg:info().auth)
        assert.are.equal(200, assert(get(cfg)).status)
        assert.are.equal("plugin-user", last_user())
        local rec = cli.slurp(record)
        local req = json.decode(rec:match("^[^\n]+"))
        assert.are.equal("ExecCredential", req.kind)
        assert.are.equal(api, req.apiVersion)
        assert.are.equal(false, req.spec.interactive)
        assert.are.equal(s.url, req.spec.cluster.server)
        assert.is_string(req.spec.cluster["certificate-authority-data"])
        assert.matches("\narg:%-%-flag\narg:two words\n", rec)
      end)
    end

    it("returns a client certificate from an exec plugin", function()
      local path = H.kubeconfig(s, { user = { exec = {
        apiVersion = "client.authentication.k8s.io/v1", command = H.PLUGIN,
        args = json.array{ "cert", s.certs .. "/client.crt", s.certs .. "/client.key" } } } })
      assert.are.equal(200, assert(get(kube.load{ kubeconfig = path })).status)
      assert.are.equal("cert-user", last_user())
    end)

    it("explains a failing exec plugin with its installHint", function()
      local path = H.kubeconfig(s, { user = { exec = {
        apiVersion = "client.authentication.k8s.io/v1", command = H.PLUGIN, args = json.array{ "fail" },
        installHint = "install the fake plugin from spec/fixtures" } } })
      local ok, err = pcall(kube.load, { kubeconfig = path })
      assert.is_false(ok)
      assert.matches("exec credential plugin .* failed: it exited with status 3", err)
      assert.matches("install the fake plugin from spec/fixtures", err, 1, true)
      path = H.kubeconfig(s, { user = { exec = {
        apiVersion = "client.authentication.k8s.io/v1", command = "fluence-no-such-plugin",
        installHint = "get it with apt" } } })
      ok, err = pcall(kube.load, { kubeconfig = path })
      assert.matches("cannot run it: No such file or directory\nget it with apt", err)
      path = H.kubeconfig(s, { user = { exec = {
        apiVersion = "client.authentication.k8s.io/v1", command = H.PLUGIN, args = json.array{ "garbage" } } } })
      ok, err = pcall(kube.load, { kubeconfig = path })
      assert.matches("its output is not JSON", err)
      path = H.kubeconfig(s, { user = { exec = { apiVersion = "client.authentication.k8s.io/v2", command = H.PLUGIN } } })
      ok, err = pcall(kube.load, { kubeconfig = path })
      assert.matches("apiVersion client.authentication.k8s.io/v2 is not supported", err)
    end)


    it("names the kubeconfig's user, command and apiVersion escaped: one message, one line", function()
      local function exec_doc(user, exec)
        return H.kubeconfig(s, { doc = {
          ["current-context"] = "c",
          clusters = json.array{ { name = "k", cluster = { server = "https://x" } } },
          contexts = json.array{ { name = "c", context = { cluster = "k", user = user } } },
          users = json.array{ { name = user, user = { exec = exec } } } } })
      end
      local forged = "u\nfluence: forged\27[1m"
      local ok, err = pcall(kube.load, { kubeconfig = exec_doc(forged, { apiVersion = "client.authentication.k8s.io/v1" }) })
      assert.is_false(ok)
      assert.matches('user "u\\nfluence: forged\\x1b[1m": exec plugin without a command', err, 1, true)
      ok, err = pcall(kube.load, { kubeconfig = exec_doc("u", { apiVersion = "x/v2\n\27[2J", command = H.PLUGIN }) })
      assert.matches('user "u": exec plugin apiVersion x/v2\\n\\x1b[2J is not supported', err, 1, true)
      ok, err = pcall(kube.load, { kubeconfig = exec_doc("u", {
        apiVersion = "client.authentication.k8s.io/v1", command = "fluence-no-such\27[2J",
        installHint = "line one\nline two\27[31m" }) })
      assert.matches('exec credential plugin fluence-no-such\\x1b[2J failed: cannot run it: No such file or directory\n' ..
                     'line one\nline two\\x1b[31m', err, 1, true)
    end)
  end)

  describe("secrets", function()
    it("never appear in info, tostring or error messages", function()
      local dir = cli.tmpdir()
      cli.write(dir .. "/tok", H.TOKENS.file)
      for _, user in ipairs{
        { token = H.TOKENS.admin }, { tokenFile = dir .. "/tok" },
        { username = H.BASIC.user, password = H.BASIC.password },
        { ["client-certificate"] = s.certs .. "/client.crt", ["client-key"] = s.certs .. "/client.key" },
        { exec = { apiVersion = "client.authentication.k8s.io/v1", command = H.PLUGIN,
                   env = json.array{ { name = "PLUGIN_TOKEN", value = H.TOKENS.plugin } } } },
      } do
        local cfg = kube.load{ kubeconfig = H.kubeconfig(s, { user = user,
          cluster = { server = "https://127.0.0.1:1/?token=" .. H.TOKENS.bob } }) }
        no_secrets(json.encode(cfg:info()))
        no_secrets(tostring(cfg))
        local r, err = cfg:request{ path = "/api/v1/namespaces?token=" .. H.TOKENS.bob, timeout = 5 }
        assert.is_nil(r)
        no_secrets(err)
      end
    end)

    it("never appear in fluence's output, even with -v and failures", function()
      local mf = cli.write(cli.tmpdir() .. "/cm.yaml",
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: x\n  namespace: bad_ns\ndata: {a: b}\n")
      for _, user in ipairs{ { token = H.TOKENS.bob }, { username = H.BASIC.user, password = H.BASIC.password },
                             { token = "fluence-fake-wrong-token" } } do
        local path = H.kubeconfig(s, { user = user })
        local r = cli.run{ "apply", "-f", mf, "--kubeconfig", path, "-v", "-v" }
        assert.are_not.equal(0, r.code)
        no_secrets(r.out .. r.err)
        assert.is_nil((r.out .. r.err):find("fluence-fake-wrong-token", 1, true))
      end
    end)
  end)
end)

envtest.describe("kubeconfig credentials and TLS", function(api)
  teardown(cli.cleanup)

  local function last_user()
    local ev = api:audit()
    return ev[#ev] and ev[#ev].user
  end
  local function kubeconfig(o, where)
    o = o or {}
    where = where or {}
    return api:kubeconfig_for{ user = o.user, cluster = o.cluster, dir = where.dir, name = where.name }
  end
  local function ca_cluster(extra)
    local c = { server = api.url }
    for k, v in pairs(extra or {}) do c[k] = v end
    if c["certificate-authority"] == nil and c["certificate-authority-data"] == nil and not c["insecure-skip-tls-verify"]
       and not c.no_ca then
      c["certificate-authority"] = api.pki .. "/ca.crt"
    end
    c.no_ca = nil
    return c
  end

  it("sends a bearer token", function()
    api:audit()
    local r = assert(get(kube.load{ kubeconfig = kubeconfig() }))
    assert.are.equal(200, r.status)
    assert.are.equal("admin", last_user())
  end)

  it("reads a tokenFile relative to the kubeconfig's directory", function()
    local dir = cli.tmpdir()
    cli.write(dir .. "/tok", api.tokens.file .. "\n")
    local cfg = kube.load{ kubeconfig = kubeconfig({ user = { tokenFile = "tok" } }, { dir = dir }) }
    assert.are.equal("token-file", cfg:info().auth)
    api:audit()
    assert.are.equal(200, assert(get(cfg)).status)
    assert.are.equal("file-user", last_user())
  end)

  it("presents a client certificate from files (relative) or data", function()
    local crt, key = api:client_cert("cert-user", "system:masters")
    local dir = cli.tmpdir()
    os.execute(("cp %s %s/client.crt && cp %s %s/client.key"):format(cli.quote(crt), dir, cli.quote(key), dir))
    local cfg = kube.load{ kubeconfig = kubeconfig({ user = { ["client-certificate"] = "client.crt",
                                                              ["client-key"] = "client.key" } }, { dir = dir }) }
    assert.are.equal("client-certificate", cfg:info().auth)
    api:audit()
    assert.are.equal(200, assert(get(cfg)).status)
    assert.are.equal("cert-user", last_user())
    local path = kubeconfig{ user = { ["client-certificate-data"] = H.base64(cli.slurp(crt)),
                                      ["client-key-data"] = H.base64(cli.slurp(key)) } }
    assert.are.equal(200, assert(get(kube.load{ kubeconfig = path })).status)
    assert.are.equal("cert-user", last_user())
  end)

  it("is refused with a client certificate from another CA", function()
    local crt, key = api:client_cert("rogue-user", "system:masters", envtest.other_ca())
    local r = assert(get(kube.load{ kubeconfig = kubeconfig{ user = { ["client-certificate"] = crt, ["client-key"] = key } } }))
    assert.are.equal(401, r.status)
    no_secrets(r.body or "")
  end)

  it("uses the in-pod service account", function()
    local sa = cli.tmpdir()
    cli.write(sa .. "/token", api.tokens.sa)
    os.execute(("cp %s/ca.crt %s/ca.crt"):format(cli.quote(api.pki), sa))
    cli.write(sa .. "/namespace", "team-a\n")
    local code = H.info_code() .. [[
      local r = c:request{ path = "/api/v1/namespaces/team-a/configmaps" }
      io.write("\n", r and r.status or "nil")]]
    api:audit()
    local r = H.lua(code, { KUBECONFIG = false, HOME = cli.tmpdir(), KUBERNETES_SERVICE_HOST = "127.0.0.1",
                            KUBERNETES_SERVICE_PORT = api.url:match(":(%d+)$"), FLUENCE_SERVICEACCOUNT_DIR = sa })
    local first = r.out:match("^[^\n]+")
    assert.is_string(first, "no output: " .. r.err)
    local i = json.decode(first)
    assert.is_table(i, r.out .. r.err)
    assert.is_true(i.in_cluster)
    assert.are.equal("team-a", i.namespace)
    assert.are.equal("serviceaccount", i.auth)
    assert.matches("\n200$", r.out)
    assert.are.equal("system:serviceaccount:team-a:runner", last_user())
  end)

  it("rejects a server whose certificate another CA signed", function()
    local path = kubeconfig{ cluster = ca_cluster{ ["certificate-authority"] = envtest.other_ca() .. "/ca.crt" } }
    local r, err = get(kube.load{ kubeconfig = path })
    assert.is_nil(r)
    assert.matches("certificate", err)
  end)

  it("accepts CA data, and insecure-skip-tls-verify without a CA; refuses no CA at all", function()
    local path = kubeconfig{ cluster = ca_cluster{ ["certificate-authority-data"] = H.base64(cli.slurp(api.pki .. "/ca.crt")) } }
    assert.are.equal(200, assert(get(kube.load{ kubeconfig = path })).status)
    path = kubeconfig{ cluster = ca_cluster{ ["insecure-skip-tls-verify"] = true } }
    assert.are.equal(200, assert(get(kube.load{ kubeconfig = path })).status)
    path = kubeconfig{ cluster = ca_cluster{ no_ca = true } }
    local r, err = get(kube.load{ kubeconfig = path })
    assert.is_nil(r)
    assert.is_string(err)
  end)

  it("resolves relative paths against the file that defined the entry", function()
    local d1, d2 = cli.tmpdir(), cli.tmpdir()
    os.execute(("cp %s/ca.crt %s/my-ca.crt"):format(cli.quote(api.pki), d2))
    cli.write(d1 .. "/tok", api.tokens.file)
    local c1 = cli.write(d1 .. "/config", json.encode{
      apiVersion = "v1", kind = "Config", ["current-context"] = "split",
      users = json.array{ { name = "u", user = { tokenFile = "tok" } } },
      contexts = json.array{ { name = "split", context = { cluster = "k", user = "u" } } } })
    local c2 = cli.write(d2 .. "/config", json.encode{
      apiVersion = "v1", kind = "Config",
      clusters = json.array{ { name = "k", cluster = { server = api.url, ["certificate-authority"] = "my-ca.crt" } } },
      users = json.array{ { name = "u", user = { token = "fluence-fake-shadowed-token" } } } })
    local code = H.info_code() .. [[
      local r, err = c:request{ path = "/api/v1/namespaces/default/configmaps" }
      io.write("\n", r and r.status or err)]]
    api:audit()
    local r = H.lua(code, { KUBECONFIG = c1 .. ":" .. c2 })
    assert.matches("\n200$", r.out, nil, r.out .. r.err)
    assert.are.equal("file-user", last_user())
  end)

  it("verifies against tls-server-name", function()
    local path = kubeconfig{ cluster = ca_cluster{ ["tls-server-name"] = "api.fluence.test" } }
    local r, err = get(kube.load{ kubeconfig = path })
    assert.is_table(r, err)
    assert.are.equal(200, r.status)
    path = kubeconfig{ cluster = ca_cluster{ ["tls-server-name"] = "wrong.fluence.test" } }
    r, err = get(kube.load{ kubeconfig = path })
    assert.is_nil(r, "a certificate for 127.0.0.1 and api.fluence.test must not pass for wrong.fluence.test")
    assert.is_string(err)
  end)
end)
