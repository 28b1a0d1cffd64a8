-- docs/fluence.1: renders without warnings, names every verb, option and exit
-- code of the command-line tables (fluence.clispec), and is exactly what
-- tools/gen-man.lua prints today (so the tables and the page cannot drift).
local cli = require "support.cli"
local spec = require "fluence.clispec"

local root = cli.root
local q = cli.quote
local PAGE = root .. "/docs/fluence.1"

local have = cli.have

-- Runs a command in the source tree (cli.sh); returns stdout, stderr, ok.
local function run(cmd)
  local r = cli.sh(cmd)
  return r.out, r.err, r.code == 0
end

-- The page as plain text (formatting and hyphenation removed), for searching.
local rendered
local function text()
  if rendered then return rendered end
  local out, err, ok = run("groff -man -Tutf8 -P-cbou -rHY=0 -rLL=2000n " .. q(PAGE))
  assert(ok, err)
  -- one space between words (justification pads), ASCII minus and quotes
  rendered = out:gsub("\226\136\146", "-"):gsub("\226\128[\152\153]", "'"):gsub("[ \t]+", " ")
  return rendered
end

local REGEN = "regenerate it: make && lua5.4 tools/gen-man.lua > docs/fluence.1"

describe("man page docs/fluence.1", function()
  it("exists and is what tools/gen-man.lua generates from the current tables", function()
    local page = cli.slurp(PAGE)
    assert.truthy(page, "docs/fluence.1 is missing; " .. REGEN)
    local date = page:match('^%.TH FLUENCE 1 "([^"]+)"')
    assert.truthy(date, "no .TH line")
    local out, err, ok = run("lua5.4 tools/gen-man.lua --date " .. q(date))
    assert.is_true(ok, err)
    assert.are.equal(out, page, "docs/fluence.1 is out of date; " .. REGEN)
  end)

  describe("rendering", function()
    if not have("groff") then
      it("needs groff", function() pending("groff is not installed (Debian: groff-base)") end)
      return
    end

    it("renders with groff -man -ww without a warning", function()
      local out, err, ok = run("groff -man -Tutf8 -ww -z " .. q(PAGE))
      assert.is_true(ok)
      assert.are.equal("", out)
      assert.are.equal("", err)
    end)

    it("renders with man -l without a warning", function()
      if not have("man") then pending("man is not installed (Debian: man-db)") return end
      local out, err, ok = run("MANWIDTH=80 MAN_KEEP_STDERR=1 man --warnings -l " .. q(PAGE))
      assert.is_true(ok, err)
      assert.are.equal("", err)
      assert.truthy(out:find("FLUENCE(1)", 1, true))
    end)

    it("mentions every verb with its arguments", function()
      local t = text()
      for _, v in ipairs(spec.verbs) do
        local line = "fluence " .. v.name .. (v.args ~= "" and (" " .. v.args) or "")
        assert.truthy(t:find(line, 1, true), "SYNOPSIS lacks: " .. line)
      end
    end)

    it("mentions every option, with its short form and argument", function()
      local t = text()
      for _, o in ipairs(spec.options) do
        local head = (o.short and ("-" .. o.short .. ", ") or "") .. "--" .. o.name
        if o.metavar then
          head = head .. (o.arg == "optional" and ("[=" .. o.metavar .. "]") or (" " .. o.metavar))
        end
        assert.truthy(t:find(head, 1, true), "OPTIONS lacks: " .. head)
        assert.truthy(t:find(o.help:gsub("%s+", " "), 1, true), "OPTIONS lacks the help of --" .. o.name)
      end
    end)

    it("documents every exit code, environment variable and file", function()
      local t = text()
      local section = t:match("EXIT STATUS(.-)\nEXAMPLES")
      assert.truthy(section)
      for _, e in ipairs(spec.exit_codes) do
        assert.truthy(section:find("\n%s+" .. e.code .. "%s+"), "EXIT STATUS lacks " .. e.code)
      end
      for _, name in ipairs{ "FLUENCE_POLICY_PATH", "FLUENCE_PROVIDER_PATH", "FLUENCE_SOURCE_DIR",
                             "FLUENCE_DEBUG", "KUBECONFIG", "NO_COLOR", "SOURCE_DATE_EPOCH",
                             "AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN",
                             "AWS_PROFILE", "AWS_REGION", "AWS_ENDPOINT_URL_BRAKET" } do
        assert.truthy(t:find(name, 1, true), "ENVIRONMENT lacks " .. name)
      end
      for _, f in ipairs{ "~/.fluence/policies", "~/.fluence/providers", "~/.kube/config",
                          "~/.aws/credentials" } do
        assert.truthy(t:find(f, 1, true), "FILES lacks " .. f)
      end
    end)
  end)

  it("is installed by make install (into MANDIR/man1)", function()
    -- make -n: what install would run, without building or installing.
    local out, err, ok = run("make -n install DESTDIR=/tmp/x PREFIX=/usr 2>&1")
    assert.is_true(ok, err)
    assert.truthy(out:find("docs/fluence.1 /tmp/x/usr/share/man/man1/fluence.1", 1, true), out)
  end)
end)
