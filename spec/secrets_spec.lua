-- Credentials never leave the machine: with recognisable fake AWS keys, a
-- session token and Kubernetes tokens, selection (with the live Braket
-- provider), apply, and their failures must not show any of them on stdout
-- (the manifest and its select-result audit), stderr (notes, errors, -vv),
-- in success or in failure.  The cluster is a real kube-apiserver
-- (spec/support/envtest.lua), whose random tokens are checked too.
local cli = require "support.cli"
local server = require "support.server"
local envtest = require "support.envtest"

local AK, SK = "AKIAFLUENCESECRET777", "fluence/SECRET+key/abcdefghij0123456789"
local TOK = "FLUENCEsecretSESSIONtoken+/9876543210=="
local WRONG_SK = "fluence/WRONG+key/abcdefghij0123456789"
local BAD_KUBE = "fluence-fake-wrong-token-0badc0de"
local SECRETS = { AK, SK, TOK, WRONG_SK, BAD_KUBE }

local function assert_clean(r, more)
  for _, where in ipairs{ r.out, r.err } do
    for _, secret in ipairs(SECRETS) do
      assert.is_nil(where:find(secret, 1, true), "a credential leaked: " .. secret .. "\n" .. where)
    end
    for _, secret in pairs(more or {}) do
      assert.is_nil(where:find(secret, 1, true), "a credential leaked: " .. secret .. "\n" .. where)
    end
    assert.is_nil(where:find("Signature=", 1, true), "a signature leaked:\n" .. where)
    assert.is_nil(where:find("Bearer ", 1, true), "an Authorization header leaked:\n" .. where)
  end
end

local POLICY_JOB = [[
apiVersion: batch/v1
kind: Job
metadata:
  name: quantum
  annotations:
    fluence.flux-framework.org/select-policy: "online-only,min-queue"
spec:
  template:
    spec:
      schedulerName: fluence
      restartPolicy: Never
      containers: [{name: c, image: x}]
]]

local ATTRS = [[
backends:
  - name: sv1
    device_arn: arn:aws:braket:::device/quantum-simulator/amazon/sv1
    cost_per_minute: 0.075
  - name: ionq_forte
    device_arn: arn:aws:braket:us-east-1::device/qpu/ionq/Forte-1
    cost_per_task: 0.3
    cost_per_shot: 0.08
]]

describe("credentials", function()
  local braket, dir, job, attrs
  setup(function()
    braket = server.start("spec/support/braket_server.py", { "--key", AK .. "=" .. SK .. "=" .. TOK,
                                                              "--sim-region", "us-east-1" })
    dir = cli.tmpdir()
    job = cli.write(dir .. "/job.yaml", POLICY_JOB)
    attrs = cli.write(dir .. "/attrs.yaml", ATTRS)
  end)
  teardown(function()
    if braket then braket.stop() end
    cli.cleanup()
  end)

  local function aws_env(secret)
    return { AWS_ACCESS_KEY_ID = AK, AWS_SECRET_ACCESS_KEY = secret or SK, AWS_SESSION_TOKEN = TOK,
             AWS_REGION = "us-east-1", AWS_ENDPOINT_URL_BRAKET = "http://127.0.0.1:" .. braket.port,
             HOME = dir }
  end

  it("stay out of a live selection's manifest, audit and verbose log", function()
    local r = cli.run{ "select", "-f", job, "--attributes", attrs, "--offline", "-v", "-v", env = aws_env() }
    assert.are.equal(0, r.code, r.err)
    assert.matches("fluence.flux-framework.org/require-backend", r.out, 1, true)
    -- -vv shows each request (method, URL without query, status), nothing more
    assert.matches("fluence: HTTP GET http://127%.0%.0%.1:%d+/device/[^\n]* %-> 200 %(%d+ ms%)", r.err)
    assert_clean(r)
  end)

  it("stay out of the errors when the cloud rejects the signature", function()
    local r = cli.run{ "select", "-f", job, "--attributes", attrs, "--offline", "-v", env = aws_env(WRONG_SK) }
    assert.are.equal(1, r.code, r.err)          -- every device UNKNOWN: online-only leaves nothing
    assert.are.equal("", r.out)
    assert_clean(r)
  end)

  envtest.describe("applied to a real kube-apiserver", function(api)
    local ns, kubeconfig, bad_kubeconfig
    setup(function()
      ns = api:namespace("secrets")
      kubeconfig = api:kubeconfig_for{ namespace = ns }
      bad_kubeconfig = api:kubeconfig_for{ namespace = ns, user = { token = BAD_KUBE } }
    end)

    it("stay out of apply's output, with and without verbosity", function()
      local r = cli.run{ "apply", "-f", job, "--attributes", attrs, "--kubeconfig", kubeconfig, "-v", "-v",
                         env = aws_env() }
      assert.are.equal(0, r.code, r.err)
      assert.matches("fluence: HTTP PATCH https://127%.0%.0%.1:%d+/apis/batch/v1/[^\n]* %-> 20%d", r.err)
      assert_clean(r, api.tokens)
      -- nor in what the cluster stored (the audit annotation)
      local stored = api:get(("/apis/batch/v1/namespaces/%s/jobs/quantum"):format(ns))
      assert_clean({ out = require("fluence.json").encode(stored), err = "" }, api.tokens)
    end)

    it("stay out of the message when the API server refuses the token", function()
      local r = cli.run{ "apply", "-f", job, "--attributes", attrs, "--kubeconfig", bad_kubeconfig, "-v",
                         env = aws_env() }
      assert.are.equal(4, r.code)
      assert.are.equal("", r.out)
      assert.matches("HTTP 401 Unauthorized", r.err)
      assert_clean(r, api.tokens)
    end)
  end)
end)
