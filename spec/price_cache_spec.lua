-- The price cache (lua/fluence/price_cache.lua over core/cachefile.c): what
-- is put comes back with its age; a corrupt or hostile file is a note, never
-- an error; writers running at once never leave a reader half a file.
local price_cache = require "fluence.price_cache"
local cachefile = require "fluence.cachefile"
local json = require "fluence.json"
local sys = require "fluence.sys"
local cli = require "support.cli"

describe("the price cache", function()
  local dir
  before_each(function() dir = cli.tmpdir() .. "/prices" end)
  teardown(cli.cleanup)

  it("gives back what was put, with its age", function()
    assert.is_nil(price_cache.get(dir, "aws-prices", "ec2/p4d@us-east-1", 100))     -- a miss, no note
    assert.is_true(price_cache.put(dir, "aws-prices", "ec2/p4d@us-east-1", { price = 32.77 }, 1000))
    local e = price_cache.get(dir, "aws-prices", "ec2/p4d@us-east-1", 1600)
    assert.are.same({ value = { price = 32.77 }, fetched = 1000, age = 600 }, e)
    -- other providers and keys are other files
    assert.is_nil(price_cache.get(dir, "azure-prices", "ec2/p4d@us-east-1", 1600))
    assert.is_nil(price_cache.get(dir, "aws-prices", "ec2/p4d@us-west-2", 1600))
    -- an entry from the future (a clock set back) is as young as can be
    assert.are.equal(0, price_cache.get(dir, "aws-prices", "ec2/p4d@us-east-1", 10).age)
  end)

  -- The names the cache has always had (the Lua that made them, before
  -- core/cachefile.c did): entries written by an earlier fluence are found.
  local function old_file_of(d, provider, key)
    local function hash(str)
      local h = 2166136261
      for i = 1, #str do h = ((h ~ str:byte(i)) * 16777619) & 0xffffffff end
      return ("%08x"):format(h)
    end
    local safe = key:gsub("[^%w%.%-]", "_"):sub(1, 80)
    return ("%s/%s/%s-%s.json"):format(d, provider:gsub("[^%w%.%-]", "_"), safe, hash(provider .. "\0" .. key))
  end

  it("names an entry's file as it always did", function()
    local keys = { "ec2/p4d.24xlarge@us-east-1", "", "\0\255\128 caf\195\169/..", ("k"):rep(79), ("k"):rep(80),
                   ("\200"):rep(81), "vm/Standard_NC24ads_A100_v4@eastus" }
    for b = 0, 255 do keys[#keys + 1] = "x" .. string.char(b) .. "y" end
    for _, provider in ipairs{ "aws-prices", "../evil", "a b\n", "" } do
      for _, key in ipairs(keys) do
        assert.are.equal(old_file_of(dir, provider, key), price_cache.file_of(dir, provider, key))
      end
    end
    -- the snapshot examples/aws-prices/cache ships
    assert.are.equal(dir .. "/aws-prices/ec2_p4d.24xlarge_us-east-1-1edf49e5.json",
                     price_cache.file_of(dir, "aws-prices", "ec2/p4d.24xlarge@us-east-1"))
  end)

  it("keeps file names safe whatever the key", function()
    local key = "../../etc/passwd\n$(rm -rf)/" .. ("x"):rep(300)
    assert.is_true(price_cache.put(dir, "../evil", key, { ok = true }, 1))
    local path = price_cache.file_of(dir, "../evil", key)
    assert.matches("^" .. dir:gsub("%p", "%%%0") .. "/%.%._evil/[%w%._%-]+%-%x%x%x%x%x%x%x%x%.json$", path)
    assert.is_true(price_cache.get(dir, "../evil", key, 1).value.ok)
  end)

  it("ignores a corrupt file with a note naming it, and a fresh put replaces it", function()
    local key = "vm/Standard_NC24ads_A100_v4@eastus"
    local path = price_cache.file_of(dir, "azure-prices", key)
    assert.is_true(price_cache.put(dir, "azure-prices", key, { ondemand = 1 }, 1))
    local bad = {
      { "{\"format\": 1, \"provider\": \"azure-prices\", \"key\"", "is corrupt" },          -- cut short
      { "\0\1\2binary", "is corrupt" },
      { json.encode{ format = 2, provider = "azure-prices", key = key, fetched = 1, value = {} }, "format 2, not 1" },
      { json.encode{ format = 1, provider = "azure-prices", key = "other", fetched = 1, value = {} }, "another key" },
      { json.encode{ format = 1, provider = "azure-prices", key = key, fetched = "x", value = {} }, "no fetch time" },
      { json.encode{ format = 1, provider = "azure-prices", key = key, fetched = 1, value = 3 }, "no value" },
      { "[1, 2]", "is corrupt" },
    }
    for _, b in ipairs(bad) do
      cli.write(path, b[1])
      local e, note = price_cache.get(dir, "azure-prices", key, 5)
      assert.is_nil(e)
      assert.matches("price cache " .. path:gsub("%p", "%%%0") .. " ", note)
      assert.matches(b[2], note, 1, true)
    end
    assert.is_true(price_cache.put(dir, "azure-prices", key, { ondemand = 2 }, 7))
    assert.are.equal(2, price_cache.get(dir, "azure-prices", key, 8).value.ondemand)
  end)

  it("refuses a FIFO or a directory in a cache file's place without waiting on it", function()
    local key = "spot/x@y"
    local path = price_cache.file_of(dir, "aws-prices", key)
    assert(cachefile.mkdirs(path:match("^(.*)/")))
    assert(os.execute("mkfifo " .. cli.quote(path)))
    local e, note = price_cache.get(dir, "aws-prices", key, 1)
    assert.is_nil(e)
    assert.matches("unreadable", note)
    os.remove(path)
    assert(cachefile.mkdirs(path))
    e, note = price_cache.get(dir, "aws-prices", key, 1)
    assert.is_nil(e)
    assert.matches("unreadable", note)
  end)

  it("says why it cannot write, and never leaves a temporary file", function()
    local blocked = cli.tmpdir() .. "/file"
    cli.write(blocked, "not a directory")
    local ok, err = price_cache.put(blocked .. "/prices", "aws-prices", "k", {}, 1)
    assert.is_nil(ok)
    assert.matches("file: Not a directory", err, 1, true)
    -- a directory where the file goes: the rename fails, the temporary goes
    local path = price_cache.file_of(dir, "aws-prices", "k")
    assert(cachefile.mkdirs(path))
    ok, err = price_cache.put(dir, "aws-prices", "k", { x = 1 }, 1)
    assert.is_nil(ok)
    assert.matches("Is a directory", err, 1, true)
    local names = sys.list_dir(dir .. "/aws-prices")
    assert.are.same({ path:match("[^/]*$") }, names)
  end)

  it("makes its directories private", function()
    assert.is_true(price_cache.put(dir, "gcp-prices", "gpu-skus", {}, 1))
    local mode = io.popen("stat -c %a " .. cli.quote(dir .. "/gcp-prices")):read("l")
    assert.are.equal("700", mode)
    mode = io.popen("stat -c %a " .. cli.quote(price_cache.file_of(dir, "gcp-prices", "gpu-skus"))):read("l")
    assert.are.equal("600", mode)
  end)

  it("lets writers run at once: every read is a whole file, the last write wins, no temporary file stays", function()
    local root = cli.root
    local cpath = (os.getenv("FLUENCE_CPATH") or (root .. "/build/lib")) .. "/?.so"
    -- four processes each write the same key 200 times, and a key of their own
    local script = cli.write(cli.tmpdir() .. "/writer.lua", ([[
package.cpath = %q .. ";" .. package.cpath
package.path = %q .. "/lua/?.lua;" .. package.path
local pc = require "fluence.price_cache"
local me, dir = tonumber(arg[1]), arg[2]
local blob = ("w"):rep(20000 + me)                  -- big enough to take several writes
for i = 1, 200 do
  assert(pc.put(dir, "aws-prices", "shared", { writer = me, i = i, blob = blob }, i))
  assert(pc.put(dir, "aws-prices", "own-" .. me, { writer = me, i = i }, i))
end
io.open(arg[3], "w"):close()                        -- done
]]):format(cpath, root))
    local marks = cli.tmpdir()
    local pids = {}
    for w = 1, 4 do
      -- (the sanitizer run's preload stays: the writers load its fluence.so)
      local p = io.popen(("lua5.4 %s %d %s %s >/dev/null 2>&1 & echo $!")
                         :format(cli.quote(script), w, cli.quote(dir), cli.quote(marks .. "/" .. w)))
      pids[#pids + 1] = p:read("l")
      p:close()
    end
    -- read the shared key while they write: never a partial or corrupt file
    local reads, done = 0, 0
    local function finished()
      local n = 0
      for w = 1, 4 do
        local f = io.open(marks .. "/" .. w)
        if f then f:close(); n = n + 1 end
      end
      return n
    end
    local spins = 0
    while done < 4 and spins < 50000 do               -- a bound, should a writer die
      spins = spins + 1
      local e, note = price_cache.get(dir, "aws-prices", "shared", 1e9)
      assert.is_nil(note)
      if e then
        reads = reads + 1
        assert.are.equal(20000 + e.value.writer, #e.value.blob)
      end
      done = finished()
    end
    for _, pid in ipairs(pids) do os.execute("while kill -0 " .. pid .. " 2>/dev/null; do sleep 0.05; done") end
    assert.are.equal(4, done)
    assert.is_true(reads > 0)
    local last = price_cache.get(dir, "aws-prices", "shared", 1e9)
    assert.are.equal(200, last.value.i)                 -- each writer's last put was its 200th
    for w = 1, 4 do assert.are.equal(200, price_cache.get(dir, "aws-prices", "own-" .. w, 1e9).value.i) end
    local names = sys.list_dir(dir .. "/aws-prices")
    assert.are.equal(5, #names, table.concat(names, " "))
    for _, n in ipairs(names) do assert.matches("%.json$", n) end
  end)
end)
