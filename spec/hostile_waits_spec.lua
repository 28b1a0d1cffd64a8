-- Every wait is bounded (issue 24, class 2).  A file named as a credential or
-- a configuration that is not a regular file (a FIFO, a device, a directory)
-- is refused, never waited on; the AWS files are read only when a request
-- needs them; an exec credential plugin that does not finish is killed and
-- reaped at its time limit, its command named; a server answering 429
-- forever, stalling, dripping, redirecting or sending an endless body costs
-- at most --request-timeout.  The misbehaving servers are the stand-in
-- (spec/support/kube_server.py): a real one cannot be made to do this.
--
-- Each run has a hang detector (cli.run's timeout, far past every bound under
-- test): a wait without end fails its spec instead of stalling the suite.
local cli = require "support.cli"
local H = require "fixtures.kube.harness"
local sleeper = require "support.sleeper"
local json = require "fluence.json"

local ATTRS = cli.root .. "/examples/quickstart/attributes.yaml"
local HANG = 60

local function run(args)
  args.timeout = args.timeout or HANG
  args.env = args.env or {}
  args.env.HOME = args.env.HOME or "/nonexistent"
  if args.env.KUBECONFIG == nil then args.env.KUBECONFIG = false end
  if args.env.KUBERNETES_SERVICE_HOST == nil then args.env.KUBERNETES_SERVICE_HOST = false end
  for _, k in ipairs{ "AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_PROFILE",
                      "AWS_SHARED_CREDENTIALS_FILE", "AWS_CONFIG_FILE" } do
    if args.env[k] == nil then args.env[k] = false end
  end
  return cli.run(args)
end

local function not_hung(r)
  assert.is_true(r.code ~= 124 and r.code ~= 137, "stopped by the hang detector: " .. r.err)
end

-- failure, one message, nothing on stdout
local function refused(r, code, pattern)
  not_hung(r)
  assert.are.equal("", r.out)
  assert.are.equal(code, r.code, r.err)
  assert.matches("^fluence: ", r.err)
  if pattern then assert.matches(pattern, r.err) end
end

local function mkfifo(path)
  assert(os.execute("mkfifo " .. cli.quote(path)))
  return path
end

-- a kubeconfig (JSON) whose one user has `user`, its cluster never reached
local function kubeconfig(dir, user, cluster, name)
  cluster = cluster or {}
  cluster.server = cluster.server or "https://127.0.0.1:1"
  return cli.write(dir .. "/" .. (name or "config"), json.encode{
    apiVersion = "v1", kind = "Config", ["current-context"] = "t",
    clusters = json.array{ { name = "c", cluster = cluster } },
    users = json.array{ { name = "u", user = user } },
    contexts = json.array{ { name = "t", context = { cluster = "c", user = "u" } } },
  })
end

describe("credential and configuration files that are not regular files", function()
  local dir
  before_each(function() dir = cli.tmpdir() end)
  after_each(cli.cleanup)

  local function graph(k, env)
    return run{ "graph", "--kubeconfig", k, env = env }
  end

  -- a kubeconfig that is wrong is bad input (exit 3), the file named first
  it("a kubeconfig that is a FIFO, a device or a directory", function()
    local fifo = mkfifo(dir .. "/config")
    refused(graph(fifo), 3, "^fluence: [^\n]*/config: not a regular file %(a FIFO%) %(a kubeconfig%)\n$")
    refused(graph("/dev/zero"), 3, "^fluence: /dev/zero: not a regular file %(a character device%)")
    refused(graph(dir), 3, "^fluence: [^\n]*: is a directory %(a kubeconfig%)")
    -- KUBECONFIG and ~/.kube/config: a missing file is skipped, a FIFO is not
    refused(run{ "graph", env = { KUBECONFIG = dir .. "/missing:" .. fifo } }, 3, "config: not a regular file %(a FIFO%)")
    os.execute("mkdir -p " .. cli.quote(dir .. "/home/.kube"))
    mkfifo(dir .. "/home/.kube/config")
    refused(run{ "graph", env = { HOME = dir .. "/home" } }, 3, "%.kube/config: not a regular file %(a FIFO%)")
  end)

  it("/dev/null, the one device taken: empty, as KUBECONFIG=/dev/null means no configuration", function()
    refused(graph("/dev/null"), 4, "kubeconfig has no current%-context")
  end)

  it("a kubeconfig larger than 64 MiB, even when sparse", function()
    local big = dir .. "/big"
    assert(os.execute("truncate -s 65M " .. cli.quote(big)))
    refused(graph(big), 3, "^fluence: [^\n]*/big: larger than 64 MiB")
  end)

  it("the files a kubeconfig names: token, certificates, key, CA", function()
    local fifo = mkfifo(dir .. "/pipe")
    refused(graph(kubeconfig(dir, { tokenFile = "pipe" })), 3, 'user "u": tokenFile [^\n]*pipe: not a regular file %(a FIFO%)')
    refused(graph(kubeconfig(dir, { ["client-certificate"] = "/dev/zero", ["client-key"] = fifo })), 3,
            'user "u": client%-certificate /dev/zero: not a regular file %(a character device%)')
    cli.write(dir .. "/cert.pem", "not really a certificate\n")
    refused(graph(kubeconfig(dir, { ["client-certificate"] = "cert.pem", ["client-key"] = dir })), 3,
            'user "u": client%-key [^\n]*: is a directory')
    refused(graph(kubeconfig(dir, { token = "x" }, { ["certificate-authority"] = fifo })), 3,
            'cluster "c": certificate%-authority [^\n]*pipe: not a regular file %(a FIFO%)')
  end)

  it("the in-pod service account's token", function()
    local sa = dir .. "/sa"
    os.execute("mkdir -p " .. cli.quote(sa))
    mkfifo(sa .. "/token")
    cli.write(sa .. "/ca.crt", "x\n")
    refused(run{ "graph", env = { HOME = dir, KUBERNETES_SERVICE_HOST = "127.0.0.1", KUBERNETES_SERVICE_PORT = "1",
                                  FLUENCE_SERVICEACCOUNT_DIR = sa } }, 4,
            "service account token [^\n]*/sa/token: not a regular file %(a FIFO%)")
  end)

  -- the same reader from Lua, in a child process under `timeout`: a read
  -- that waited would fail the spec, not stall the suite.  (The child keeps
  -- LD_PRELOAD: under `make check-asan` it loads the instrumented fluence.so.)
  it("fluence.sys.read_file{regular = true}: a FIFO or a device refused, /dev/null empty", function()
    local fifo = mkfifo(dir .. "/p")
    local code = ("package.cpath = %q .. package.cpath; local sys = require 'fluence.sys'; " ..
                  "for _, p in ipairs{ %q, '/dev/zero', '/dev/null', %q } do " ..
                  "local v, e = sys.read_file(p, { regular = true }); io.write(v and ('[' .. v .. ']') or e, '\\n') end")
      :format((os.getenv("FLUENCE_CPATH") or (cli.root .. "/build/lib")) .. "/?.so;", fifo, dir)
    local p = io.popen("timeout 20 lua5.4 -e " .. cli.quote(code) .. " 2>&1")
    local out = p:read("a")
    p:close()
    assert.are.equal(fifo .. ": not a regular file (a FIFO)\n/dev/zero: not a regular file (a character device)\n" ..
                     "[]\n" .. dir .. ": is a directory\n", out)
  end)

  -- only credentials and configuration must be regular files: an attribute
  -- file may come from a pipe, as a shell's process substitution gives it
  it("an attribute file from <(...) is read", function()
    local r = run{ bin = "bash", valgrind = false, "-c", 'exec "$0" select -f "$1" --attributes <(cat "$2") --offline',
                   cli.bin, cli.root .. "/examples/quickstart/job.yaml", ATTRS }
    not_hung(r)
    assert.are.equal(0, r.code, r.err)
    assert.matches('fluence.flux%-framework.org/require%-backend: gpu%-l4\n', r.out)
  end)

  describe("the AWS files", function()
    local QUANTUM = cli.root .. "/examples/quantum-cost-then-queue"

    local function quantum(env, attrs)
      return run{ "select", "-f", QUANTUM .. "/job.yaml", "--attributes", attrs or (QUANTUM .. "/attributes.yaml"),
                  "--offline", env = env }
    end

    it("a credentials or config file that is a FIFO or a device: said, the run goes on", function()
      os.execute("mkdir -p " .. cli.quote(dir .. "/.aws"))
      mkfifo(dir .. "/.aws/credentials")
      local r = quantum{ HOME = dir }
      not_hung(r)
      assert.are.equal(0, r.code, r.err)
      assert.matches("note: braket%-live: no AWS credentials: [^\n]*/%.aws/credentials %[not a regular file %(a FIFO%)%]", r.err)
      r = quantum{ HOME = dir, AWS_SHARED_CREDENTIALS_FILE = "/dev/zero", AWS_CONFIG_FILE = "/dev/zero" }
      not_hung(r)
      assert.are.equal(0, r.code, r.err)
      assert.matches("/dev/zero %(AWS_SHARED_CREDENTIALS_FILE%) %[not a regular file %(a character device%)%] or " ..
                     "/dev/zero %(AWS_CONFIG_FILE%) %[not a r", r.err)
    end)

    it("are not read when no request is to be made (every device ARN malformed)", function()
      local attrs = cli.write(dir .. "/attrs.yaml", [[
backends:
  - name: q1
    device_arn: not-an-arn
    qubits: 60
    attributes: {queue_size: 3, cost_usd: 1}
  - name: q2
    device_arn: arn:aws:s3:::bucket
    qubits: 60
    attributes: {queue_size: 5, cost_usd: 1}
]])
      -- no ~/.aws at all: had the chain been asked, it would say so
      local r = quantum({ HOME = dir }, attrs)
      not_hung(r)
      assert.are.equal(0, r.code, r.err)
      assert.matches("braket%-live: q1: not%-an%-arn: not a Braket device ARN", r.err)
      assert.is_nil(r.err:find("AWS credentials", 1, true), r.err)
    end)
  end)
end)

describe("exec credential plugins that do not finish", function()
  local dir
  before_each(function() dir = cli.tmpdir() end)
  after_each(cli.cleanup)

  local function plugin(name, body)
    return sleeper.script(dir .. "/" .. name, body)
  end

  local function exec_user(path, args)
    return { exec = { apiVersion = "client.authentication.k8s.io/v1", command = path, args = args } }
  end

  it("one that closes its stdout and runs on is killed and reaped at --request-timeout, named", function()
    -- a unique duration marks the process, so the spec can look for it after
    local marker = sleeper.marker()
    local path = plugin("stays.sh", "exec >&-\nexec sleep " .. marker .. "\n")
    local r = run{ "graph", "--kubeconfig", kubeconfig(dir, exec_user(path)), "--request-timeout", "1" }
    refused(r, 4, 'user "u": exec credential plugin [^\n]*stays%.sh failed: it did not finish within 1 s, and was ' ..
                  'stopped %(SIGKILL%)\n$')
    assert.is_false(sleeper.running(marker), "the plugin is still running")
  end)

  it("one that prints without end is stopped at 1 MiB", function()
    local path = plugin("chatty.sh", "exec yes '{\"apiVersion\": 1}'\n")
    refused(run{ "graph", "--kubeconfig", kubeconfig(dir, exec_user(path)) }, 4,
            "chatty%.sh failed: it printed more than 1024 KiB, and was stopped %(SIGKILL%)")
  end)
end)

describe("servers that misbehave (stand-in)", function()
  local s, job
  setup(function()
    s = H.start()
    job = cli.write(s.dir .. "/job.yaml", cli.POD:format("min-cost"))
  end)
  teardown(function() if s then s:stop() end cli.cleanup() end)

  local function server(mode)
    return H.kubeconfig(s, { user = { token = H.TOKENS.admin }, cluster = { server = s.url .. "/_" .. mode } },
                        { dir = s.dir, name = mode .. ".yaml" })
  end

  -- a select that must read the offerings (exit 4 when it cannot)
  local function select(mode, timeout)
    H.requests(s)
    return run{ "select", "-f", job, "--attributes", ATTRS, "--kubeconfig", server(mode), "--require-offerings",
                "--request-timeout", timeout, env = { HOME = s.dir } }
  end

  local function offerings_requests(mode)
    local n = 0
    for _, q in ipairs(H.requests(s)) do
      if q.mode == mode and q.path:find("fluence-resources", 1, true) then n = n + 1 end
    end
    return n
  end

  it("429 forever: asked again only within --request-timeout, with or without Retry-After", function()
    for _, mode in ipairs{ "429always", "429bare" } do
      local r = select(mode, "2.5")
      refused(r, 4, "fluence%-resources.*HTTP 429 Too Many Requests%); gave up after [123] attempts?")
      -- once a second from the first: at most 3 fit in 2.5 s (6 did before;
      -- fewer when an attempt is slow, as under valgrind)
      local n = offerings_requests(mode)
      assert.is_true(n >= 1 and n <= 3, mode .. ": " .. n .. " requests")
    end
  end)

  it("429 whose Retry-After goes past --request-timeout: not waited for", function()
    local r = select("429ra30", "3")
    refused(r, 4, "HTTP 429 Too Many Requests%); gave up after 1 attempt: another after 10 s would pass " ..
                  "%-%-request%-timeout %(3 s%)")
    assert.are.equal(1, offerings_requests("429ra30"))
  end)

  -- another attempt is taken to last as long as the last one: 1 s to
  -- answer, 1 s of Retry-After, 1 s more would end past 2.5 s.  (It was
  -- asked again at 2 s with 0.5 s left, and timed out: the 429 unsaid.)
  it("429 after a slow answer: no attempt made too late to be answered", function()
    local r = select("429slow1000", "2.5")
    refused(r, 4, "HTTP 429 Too Many Requests%); gave up after 1 attempt: another after 1 s would pass " ..
                  "%-%-request%-timeout %(2%.5 s%)")
    assert.are.equal(1, offerings_requests("429slow1000"))
  end)

  it("429 forever through client:request (discovery, apply) too", function()
    local kubeclient = require "fluence.kubeclient"
    local c = kubeclient.new{ kubeconfig = server("429always"), timeout = 2.5 }
    H.requests(s)
    local ok, e = pcall(c.request, c, "GET", "/api/v1/namespaces")
    assert.is_false(ok)
    assert.matches("HTTP 429 Too Many Requests%); gave up after [123] attempts?", e.message)
    local n = #H.requests(s)
    assert.is_true(n >= 1 and n <= 3, n .. " requests")
  end)

  it("a server that stalls mid-answer, or drips it a byte at a time", function()
    for _, mode in ipairs{ "stall", "drip" } do
      refused(select(mode, "1"), 4, "fluence%-resources[^\n]*[Tt]imed? ?out")
    end
  end)

  it("an answer that never ends is cut at the size limit", function()
    refused(select("huge", "20"), 4, "fluence%-resources[^\n]*answer larger than 8388608 bytes")
  end)

  it("redirects are not followed, a loop included", function()
    for _, mode in ipairs{ "redirect", "loop" } do
      refused(select(mode, "5"), 4)
      local seen = H.requests(s)
      assert.are.equal(1, #seen, mode)
      assert.are.equal(mode, seen[1].mode)
    end
  end)

  -- (an HTML page, a redirect: what the messages say is real_cause_spec's)
end)
