-- fluence.aws credentials chain: environment over files, profiles, regions,
-- endpoint overrides, clear messages for missing pieces, and redaction.
-- Every case passes its own environment table, so the real ~/.aws and the
-- process environment are never read.
local aws = require "fluence.aws"

local AK, SK, TOK = "AKIAFLUENCETESTKEY01", "fluenceTESTsecret/0123456789abcdefSECRET", "FLUENCEtestSESSIONtoken0123456789"

local tmp
local function write(path, text)
  local f = assert(io.open(tmp .. "/" .. path, "w"))
  f:write(text)
  f:close()
  return tmp .. "/" .. path
end

describe("fluence.aws credentials", function()
  before_each(function()
    tmp = os.tmpname()
    os.remove(tmp)
    assert(os.execute("mkdir -p '" .. tmp .. "/home/.aws' '" .. tmp .. "/empty'"))
  end)
  after_each(function() os.execute("rm -rf '" .. tmp .. "'") end)

  it("takes keys, token and region from the environment", function()
    local c = assert(aws.credentials{ env = { AWS_ACCESS_KEY_ID = AK, AWS_SECRET_ACCESS_KEY = SK,
      AWS_SESSION_TOKEN = TOK, AWS_REGION = "eu-north-1", AWS_DEFAULT_REGION = "us-west-1",
      HOME = tmp .. "/empty" } })
    assert.are.equal("environment", c:source())
    assert.are.equal("eu-north-1", c:region())
    assert.are.equal("default", c:profile())
    assert.is_true(c:has_session_token())
    local h = aws.sign(c, { url = "https://braket.eu-north-1.amazonaws.com/device/x", service = "braket" })
    assert.are.equal(TOK, h["X-Amz-Security-Token"])
    assert.matches("Credential=" .. AK .. "/%d+/eu%-north%-1/braket/aws4_request", h.Authorization)
  end)

  it("falls back to AWS_DEFAULT_REGION, then the profile's config region", function()
    write("home/.aws/config", "[default]\nregion = us-west-2\n")
    local env = { AWS_ACCESS_KEY_ID = AK, AWS_SECRET_ACCESS_KEY = SK, HOME = tmp .. "/home" }
    assert.are.equal("us-west-2", assert(aws.credentials{ env = env }):region())
    env.AWS_DEFAULT_REGION = "us-east-1"
    assert.are.equal("us-east-1", assert(aws.credentials{ env = env }):region())
  end)

  it("lets the environment win over the credentials file", function()
    write("home/.aws/credentials", "[default]\naws_access_key_id = AKIAFROMFILE00000000\naws_secret_access_key = filesecret\n")
    local c = assert(aws.credentials{ env = { AWS_ACCESS_KEY_ID = AK, AWS_SECRET_ACCESS_KEY = SK, HOME = tmp .. "/home" } })
    assert.are.equal("environment", c:source())
    local h = aws.sign(c, { url = "https://h/", service = "s", region = "r" })
    assert.matches("Credential=" .. AK, h.Authorization)
  end)

  it("reads the default profile from ~/.aws/credentials and its region from ~/.aws/config", function()
    local cred = write("home/.aws/credentials",
      "# a comment\n; another\n[other]\naws_access_key_id=AKIAOTHER\naws_secret_access_key=x\n\n" ..
      "[default]\naws_access_key_id   =   " .. AK .. "  \naws_secret_access_key=" .. SK .. "\r\n")
    write("home/.aws/config", "[profile default]\nregion = eu-west-2\ns3 =\n  region = nope\n")
    local c = assert(aws.credentials{ env = { HOME = tmp .. "/home" } })
    assert.are.equal("profile default in " .. cred, c:source())
    assert.are.equal("eu-west-2", c:region())
    assert.is_false(c:has_session_token())
    local h = aws.sign(c, { url = "https://h/", service = "s" })
    assert.matches("Credential=" .. AK .. "/%d+/eu%-west%-2/s/", h.Authorization)
  end)

  it("uses AWS_PROFILE, the profile option, and the override paths", function()
    local cred = write("creds", "[default]\naws_access_key_id=AKIADEFAULT\naws_secret_access_key=d\n" ..
                       "[dev]\naws_access_key_id=" .. AK .. "\naws_secret_access_key=" .. SK ..
                       "\naws_session_token=" .. TOK .. "\n[ops]\naws_access_key_id=AKIAOPS0000000000000\naws_secret_access_key=o\n")
    write("conf", "[default]\nregion=us-east-1\n[profile dev]\nregion=us-west-1\n[dev]\nregion=wrong\n")
    local env = { AWS_PROFILE = "dev", AWS_SHARED_CREDENTIALS_FILE = cred, AWS_CONFIG_FILE = tmp .. "/conf" }
    local c = assert(aws.credentials{ env = env })
    assert.are.equal("dev", c:profile())
    assert.are.equal("us-west-1", c:region())
    assert.is_true(c:has_session_token())
    local o = assert(aws.credentials{ env = env, profile = "ops" })
    assert.are.equal("ops", o:profile())
    assert.is_nil(o:region())
    assert.matches("AKIAOPS", aws.sign(o, { url = "https://h/", service = "s", region = "r" }).Authorization)
  end)

  it("accepts keys kept in the config file's profile", function()
    write("home/.aws/config", "[profile cfg]\nregion = us-east-1\naws_access_key_id = " .. AK ..
          "\naws_secret_access_key = " .. SK .. "\n")
    local c = assert(aws.credentials{ env = { HOME = tmp .. "/home", AWS_PROFILE = "cfg" } })
    assert.are.equal("profile cfg in " .. tmp .. "/home/.aws/config", c:source())
  end)

  it("accepts a function as the environment", function()
    local vars = { AWS_ACCESS_KEY_ID = AK, AWS_SECRET_ACCESS_KEY = SK }
    local c = assert(aws.credentials{ env = function(n) return vars[n] end })
    assert.are.equal("environment", c:source())
  end)

  describe("missing or incomplete configuration", function()
    it("names the variables and files tried", function()
      local c, err = aws.credentials{ env = { HOME = tmp .. "/empty" } }
      assert.is_nil(c)
      assert.matches("no AWS credentials", err)
      assert.matches("AWS_ACCESS_KEY_ID", err, 1, true)
      assert.matches(tmp .. "/empty/.aws/credentials [missing]", err, 1, true)
      assert.matches(tmp .. "/empty/.aws/config [missing]", err, 1, true)
      assert.matches('profile "default"', err, 1, true)
    end)

    it("names an override variable and the profile's origin", function()
      local c, err = aws.credentials{ env = { AWS_SHARED_CREDENTIALS_FILE = tmp .. "/nope", AWS_PROFILE = "prod" } }
      assert.is_nil(c)
      assert.matches(tmp .. "/nope (AWS_SHARED_CREDENTIALS_FILE) [missing]", err, 1, true)
      assert.matches('profile "prod" (AWS_PROFILE)', err, 1, true)
    end)

    it("says which half of the environment pair is missing", function()
      local c, err = aws.credentials{ env = { AWS_ACCESS_KEY_ID = AK } }
      assert.is_nil(c)
      assert.are.equal("AWS credentials incomplete: AWS_ACCESS_KEY_ID is set but AWS_SECRET_ACCESS_KEY is not", err)
      c, err = aws.credentials{ env = { AWS_SECRET_ACCESS_KEY = SK } }
      assert.is_nil(c)
      assert.are.equal("AWS credentials incomplete: AWS_SECRET_ACCESS_KEY is set but AWS_ACCESS_KEY_ID is not", err)
      assert.is_nil(err:find(SK, 1, true))
    end)

    it("says which key a profile lacks, in which file", function()
      local cred = write("home/.aws/credentials", "[default]\naws_access_key_id = " .. AK .. "\n")
      local c, err = aws.credentials{ env = { HOME = tmp .. "/home" } }
      assert.is_nil(c)
      assert.are.equal('AWS credentials incomplete: profile "default" in ' .. cred .. " has no aws_secret_access_key", err)
    end)

    it("reports a profile that is not in the files", function()
      write("home/.aws/credentials", "[default]\naws_access_key_id = a\naws_secret_access_key = b\n")
      local c, err = aws.credentials{ env = { HOME = tmp .. "/home" }, profile = "missing" }
      assert.is_nil(c)
      assert.matches('profile "missing" (profile option) is not in ' .. tmp .. "/home/.aws/credentials [read]", err, 1, true)
    end)
  end)

  describe("endpoint overrides", function()
    it("prefers AWS_ENDPOINT_URL_<SERVICE>, then AWS_ENDPOINT_URL, then the profile", function()
      write("home/.aws/config", "[default]\nendpoint_url = http://profile.example\n")
      local env = { AWS_ACCESS_KEY_ID = AK, AWS_SECRET_ACCESS_KEY = SK, HOME = tmp .. "/home" }
      assert.are.equal("http://profile.example", aws.credentials{ env = env }:endpoint("braket"))
      env.AWS_ENDPOINT_URL = "http://all.example"
      assert.are.equal("http://all.example", aws.credentials{ env = env }:endpoint("braket"))
      env.AWS_ENDPOINT_URL_BRAKET = "http://braket.example"
      local c = aws.credentials{ env = env }
      assert.are.equal("http://braket.example", c:endpoint("braket"))
      assert.are.equal("http://all.example", c:endpoint("s3"))
      env.AWS_IGNORE_CONFIGURED_ENDPOINT_URLS = "true"
      assert.is_nil(aws.credentials{ env = env }:endpoint("braket"))
    end)

    it("has none by default", function()
      assert.is_nil(aws.credentials{ env = { AWS_ACCESS_KEY_ID = AK, AWS_SECRET_ACCESS_KEY = SK } }:endpoint("braket"))
    end)
  end)

  describe("secrets", function()
    local c
    before_each(function()
      c = assert(aws.credentials{ env = { AWS_ACCESS_KEY_ID = AK, AWS_SECRET_ACCESS_KEY = SK,
                                          AWS_SESSION_TOKEN = TOK, AWS_REGION = "us-east-1" } })
    end)

    it("tostring shows a redacted key id only", function()
      local s = tostring(c)
      assert.are.equal("aws-credentials(AKIA...Y01 redacted; environment; region us-east-1)", s)
      assert.is_nil(s:find(SK, 1, true))
      assert.is_nil(s:find(TOK, 1, true))
      assert.is_nil(s:find(AK, 1, true))
    end)

    it("offers no way to read the secret", function()
      assert.are.equal("userdata", type(c))
      assert.are.equal("aws-credentials", getmetatable(c))
      for _, k in ipairs{ "secret", "secret_access_key", "token", "session_token", "access_key_id", "key_id" } do
        assert.is_nil(c[k])
      end
      for _, v in ipairs{ c:region(), c:profile(), c:source() } do
        assert.is_nil(v:find(SK, 1, true))
      end
    end)

    it("redacts the key id, secret and token from text", function()
      local text = "bad: " .. AK .. " x-amz-security-token:" .. TOK .. " secret " .. SK .. "."
      assert.are.equal("bad: [redacted] x-amz-security-token:[redacted] secret [redacted].", c:redact(text))
    end)

    it("can be released early, after which it cannot sign", function()
      c:close()
      assert.are.equal("aws-credentials(released)", tostring(c))
      assert.has_error(function() aws.sign(c, { url = "https://h/", service = "s" }) end,
                       "AWS credentials were released")
    end)
  end)
end)
