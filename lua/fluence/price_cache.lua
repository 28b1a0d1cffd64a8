-- The on-disk price cache: what the price providers fetched, with when.
--
--   price_cache.dir()            -> $XDG_CACHE_HOME/fluence/prices, else
--                                   ~/.cache/fluence/prices (nil: no home)
--   price_cache.ttl()            -> on-demand seconds, spot seconds
--                                   (FLUENCE_PRICE_TTL, default 6 h; spot a
--                                   sixth of it, default 1 h)
--   price_cache.get(dir, provider, key, now) -> { value =, fetched =, age = }
--                                   | nil [, note]  (note: a file that is
--                                   there but unreadable, ignored)
--   price_cache.put(dir, provider, key, value, now) -> true | nil, err
--
-- One file per provider and key (dir/PROVIDER/KEY-HASH.json), so runs that
-- fetch different prices at once never overwrite each other's, and runs
-- fetching the same price each write a whole file, atomically
-- (core/cachefile.c: a temporary file renamed over the old): the last wins.
-- A file that does not decode, names another key, or holds no value is a
-- miss with a note, never an error: the price is fetched again and the
-- file replaced.
local json = require "fluence.json"

local M = {}

M.VERSION = 1
M.MAX_BYTES = 16 * 1024 * 1024       -- a GCP GPU catalog is ~100 KB
M.DEFAULT_TTL = 6 * 3600
M.SPOT_SHARE = 6                     -- spot prices move faster: TTL / 6

local sys = require "fluence.sys"

function M.dir()
  local base = sys.getenv("XDG_CACHE_HOME")
  if not base or base == "" or base:sub(1, 1) ~= "/" then   -- XDG: a relative value is ignored
    local home = sys.home()
    if not home or home == "" then return nil end
    base = home .. "/.cache"
  end
  return base .. "/fluence/prices"
end

function M.ttl()
  local text = sys.getenv("FLUENCE_PRICE_TTL")
  local ttl = M.DEFAULT_TTL
  if text and text ~= "" then
    if text:match("^%s*0+%s*$") then
      ttl = 0                                  -- always fetch; the cache only as a fallback
    else
      local secs, err = require("fluence.cost").parse_duration(text)
      if not secs then require("fluence.errors").raise("USAGE", "FLUENCE_PRICE_TTL: %s", err) end
      ttl = secs
    end
  end
  return ttl, ttl / M.SPOT_SHARE
end

-- dir/PROVIDER/KEY-HASH.json (core/cachefile.c: bytes made safe, a 32-bit
-- FNV-1a of provider and key: a short, stable file name for any key)
local function file_of(dir, provider, key)
  return require("fluence.cachefile").path(dir, provider, key)
end
M.file_of = file_of

function M.get(dir, provider, key, now)
  local path = file_of(dir, provider, key)
  local file = require "fluence.cachefile"
  local text, err, missing = file.read(path, M.MAX_BYTES)
  if not text then
    if missing then return nil end
    return nil, ("price cache %s unreadable (%s); ignored"):format(path, tostring(err):match("[^\n]*"))
  end
  local doc, derr = json.decode(text, path)
  local why
  if type(doc) ~= "table" then why = derr and tostring(derr):match("[^\n]*") or "not a JSON object"
  elseif doc.format ~= M.VERSION then why = "format " .. tostring(doc.format) .. ", not " .. M.VERSION
  elseif doc.provider ~= provider or doc.key ~= key then why = "written for another key"
  elseif type(doc.fetched) ~= "number" or doc.fetched ~= doc.fetched then why = "no fetch time"
  elseif type(doc.value) ~= "table" then why = "no value" end
  if why then
    return nil, ("price cache %s is corrupt (%s); ignored"):format(path, why)
  end
  -- a clock set back makes an entry from the future: as old as none
  return { value = doc.value, fetched = doc.fetched, age = math.max(0, now - doc.fetched) }
end

function M.put(dir, provider, key, value, now)
  local path = file_of(dir, provider, key)
  local file = require "fluence.cachefile"
  local ok, err = file.mkdirs(path:match("^(.*)/[^/]*$"))
  if not ok then return nil, err end
  local doc = setmetatable({ format = M.VERSION, provider = provider, key = key, fetched = now, value = value },
                           { __order = { "format", "provider", "key", "fetched", "value" } })
  return file.write(path, json.encode(doc))
end

return M
