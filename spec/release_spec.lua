-- The release artifacts (docs/install.md): what `make install` puts where,
-- and, when `make dist` or `make deb` made them, the tarballs, their
-- sha256s, the krew manifest and the Debian package, unpacked (tar -x,
-- dpkg -x) into a scratch root and run.  make dist and make deb end with
-- this spec; under make test it skips, with a note, what was not built.
local cli = require "support.cli"
local yaml = require "fluence.yaml"

local root = cli.root
local q = cli.quote
local VERSION = assert(cli.slurp(root .. "/VERSION")):match("^(%S+)\n$")

local have, sh = cli.have, cli.sh

local function exists(path) return os.execute("test -e " .. q(path)) == true end

local HOST = sh("dpkg --print-architecture 2>/dev/null || echo amd64").out:match("%S+")

describe("the version", function()
  it("comes from the file VERSION: fluence version, the man page", function()
    assert.matches("^%d+%.%d+%.%d+", VERSION)
    local r = cli.run{ "version" }
    assert.are.equal(0, r.code)
    assert.are.equal("fluence " .. VERSION .. " ", r.out:sub(1, #VERSION + 9))
    local page = assert(cli.slurp(root .. "/docs/fluence.1"))
    assert.truthy(page:find('"fluence ' .. VERSION .. '"', 1, true), "docs/fluence.1 names another version")
    -- and no second copy of it where the others are made
    assert.falsy(cli.slurp(root .. "/Makefile"):find("VERSION%s*:=%s*%d"))
    assert.falsy(exists(root .. "/debian/changelog"), "debian/changelog is written by tools/deb.sh")
  end)
end)

describe("make install", function()
  teardown(function() cli.cleanup() end)

  it("installs the program, the man page and the bash, zsh and fish completions", function()
    local d = cli.tmpdir()
    local r = sh("make -s install PREFIX=/usr DESTDIR=" .. q(d))
    assert.are.equal(0, r.code, r.err)
    for _, f in ipairs{ "/usr/bin/fluence", "/usr/bin/kubectl-fluence", "/usr/share/man/man1/fluence.1",
                        "/usr/share/bash-completion/completions/fluence",
                        "/usr/share/bash-completion/completions/kubectl-fluence",
                        "/usr/share/zsh/site-functions/_fluence",
                        "/usr/share/fish/vendor_completions.d/fluence.fish" } do
      assert.is_true(exists(d .. f), f)
    end
    assert.are.equal(cli.run{ "completion", "fish" }.out,
                     cli.slurp(d .. "/usr/share/fish/vendor_completions.d/fluence.fish"))
  end)
end)

describe("make dist", function()
  teardown(function() cli.cleanup() end)
  local tarballs = {}
  for _, arch in ipairs{ "amd64", "arm64" } do
    local t = ("%s/dist/fluence-%s-linux-%s.tar.gz"):format(root, VERSION, arch)
    if exists(t) then tarballs[arch] = t end
  end
  if not next(tarballs) then
    it("made the tarballs", function() pending("no dist/fluence-" .. VERSION .. "-linux-*.tar.gz: run make dist") end)
    return
  end

  it("made both architectures' tarballs, each with its .sha256", function()
    assert.truthy(tarballs.amd64, "no amd64 tarball")
    assert.truthy(tarballs.arm64, "no arm64 tarball")
    for _, t in pairs(tarballs) do
      local r = sh("cd dist && sha256sum -c " .. q(t:match("[^/]+$") .. ".sha256"))
      assert.are.equal(0, r.code, r.out .. r.err)
    end
  end)

  it("packs the binary, man page, completions, LICENSE and README, regular files owned by 0", function()
    for arch, t in pairs(tarballs) do
      local r = sh("tar -tvzf " .. q(t))
      assert.are.equal(0, r.code, r.err)
      local names = {}
      for line in r.out:gmatch("[^\n]+") do
        local mode, owner, name = line:match("^(%S+) (%S+) .* (%S+)$")
        assert.truthy(mode:match("^[-d]"), arch .. ": not a file or directory: " .. line)
        assert.are.equal("0/0", owner, line)
        names[#names + 1] = name
      end
      table.sort(names)
      assert.are.same({ "LICENSE", "README.md", "completions/", "completions/_fluence",
                        "completions/fluence.bash", "completions/fluence.fish", "fluence", "fluence.1" }, names)
    end
  end)

  it("holds a binary that runs from the unpacked tarball and needs glibc <= 2.31 only", function()
    local t = tarballs[HOST]
    if not t then pending("no tarball for this machine's architecture (" .. HOST .. ")") return end
    local d = cli.tmpdir()
    assert.are.equal(0, sh("tar -xzf " .. q(t) .. " -C " .. q(d)).code)
    local r = cli.run{ "version", bin = d .. "/fluence" }
    assert.are.equal(0, r.code, r.err)
    assert.are.equal("fluence " .. VERSION, r.out:match("^(%S+ %S+)"))
    r = sh("sh tools/glibc-check.sh " .. q(d .. "/fluence"))
    assert.are.equal(0, r.code, r.err)
  end)

  it("writes the krew manifest with every tarball's URI and sha256", function()
    local text = assert(cli.slurp(root .. "/dist/fluence.yaml"), "no dist/fluence.yaml")
    assert.falsy(text:find("@", 1, true), "a placeholder is left")
    local m = assert(yaml.decode(text, "dist/fluence.yaml"))
    assert.are.equal("v" .. VERSION, m.spec.version)
    assert.are.equal(2, #m.spec.platforms)
    for _, p in ipairs(m.spec.platforms) do
      local t = tarballs[p.selector.matchLabels.arch]
      local file = t:match("[^/]+$")
      assert.are.equal(file, p.uri:match("[^/]+$"))
      assert.are.equal(sh("sha256sum " .. q(t)).out:match("^%x+"), p.sha256)
      assert.are.equal("fluence", p.bin)
    end
  end)
end)

describe("make deb", function()
  teardown(function() cli.cleanup() end)
  local deb = ("%s/dist/fluence_%s_%s.deb"):format(root, VERSION, HOST)
  if not exists(deb) then
    it("made the package", function() pending("no dist/" .. deb:match("[^/]+$") .. ": run make deb") end)
    return
  end
  if not have("dpkg-deb") then
    it("needs dpkg-deb", function() pending("dpkg-deb is not installed") end)
    return
  end

  it("installs into a scratch root (dpkg -x) and runs fluence version there", function()
    local d = cli.tmpdir()
    local r = sh("dpkg -x " .. q(deb) .. " " .. q(d))
    assert.are.equal(0, r.code, r.err)
    r = cli.run{ "version", bin = d .. "/usr/bin/fluence" }
    assert.are.equal(0, r.code, r.err)
    assert.are.equal("fluence " .. VERSION, r.out:match("^(%S+ %S+)"))
    -- the kubectl plugin name, the man page, the completions, the docs
    r = sh("env PATH=" .. q(d .. "/usr/bin:/usr/bin:/bin") .. " kubectl-fluence version")
    assert.are.equal(0, r.code, r.err)
    for _, f in ipairs{ "/usr/share/man/man1/fluence.1.gz", "/usr/share/man/man1/kubectl-fluence.1.gz",
                        "/usr/share/bash-completion/completions/fluence",
                        "/usr/share/zsh/vendor-completions/_fluence",
                        "/usr/share/fish/vendor_completions.d/fluence.fish",
                        "/usr/share/doc/fluence/copyright" } do
      assert.is_true(exists(d .. f), f)
    end
    -- every document in the tree ships; dh_compress gzips those over 4 KiB,
    -- so either name is the document (install.md crossed that line once)
    local docs = { "README.md" }
    for f in io.popen("cd " .. q(root) .. " && ls docs/*.md"):lines() do
      docs[#docs + 1] = f:match("[^/]+$")
    end
    for _, f in ipairs(docs) do
      local p = d .. "/usr/share/doc/fluence/" .. f
      assert.is_true(exists(p) or exists(p .. ".gz"), "/usr/share/doc/fluence/" .. f)
    end
  end)

  it("depends on libc only, and recommends libcurl4 and libssl3", function()
    local r = sh("dpkg-deb -f " .. q(deb) .. " Version Depends Recommends")
    assert.are.equal(0, r.code, r.err)
    assert.truthy(r.out:find("Version: " .. VERSION .. "\n", 1, true), r.out)
    local depends = r.out:match("Depends: ([^\n]*)")
    for dep in depends:gmatch("[^,]+") do
      assert.matches("^%s*libc6", dep, 1)
    end
    assert.matches("Recommends: libcurl4, libssl3", r.out, 1, true)
  end)
end)
