-- Credentials never leave the machine: with recognisable fake AWS keys, a
-- session token and Kubernetes tokens, selection (with the live Braket
-- provider), apply, and their failures must not show any of them on stdout
-- (the manifest and its select-result audit), stderr (notes, errors, -vv),
-- in success or in failure.
local cli = require "support.cli"
local server = require "support.server"
local H = require "fixtures.kube.harness"

local AK, SK = "AKIAFLUENCESECRET777", "fluence/SECRET+key/abcdefghij0123456789"
local TOK = "FLUENCEsecretSESSIONtoken+/9876543210=="
local WRONG_SK = "fluence/WRONG+key/abcdefghij0123456789"
local BAD_KUBE = "fluence-fake-wrong-token-0badc0de"
local SECRETS = { AK, SK, TOK, WRONG_SK, BAD_KUBE, H.TOKENS.admin, H.TOKENS.bob }

local function assert_clean(r)
  for _, where in ipairs{ r.out, r.err } do
    for _, secret in ipairs(SECRETS) do
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
  local braket, kube, dir, job, attrs, kubeconfig, bad_kubeconfig
  setup(function()
    braket = server.start("spec/support/braket_server.py", { "--key", AK .. "=" .. SK .. "=" .. TOK,
                                                              "--sim-region", "us-east-1" })
    kube = H.start()
    dir = kube.dir
    job = cli.write(dir .. "/job.yaml", POLICY_JOB)
    attrs = cli.write(dir .. "/attrs.yaml", ATTRS)
    kubeconfig = H.kubeconfig(kube, { user = { token = H.TOKENS.admin } }, { dir = dir, name = "good" })
    bad_kubeconfig = H.kubeconfig(kube, { user = { token = BAD_KUBE } }, { dir = dir, name = "bad" })
  end)
  teardown(function()
    if braket then braket.stop() end
    if kube then kube:stop() end
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

  it("stay out of apply's output, with and without verbosity", function()
    local r = cli.run{ "apply", "-f", job, "--attributes", attrs, "--kubeconfig", kubeconfig, "-v", "-v",
                       env = aws_env() }
    assert.are.equal(0, r.code, r.err)
    assert.matches("fluence: HTTP PATCH https://127%.0%.0%.1:%d+/apis/batch/v1/[^\n]* %-> 20%d", r.err)
    assert_clean(r)
  end)

  it("stay out of the message when the API server refuses the token", function()
    local r = cli.run{ "apply", "-f", job, "--attributes", attrs, "--kubeconfig", bad_kubeconfig, "-v",
                       env = aws_env() }
    assert.are_not.equal(0, r.code)
    assert.are.equal("", r.out)
    assert_clean(r)
  end)
end)
