-- libcurl and libcrypto are loaded on first use (core/lazylib.c), so the
-- release binary needs only libc; on a machine without them the message
-- names the Debian package to install.  Made real by hiding the library:
-- a private mount namespace (unshare -m, as root) binds /dev/null over it.
local cli = require "support.cli"

local q = cli.quote

local function sh(cmd)
  local p = io.popen("env -u LD_PRELOAD sh -c " .. q(cmd) .. " 2>&1")
  local out = p:read("a")
  local ok = p:close()
  return out, ok
end

local function hidden_run(lib, args)
  local real = sh("readlink -f " .. q(lib)):match("[^\n]+")
  local quoted = {}
  for i, a in ipairs(args) do quoted[i] = q(a) end
  return sh("unshare -m sh -c " .. q("mount --bind /dev/null " .. q(real) .. " && exec " ..
            q(cli.bin) .. " " .. table.concat(quoted, " ")) .. "; echo \"exit=$?\"")
end

describe("a missing libcurl", function()
  teardown(function() cli.cleanup() end)
  local lib = sh("ldconfig -p 2>/dev/null | sed -n 's/.*libcurl\\.so\\.4 .*=> //p' | head -n 1"):match("[^\n]+")
  local root = sh("id -u"):match("%d+") == "0"
  local can = lib and root and select(2, sh("unshare -m true")) and not os.getenv("FLUENCE_VALGRIND")
  if not can then
    it("needs root, unshare and libcurl", function()
      pending("hiding libcurl needs root and unshare -m (and no valgrind)")
    end)
    return
  end

  it("is named, with the package to install, when the cluster is reached; exit 4, nothing on stdout", function()
    local d = cli.tmpdir()
    local kc = cli.write(d .. "/kubeconfig", [[
apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: "https://127.0.0.1:1"}}]
users: [{name: u, user: {token: abc}}]
contexts: [{name: x, context: {cluster: c, user: u}}]
current-context: x
]])
    local out = hidden_run(lib, { "graph", "--kubeconfig", kc })
    assert.truthy(out:find("cannot load libcurl (libcurl.so.4): ", 1, true), out)
    assert.truthy(out:find("; install it (Debian, Ubuntu: apt-get install libcurl4)\n", 1, true), out)
    assert.truthy(out:find("exit=4\n", 1, true), out)
  end)

  it("is not needed by what reaches no network", function()
    local EX = cli.root .. "/examples/quickstart/"
    local out = hidden_run(lib, { "select", "-f", EX .. "job.yaml", "--attributes", EX .. "attributes.yaml",
                                  "--offline" })
    assert.truthy(out:find("exit=0\n", 1, true), out)
    assert.truthy(out:find("require-backend: gpu-l4", 1, true), out)
  end)
end)
