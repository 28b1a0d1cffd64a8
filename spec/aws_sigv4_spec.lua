-- fluence.aws SigV4 against AWS's published test suite (spec/fixtures/aws-sigv4,
-- see its README): canonical request, string to sign, signature, for every
-- case directory found there, plus the GetDevice encoded-ARN path.
local aws = require "fluence.aws"
local sys = require "fluence.sys"

local ROOT = "spec/fixtures/aws-sigv4"
local KEY, SECRET = "AKIDEXAMPLE", "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY"
local TIME = "20150830T123600Z"

local function read(path)
  local f = io.open(path, "rb")
  if not f then return nil end
  local s = f:read("a")
  f:close()
  return s
end

-- Every directory holding NAME.req, recursively (normalize-path/, post-sts-token/).
local function cases(dir, out)
  out = out or {}
  for _, name in ipairs(assert(sys.list_dir(dir))) do
    local path = dir .. "/" .. name
    if sys.kind(path) == "dir" then
      if sys.kind(path .. "/" .. name .. ".req") == "file" then
        out[#out + 1] = { name = name, base = path .. "/" .. name }
      else
        cases(path, out)
      end
    end
  end
  table.sort(out, function(a, b) return a.name < b.name end)
  return out
end

-- Parses a suite .req: "METHOD PATH HTTP/1.1", header lines (a line starting
-- with blanks continues the previous header: the suite folds it into another
-- value), a blank line, the body.
local function parse_req(text)
  local head, body = text:match("^(.-)\n\n(.*)$")
  head = head or text
  local lines = {}
  for l in (head .. "\n"):gmatch("(.-)\n") do lines[#lines + 1] = l end
  local method, path = lines[1]:match("^(%S+) (.*) HTTP/1%.1$")
  local headers, host, last = {}, nil, nil
  for i = 2, #lines do
    local l = lines[i]
    if l:match("^%s") then
      headers[#headers + 1] = last .. ":" .. l
    else
      local n, v = l:match("^([^:]+):(.*)$")
      headers[#headers + 1] = n .. ":" .. v
      last = n
      if n:lower() == "host" then host = v end
    end
  end
  return { method = method, url = "https://" .. host .. path, headers = headers, body = body }
end

describe("fluence.aws SigV4 test suite", function()
  local all = cases(ROOT)

  it("finds the published vectors", function()
    assert.is_true(#all >= 30, "only " .. #all .. " cases")
  end)

  for _, c in ipairs(all) do
    describe(c.name, function()
      local req = parse_req(read(c.base .. ".req"))
      local creq, sts, authz = read(c.base .. ".creq"), read(c.base .. ".sts"), read(c.base .. ".authz")
      local token = read(c.base .. ".token")
      local service = c.name:match("^braket") and "braket" or "service"

      it("fixture is self-consistent (sts ends with sha256 of creq)", function()
        assert.are.equal(sts:match("([0-9a-f]+)$"), aws.sha256_hex(creq))
      end)

      local dated = false
      for _, h in ipairs(req.headers) do dated = dated or h:lower():match("^x%-amz%-date:") ~= nil end
      if dated then                  -- else the signer adds X-Amz-Date (and the token)
        it("canonical request", function()
          local got, signed = aws.canonical_request(req)
          assert.are.equal(creq, got)
          assert.are.equal(authz:match("SignedHeaders=([^,]+)"), signed)
        end)
      end

      it("string to sign", function()
        assert.are.equal(sts, aws.string_to_sign(creq, "us-east-1", service, TIME))
      end)

      it("signature and Authorization", function()
        local r = {}
        for k, v in pairs(req) do r[k] = v end
        r.region, r.service, r.time, r.session_token = "us-east-1", service, TIME, token
        local got = aws.signature_for_test(KEY, SECRET, r)
        assert.are.equal(creq, got.canonical_request)
        assert.are.equal(sts, got.string_to_sign)
        assert.are.equal(authz, got.authorization)
        assert.are.equal(authz:match("Signature=(%x+)$"), got.signature)
        assert.are.equal(authz, got.headers.Authorization)
      end)
    end)
  end
end)

describe("fluence.aws.sign", function()
  local url = "https://braket.us-east-1.amazonaws.com/device/" ..
              aws.uri_encode("arn:aws:braket:us-east-1::device/qpu/ionq/Forte-1")

  it("encodes an ARN as one path segment", function()
    assert.are.equal("https://braket.us-east-1.amazonaws.com/device/arn%3Aaws%3Abraket%3Aus-east-1%3A%3Adevice%2Fqpu%2Fionq%2FForte-1", url)
    assert.are.equal("a/b%20c", aws.uri_encode("a/b c", true))
  end)

  it("signs GetDevice as botocore does (the encoded ARN encoded again)", function()
    local creds = aws.static_credentials{ access_key_id = KEY, secret_access_key = SECRET, region = "us-east-1" }
    local h = aws.sign(creds, { url = url, service = "braket", time = TIME })
    assert.are.equal(read(ROOT .. "/braket-get-device/braket-get-device.authz"), h.Authorization)
    assert.are.equal(TIME, h["X-Amz-Date"])
    assert.is_nil(h["X-Amz-Security-Token"])
  end)

  it("adds and signs the session token", function()
    local tok = read(ROOT .. "/braket-get-device-session-token/braket-get-device-session-token.token")
    local creds = aws.static_credentials{ access_key_id = KEY, secret_access_key = SECRET, session_token = tok }
    local h = aws.sign(creds, { url = url, service = "braket", region = "us-east-1", time = TIME })
    assert.are.equal(read(ROOT .. "/braket-get-device-session-token/braket-get-device-session-token.authz"), h.Authorization)
    assert.are.equal(tok, h["X-Amz-Security-Token"])
  end)

  it("never returns the secret, and stamps the current time by default", function()
    local creds = aws.static_credentials{ access_key_id = KEY, secret_access_key = SECRET, region = "eu-north-1" }
    local h = aws.sign(creds, { url = url, service = "braket", content_sha256 = true })
    assert.matches("^%d%d%d%d%d%d%d%dT%d%d%d%d%d%dZ$", h["X-Amz-Date"])
    assert.matches("/eu%-north%-1/braket/aws4_request, SignedHeaders=host;x%-amz%-content%-sha256;x%-amz%-date,", h.Authorization)
    assert.are.equal(aws.sha256_hex(""), h["X-Amz-Content-Sha256"])
    for _, v in pairs(h) do assert.is_nil(v:find(SECRET, 1, true)) end
  end)

  it("signs the port when the URL has a non-default one", function()
    local canonical = aws.canonical_request{ url = "http://127.0.0.1:8443/x", headers = {} }
    assert.matches("\nhost:127%.0%.0%.1:8443\n", canonical)
    canonical = aws.canonical_request{ url = "https://h.example:443/x" }
    assert.matches("\nhost:h%.example\n", canonical)
  end)

  it("rejects malformed input clearly", function()
    local creds = aws.static_credentials{ access_key_id = KEY, secret_access_key = SECRET }
    assert.has_error(function() aws.sign(creds, { url = url, service = "braket" }) end,
                     "no AWS region to sign with (set AWS_REGION or pass region)")
    assert.has_error(function() aws.sign(creds, { url = "nonsense", service = "s", region = "r" }) end)
    assert.has_error(function() aws.sign(creds, { url = url, service = "s", region = "r", time = "yesterday" }) end)
  end)

  it("backs off with jitter, bounded", function()
    local d = aws.backoff(1, 0.02, 0.05)
    assert.is_true(d >= 0.01 and d <= 0.02, tostring(d))
    d = aws.backoff(10, 0.02, 0.04)
    assert.is_true(d >= 0.02 and d <= 0.04, tostring(d))
    d = aws.backoff(1, 0.001, 0.001, 0.03)
    assert.is_true(d >= 0.03, tostring(d))
  end)
end)
