-- A real Kubernetes API server for the specs, envtest's way (controller-
-- runtime): etcd + kube-apiserver started from the directory named by
-- KUBEBUILDER_ASSETS (files `etcd` and `kube-apiserver`), on free loopback
-- ports, and stopped by PID.  No nodes, kubelets or controllers: objects are
-- stored, validated, defaulted, pruned and authorised exactly as in a
-- cluster (schemas, immutability, server-side apply and its conflicts,
-- dry-run, discovery, CRDs, RBAC), but no Pod ever runs.
--
--   local envtest = require "support.envtest"
--   local api = envtest.get()        -- one server per busted run, started on
--                                    -- first use; nil, why when unavailable
--   envtest.get("b")                 -- another one (a second cluster)
--   envtest.describe("apply", function(api) ... end)
--                                    -- a describe block that is one
--                                    -- `pending` line saying how to run it
--                                    -- when there is no server
--   api.kubeconfig                   -- contexts admin (current) and nobody
--   api:namespace("apply")           -- a fresh namespace (name returned)
--   api:kubeconfig_for{ context =, namespace =, user = {...}, dir = }
--   api:request(method, path [, body [, content_type [, query]]])
--                                    -- as admin: status, decoded | raises
--   api:get(path)                    -- decoded object, or nil, error
--   api:audit()                      -- the requests the server saw since the
--                                    -- last call ({verb, uri, user, code, query}),
--                                    -- its own background ones left out
--   api:client_cert(user, group)     -- cert, key files signed by its CA
--   api.tokens.{admin,file,sa,nobody}, api.users.NAME
--                                    -- bearer tokens and the user each is;
--                                    -- the serving certificate is valid for
--                                    -- 127.0.0.1, localhost, api.fluence.test
--   api:kubectl{...}                 -- runs the real kubectl against it
--   envtest.contexts(path, ns, { {name, api}, ... })
--                                    -- a kubeconfig at path with one context
--                                    -- per server (its admin, namespace ns,
--                                    -- made on each server), the first
--                                    -- current: the multi-cluster specs'
--   api:install_crd(file)            -- a CRD, served once this returns
--   api:node(name, status [, spec])  -- a Node, its status set as a kubelet would
--   envtest.kubeconfig_many(path, {{name =, api =, user =, namespace =, server =}, ...} [, current])
--                                    -- one kubeconfig, a context per entry (several clusters)
--
-- Where the assets are: $KUBEBUILDER_ASSETS, else build/envtest (which
-- `make test` prepares from ../shared/envtest when it is there).  Tokens are
-- random per start and recognisable ("fluence-envtest-..."), so specs can
-- check they never reach an output.  The processes die with the busted
-- process: at exit (a finalizer), or, after a crash, by a watchdog that sees
-- the parent gone.
local cli = require "support.cli"
local json = require "fluence.json"

local M = {}
local q = cli.quote

M.HOW = "set KUBEBUILDER_ASSETS to a directory holding kube-apiserver and etcd (envtest's convention; " ..
        "`make test` prepares build/envtest from ../shared/envtest when it is beside the repository)"

local function sh(cmd)
  -- children never inherit the sanitizer preload (see `make check-asan`)
  local p = io.popen("env -u LD_PRELOAD sh -c " .. q(cmd) .. " 2>&1")
  local out = p:read("a")
  local ok, _, code = p:close()
  return ok, out, code
end

local function executable(path)
  return os.execute("test -x " .. q(path)) == true
end

function M.assets()
  local dir = os.getenv("KUBEBUILDER_ASSETS")
  if not dir or dir == "" then dir = cli.root .. "/build/envtest" end
  if executable(dir .. "/kube-apiserver") and executable(dir .. "/etcd") then return dir end
  return nil, ("no kube-apiserver and etcd in %s"):format(dir)
end

local function random_hex(n)
  local f = assert(io.open("/dev/urandom", "rb"))
  local b = f:read(n)
  f:close()
  return (b:gsub(".", function(c) return ("%02x"):format(c:byte()) end))
end

local function free_ports(n)
  local ok, out = sh(("python3 -c 'import socket\nss=[socket.socket() for _ in range(%d)]\n" ..
                      "[s.bind((\"127.0.0.1\",0)) for s in ss]\nprint(\" \".join(str(s.getsockname()[1]) for s in ss))'"):format(n))
  assert(ok, "cannot find free ports: " .. out)
  local ports = {}
  for p in out:gmatch("%d+") do ports[#ports + 1] = tonumber(p) end
  return table.unpack(ports)
end

-- ECDSA keys: an order of magnitude faster to make than RSA, and accepted
-- for serving, client and service-account keys.
local function make_pki(dir)
  local pki = dir .. "/pki"
  local cmd = table.concat({
    "mkdir -p " .. q(pki), "cd " .. q(pki),
    "openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 3650 " ..
      "-subj /CN=fluence-envtest-ca -keyout ca.key -out ca.crt",
    "openssl req -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -subj /CN=kube-apiserver " ..
      "-keyout apiserver.key -out apiserver.csr",
    "printf 'subjectAltName=IP:127.0.0.1,DNS:localhost,DNS:api.fluence.test\\n' > ext.cnf",
    "openssl x509 -req -in apiserver.csr -CA ca.crt -CAkey ca.key -CAcreateserial -days 3650 " ..
      "-extfile ext.cnf -out apiserver.crt",
    "openssl ecparam -name prime256v1 -genkey -noout -out sa.key",
    "openssl ec -in sa.key -pubout -out sa.pub",
  }, " && ")
  local ok, out = sh(cmd)
  assert(ok, "envtest: making certificates failed: " .. out)
  return pki
end

local API = {}
API.__index = API

local function write_kubeconfig(api, path, o)
  o = o or {}
  local ctx = o.context or "admin"
  local doc = {
    apiVersion = "v1", kind = "Config", ["current-context"] = ctx,
    clusters = json.array{ { name = "envtest", cluster = o.cluster or
      { server = api.url, ["certificate-authority"] = api.pki .. "/ca.crt" } } },
    contexts = json.array{
      { name = "admin", context = { cluster = "envtest", user = "admin", namespace = o.namespace or "default" } },
      { name = "nobody", context = { cluster = "envtest", user = "nobody", namespace = o.namespace or "default" } },
    },
    users = json.array{
      { name = "admin", user = o.user or { token = api.tokens.admin } },
      { name = "nobody", user = { token = api.tokens.nobody } },
    },
  }
  cli.write(path, json.encode(doc, { indent = 2 }))
  return path
end

function API:kubeconfig_for(o)
  o = o or {}
  local dir = o.dir or cli.tmpdir()
  return write_kubeconfig(self, dir .. "/" .. (o.name or "config"), o)
end

local function start()
  local assets, why = M.assets()
  if not assets then return nil, why end
  for _, tool in ipairs{ "openssl", "python3" } do
    if not os.execute("command -v " .. tool .. " >/dev/null 2>&1") then return nil, tool .. " is not installed" end
  end
  local dir = os.tmpname()
  os.remove(dir)
  assert(os.execute("mkdir -p " .. q(dir .. "/logs")))
  local api = setmetatable({ dir = dir, assets = assets, pids = {} }, API)
  api.pki = make_pki(dir)
  -- users: admin and two more with every right (named so specs can tell
  -- which credential the server saw), and nobody (no RBAC rights: 403)
  api.tokens, api.users = {}, {}
  local users = { { "admin", "admin" }, { "file", "file-user" }, { "sa", "system:serviceaccount:team-a:runner" },
                  { "nobody", "nobody" } }
  local lines = {}
  for _, u in ipairs(users) do
    local tok = ("fluence-envtest-%s-%s"):format(u[1], random_hex(12))
    api.tokens[u[1]], api.users[u[1]] = tok, u[2]
    lines[#lines + 1] = ("%s,%s,%s%s\n"):format(tok, u[2], u[2], u[1] == "nobody" and "" or ",system:masters")
  end
  cli.write(dir .. "/tokens.csv", table.concat(lines))
  -- every request at Metadata level: what specs assert about requests
  cli.write(dir .. "/audit-policy.yaml", "apiVersion: audit.k8s.io/v1\nkind: Policy\n" ..
                                         "omitStages: [RequestReceived]\nrules:\n- level: Metadata\n")
  api.audit_log = dir .. "/audit.log"
  local cport, pport, aport = free_ports(3)
  api.url = "https://127.0.0.1:" .. aport
  local etcd = table.concat({
    q(assets .. "/etcd"), "--name envtest", "--data-dir", q(dir .. "/etcd-data"),
    "--listen-client-urls http://127.0.0.1:" .. cport, "--advertise-client-urls http://127.0.0.1:" .. cport,
    "--listen-peer-urls http://127.0.0.1:" .. pport, "--initial-advertise-peer-urls http://127.0.0.1:" .. pport,
    "--initial-cluster envtest=http://127.0.0.1:" .. pport, "--initial-cluster-state new",
    "--unsafe-no-fsync",
  }, " ")
  local pki = api.pki
  local apiserver = table.concat({
    q(assets .. "/kube-apiserver"), "--etcd-servers=http://127.0.0.1:" .. cport,
    "--bind-address=127.0.0.1", "--advertise-address=127.0.0.1", "--secure-port=" .. aport,
    "--tls-cert-file=" .. q(pki .. "/apiserver.crt"), "--tls-private-key-file=" .. q(pki .. "/apiserver.key"),
    "--client-ca-file=" .. q(pki .. "/ca.crt"), "--token-auth-file=" .. q(dir .. "/tokens.csv"),
    "--authorization-mode=RBAC", "--service-account-issuer=https://kubernetes.default.svc",
    "--service-account-key-file=" .. q(pki .. "/sa.pub"), "--service-account-signing-key-file=" .. q(pki .. "/sa.key"),
    "--service-cluster-ip-range=10.0.0.0/24", "--allow-privileged=true",
    "--disable-admission-plugins=ServiceAccount",
    "--audit-policy-file=" .. q(dir .. "/audit-policy.yaml"), "--audit-log-path=" .. q(api.audit_log),
    "--audit-log-mode=blocking",
  }, " ")
  for _, p in ipairs{ { "etcd", etcd }, { "kube-apiserver", apiserver } } do
    local ok, out = sh(("%s >%s 2>&1 </dev/null & echo $!"):format(p[2], q(dir .. "/logs/" .. p[1] .. ".log")))
    assert(ok, "envtest: cannot start " .. p[1] .. ": " .. out)
    api.pids[#api.pids + 1] = assert(tonumber(out:match("%d+")))
  end
  -- a watchdog stops them by PID if this process dies without stopping them
  local me = cli.slurp("/proc/self/stat"):match("^(%d+)")
  sh(("setsid sh -c 'while kill -0 %s 2>/dev/null; do sleep 1; done; kill %s 2>/dev/null; sleep 3; " ..
      "kill -9 %s 2>/dev/null; rm -rf %s' >/dev/null 2>&1 </dev/null &")
     :format(me, table.concat(api.pids, " "), table.concat(api.pids, " "), q(dir)))
  api.kubeconfig = write_kubeconfig(api, dir .. "/kubeconfig")
  local kubeclient = require "fluence.kubeclient"
  api.client = kubeclient.new{ kubeconfig = api.kubeconfig, timeout = 5 }
  local last
  for _ = 1, 240 do                                   -- up to ~60 s on a loaded machine
    -- /readyz answers text ("ok"), not JSON: the raw request
    local r, err = api.client.cfg:request{ method = "GET", path = "/readyz", timeout = 5, connect_timeout = 2 }
    local ok, status = r ~= nil, r and r.status or err
    if ok and status == 200 then
      -- the bootstrap controller makes the default namespaces shortly after
      local ok2 = pcall(api.client.request, api.client, "GET", "/api/v1/namespaces/kube-system")
      if ok2 then last = nil break end
    end
    last = ok and ("readyz " .. tostring(status)) or tostring(status and status.message or status)
    os.execute("sleep 0.25")
  end
  if last then
    local log = cli.slurp(dir .. "/logs/kube-apiserver.log") or ""
    api:stop()
    error("envtest: kube-apiserver not ready (" .. last .. "):\n" .. log:sub(-2000))
  end
  api:audit()                                        -- forget the start-up requests
  return api
end

function API:stop()
  local live = debug.getregistry()["fluence.spec.envtest"]
  if live then live[self] = nil end
  if #self.pids == 0 then return end
  local list = table.concat(self.pids, " ")
  sh(("kill %s 2>/dev/null; for i in $(seq 50); do kill -0 %s 2>/dev/null || break; sleep 0.1; done; " ..
      "kill -9 %s 2>/dev/null; rm -rf %s"):format(list, self.pids[#self.pids], list, q(self.dir)))
  self.pids = {}
end

function API:request(method, path, body, content_type, query)
  return self.client:request(method, path, body, content_type, query)
end

function API:get(path)
  local ok, status, obj = pcall(self.client.request, self.client, "GET", path)
  if ok then return obj end
  return nil, status
end

local made_ns = {}
function API:namespace(prefix)
  made_ns[prefix] = (made_ns[prefix] or 0) + 1
  local name = ("%s-%d"):format(prefix, made_ns[prefix])
  self:request("POST", "/api/v1/namespaces", { apiVersion = "v1", kind = "Namespace", metadata = { name = name } })
  return name
end

-- Requests the server saw since the last call, from its audit log.
function API:audit()
  local text = cli.slurp(self.audit_log) or ""
  local from = (self.audit_seen or 0) + 1
  self.audit_seen = #text
  local out = {}
  for line in text:sub(from):gmatch("[^\n]+") do
    local ev = json.decode(line)
    local user = ev and ev.user and ev.user.username or ""
    -- the server's own background work is not what a spec sent
    if ev and ev.kind == "Event" and user ~= "system:apiserver" and not user:match("^system:kube%-") then
      local uri = ev.requestURI or ""
      local query = {}
      for k, v in (uri:match("%?(.*)$") or ""):gmatch("([^&=]+)=?([^&]*)") do
        query[k] = v:gsub("%%(%x%x)", function(h) return string.char(tonumber(h, 16)) end)
      end
      out[#out + 1] = { verb = ev.verb, uri = uri, path = uri:gsub("%?.*", ""), query = query,
                        user = ev.user and ev.user.username,
                        code = ev.responseStatus and ev.responseStatus.code }
    end
  end
  return out
end

-- A certificate authority unrelated to the server's: dir/ca.crt, dir/ca.key.
function M.other_ca()
  local dir = cli.tmpdir()
  local ok, out = sh(("cd %s && openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes " ..
                      "-days 1 -subj /CN=fluence-other-ca -keyout ca.key -out ca.crt"):format(q(dir)))
  assert(ok, out)
  return dir
end

-- A client certificate for user (CN) in group (O), signed by the server's CA
-- (or by the CA in directory ca_dir).
function API:client_cert(user, group, ca_dir)
  local base = cli.tmpdir() .. "/" .. user
  local ca = ca_dir or self.pki
  local subj = "/CN=" .. user .. (group and ("/O=" .. group) or "")
  local ok, out = sh(table.concat({
    ("openssl req -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -subj %s -keyout %s.key -out %s.csr")
      :format(q(subj), q(base), q(base)),
    ("openssl x509 -req -in %s.csr -CA %s/ca.crt -CAkey %s/ca.key -CAcreateserial -days 1 -out %s.crt")
      :format(q(base), q(ca), q(ca), q(base)),
  }, " && "))
  assert(ok, out)
  return base .. ".crt", base .. ".key"
end

-- A Node object with its status written through the status subresource,
-- as a kubelet would (there is none here).  Returns its name.
function API:node(name, status, spec)
  self:request("POST", "/api/v1/nodes", { apiVersion = "v1", kind = "Node", metadata = { name = name }, spec = spec })
  self:request("PATCH", "/api/v1/nodes/" .. name .. "/status", { status = status }, "application/merge-patch+json")
  return name
end

-- Installs a CRD from a YAML file (server-side apply) and waits until the
-- server serves it.
function API:install_crd(file)
  local yaml = require "fluence.yaml"
  local doc = assert(yaml.decode(assert(cli.slurp(file)), file))
  local name = doc.metadata.name
  self:request("PATCH", "/apis/apiextensions.k8s.io/v1/customresourcedefinitions/" .. name, json.encode(doc),
               "application/apply-patch+yaml", { fieldManager = "fluence-specs", force = "true" })
  for _ = 1, 100 do
    local crd = self:get("/apis/apiextensions.k8s.io/v1/customresourcedefinitions/" .. name)
    local st = type(crd) == "table" and crd.status
    local conds = type(st) == "table" and type(st.conditions) == "table" and st.conditions or {}
    for _, c in ipairs(conds) do
      if c.type == "Established" and c.status == "True" then
        -- discovery may lag the condition a little
        local group, version = doc.spec.group, doc.spec.versions[1].name
        if self:get("/apis/" .. group .. "/" .. version) then return name end
      end
    end
    os.execute("sleep 0.1")
  end
  error("envtest: CRD " .. name .. " not established")
end

function API:kubectl(args)
  if not os.execute("command -v kubectl >/dev/null 2>&1") then return nil, "kubectl is not installed" end
  -- kubectl refuses flags before a plugin's name: a plugin call names its own
  local full = args.plugin and {} or { "--kubeconfig", args.kubeconfig or self.kubeconfig }
  for _, a in ipairs(args) do full[#full + 1] = a end
  full.bin, full.valgrind, full.stdin = "kubectl", false, args.stdin
  full.env = args.env or { HOME = self.dir }
  return cli.run(full)
end

-- A kubeconfig at path with one context per entry of contexts, each with
-- its own cluster and user entries of the same name:
--   { name =, api =, user = {...} (default: api's admin token),
--     namespace =, server = (default: api.url) }
-- current: the current-context (default: the first).  For the specs of
-- several clusters (two servers, a dead one, a user with no rights).
function M.kubeconfig_many(path, contexts, current)
  local clusters, users, ctxs = {}, {}, {}
  for i, c in ipairs(contexts) do
    clusters[i] = { name = c.name, cluster = { server = c.server or c.api.url,
                                               ["certificate-authority"] = c.api.pki .. "/ca.crt" } }
    users[i] = { name = c.name, user = c.user or { token = c.api.tokens.admin } }
    ctxs[i] = { name = c.name, context = { cluster = c.name, user = c.name, namespace = c.namespace } }
  end
  return cli.write(path, json.encode{ apiVersion = "v1", kind = "Config",
                                      ["current-context"] = current or contexts[1].name,
                                      clusters = json.array(clusters), users = json.array(users),
                                      contexts = json.array(ctxs) })
end

-- envtest.contexts(path, ns, { {name, api}, ... }): the same, each context
-- with namespace ns (made on each server), admin's token, the first current.
function M.contexts(path, ns, list)
  local contexts = {}
  for i, e in ipairs(list) do
    local name, api = e[1], e[2]
    pcall(api.request, api, "POST", "/api/v1/namespaces", { apiVersion = "v1", kind = "Namespace",
                                                             metadata = { name = ns } })
    contexts[i] = { name = name, api = api, namespace = ns }
  end
  return M.kubeconfig_many(path, contexts)
end

-- One server per name per spec file ("main" unless named: a second cluster
-- for the multi-cluster specs), made on first use.  busted insulates each
-- file: package.loaded is restored after it, so this module is loaded anew by
-- every file that uses it, and the servers of the files before would live on
-- until the collector happened to run their module's sentinel (dozens of
-- kube-apiservers at once, GiBs of memory, in one `make test`).  The servers
-- started are also listed in the registry, which insulation leaves alone, and
-- loading this module stops those of the file before, which has finished.
local live = debug.getregistry()["fluence.spec.envtest"] or {}
debug.getregistry()["fluence.spec.envtest"] = live
for api in pairs(live) do api:stop() end
local servers, why = {}, nil
-- the last file's servers: stopped when the Lua state closes (busted's exit
-- closes it), or else by each server's watchdog when busted is gone
M.sentinel = setmetatable({}, { __gc = function()
  for _, api in pairs(servers) do api:stop() end
end })
function M.get(name)
  name = name or "main"
  if servers[name] or why then return servers[name], why end
  local ok, api = pcall(start)
  if not ok then error(api, 0) end
  if not api then
    why = select(2, M.assets()) or "unavailable"
    return nil, why
  end
  servers[name], live[api] = api, true
  return api
end

-- describe(name, fn): fn(api) inside a describe block when there is a
-- server; otherwise a single pending spec that says how to run it.
-- (describe, it and pending live in the spec file's environment, which busted
-- makes: they are taken from the caller's _ENV.)
local function caller_env()
  local f = debug.getinfo(3, "f").func
  for i = 1, 255 do
    local n, v = debug.getupvalue(f, i)
    if not n then break end
    if n == "_ENV" then return v end
  end
  return _G
end

function M.describe(name, fn)
  -- looked up when called: busted gives each block its own `it` and `pending`
  local env = caller_env()
  local api, reason = M.get()
  if not api then
    env.describe(name, function()
      env.it("runs against a real kube-apiserver", function()
        env.pending("skipped (" .. reason .. "): " .. M.HOW)
      end)
    end)
    return
  end
  env.describe(name .. " (real kube-apiserver)", function() fn(api) end)
end

return M
