-- Secrets in URLs (issue 24, class 5): a password (or a token as the user)
-- in a server URL, https://user:password@host, and tokens in a query
-- string never reach a message, a -v log, a note or the audit annotation.
-- One redaction does it everywhere (http_url_shown, core/http_transfer.h).
local http = require "fluence.http"
local kube = require "fluence.kube"
local cli = require "support.cli"
local json = require "fluence.json"

local PASSWORD, USER = "fluence-fake-url-password-77e1", "fluence-fake-url-user-3c9a"

describe("http.url_shown", function()
  it("leaves out userinfo, the query and the fragment, keeping the rest as written", function()
    local cases = {
      { "https://u:p@host:6443/base?token=x#frag", "https://host:6443/base" },
      { "https://" .. USER .. "@host/", "https://host/" },
      { "https://a@b:c@host/p", "https://host/p" },                  -- the last '@' of the authority
      { "https://host/path@with-at?q", "https://host/path@with-at" }, -- '@' in a path is no userinfo
      { "http://[::1]:8080/x", "http://[::1]:8080/x" },
      { "user:pw@host:6443", "host:6443" },                          -- no scheme
      { "HTTPS://U:P@HOST", "HTTPS://HOST" },
      { "host/a path @ x", "host/a path @ x" },
      { "", "" },
      { "https://host", "https://host" },
    }
    for _, c in ipairs(cases) do assert.are.equal(c[2], http.url_shown(c[1]), c[1]) end
  end)

  it("in http's own messages", function()
    local r, err = http.request{ url = ("http://%s:%s@127.0.0.1:1/x?token=%s"):format(USER, PASSWORD, PASSWORD),
                                 timeout = 5 }
    assert.is_nil(r)
    assert.matches("^http://127%.0%.0%.1:1/x: ", err)
  end)
end)

describe("a kubeconfig server URL with a password", function()
  local dir, kc, pod
  local ATTRS = cli.root .. "/examples/quickstart/attributes.yaml"
  setup(function()
    dir, pod = cli.workdir()
    kc = cli.write(dir .. "/kc.yaml", json.encode{
      apiVersion = "v1", kind = "Config", ["current-context"] = "c",
      contexts = json.array{ { name = "c", context = { cluster = "k", user = "u" } } },
      clusters = json.array{ { name = "k", cluster = {
        server = ("https://%s:%s@127.0.0.1:1/base?token=%s"):format(USER, PASSWORD, PASSWORD) } } },
      users = json.array{ { name = "u", user = { token = "t" } } },
    })
  end)
  teardown(cli.cleanup)

  local function clean(text)
    assert.is_nil(text:find(PASSWORD, 1, true), "the password leaked: " .. text)
    assert.is_nil(text:find(USER, 1, true), "the user leaked: " .. text)
  end

  it("is shown without them by info()", function()
    local i = kube.load{ kubeconfig = kc }:info()
    assert.are.equal("https://127.0.0.1:1/base", i.server)
  end)

  it("never reaches stdout, stderr or the audit, whatever the verb and verbosity", function()
    local env = { HOME = "/nonexistent", KUBECONFIG = false }
    local runs = {
      { "select", "-f", pod, "--attributes", ATTRS, "--kubeconfig", kc, "-v", "-v", "-v" },
      { "select", "-f", pod, "--attributes", ATTRS, "--kubeconfig", kc, "--require-offerings" },
      { "explain", "-f", pod, "--attributes", ATTRS, "--kubeconfig", kc, "-o", "json" },
      { "apply", "-f", pod, "--attributes", ATTRS, "--kubeconfig", kc, "-v", "-v" },
      { "graph", "--kubeconfig", kc, "-v", "-v" },
    }
    for _, args in ipairs(runs) do
      args.env = env
      local r = cli.run(args)
      clean(r.out)
      clean(r.err)
      -- the server is named, as it may be shown
      assert.matches("https://127%.0%.0%.1:1/base", r.out .. r.err)
    end
  end)
end)
