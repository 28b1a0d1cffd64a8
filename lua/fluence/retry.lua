-- The one retry policy of the requests fluence makes to servers: the
-- Kubernetes API (kubeclient.lua) and AWS Braket (providers/braket-live.lua,
-- through api.http.budget).  A request - every attempt and every wait
-- between attempts - fits in one time budget, --request-timeout (seconds or
-- a kubectl duration; default 30 s).  Each attempt gets at most what is left
-- of it, and a retry is made only while its wait and another attempt as
-- long as the last one end before the budget does: a server answering 429
-- forever costs one --request-timeout, never more, no attempt is made that
-- has no time left to be answered, and the message says why fluence stopped
-- asking.
--
--   retry.parse_timeout(v) -> seconds, given (v not nil, not 0)
--   retry.budget(seconds) -> b, starting now
--   b:left() -> seconds left (at least 1 ms: an attempt always has a limit)
--   b:attempt(limit) -> the next attempt's timeout: limit, or less when
--                       less is left
--   b:gave_up(attempts, max_attempts, wait) -> nil (ask again after wait
--       seconds) | why not, for the message: "gave up after 6 attempts",
--       "gave up after 1 attempt: another after 10 s would pass
--       --request-timeout (3 s)"
--   retry.after(value, max) -> seconds a Retry-After header asks for
--       (default 1, within 0..max)
--   retry.num(v) -> v as a message shows seconds: "3", "2.5"
local sys = require "fluence.sys"
local errors = require "fluence.errors"

local retry = {}

retry.DEFAULT = 30   -- seconds, without --request-timeout (kubectl's is none: it waits forever)

-- --request-timeout: seconds as a number, or a kubectl duration ("30s",
-- "1m", "500ms", "1m30s", ".5s"); nil or 0 mean the default.  The command
-- line (core/clispec.c) has already refused anything else.
function retry.parse_timeout(v)
  if v == nil then return retry.DEFAULT, false end
  local n = tonumber(v)
  if not n and type(v) == "string" and v:match("^[%d%.hms]+$") then
    n = 0
    local rest = v:gsub("([%d%.]+)(m?s?h?)", function(num, unit)
      local f = ({ h = 3600, m = 60, s = 1, ms = 0.001 })[unit]
      if not f or not tonumber(num) then return nil end
      n = n + tonumber(num) * f
      return ""
    end)
    if rest ~= "" then n = nil end
  end
  if not n or n < 0 or n ~= n or n == math.huge or (type(v) == "string" and v:match("^%s*0[xX]")) then
    errors.raise("USAGE", "--request-timeout: %q is not a duration (seconds, or like 30s, 1m, 500ms)", tostring(v))
  end
  if n > 1e9 then -- the HTTP binding takes at most 1e9 s (milliseconds must fit a long)
    errors.raise("USAGE", "--request-timeout: %q is more than 1000000000 seconds", tostring(v))
  end
  if n == 0 then return retry.DEFAULT, false end
  return n, true
end

function retry.num(v)
  if v == math.floor(v) and math.abs(v) < 1e15 then return ("%d"):format(v) end
  return ("%.3g"):format(v)
end

local Budget = {}
Budget.__index = Budget

function retry.budget(seconds)
  return setmetatable({ seconds = seconds, deadline = sys.monotonic() + seconds }, Budget)
end

function Budget:left()
  return math.max(self.deadline - sys.monotonic(), 0.001)
end

function Budget:attempt(limit)
  self.started = sys.monotonic()       -- how long an attempt takes: see gave_up
  local left = self:left()
  return limit and math.min(limit, left) or left
end

function Budget:gave_up(attempts, max_attempts, wait)
  if attempts >= max_attempts then
    return ("gave up after %d attempts"):format(attempts)
  end
  -- another attempt is taken to last as long as the last one did (a slow
  -- server, a slow machine): one that would start with no time left to be
  -- answered is not made
  local now = sys.monotonic()
  if now + wait + (now - (self.started or now)) >= self.deadline then
    return ("gave up after %d attempt%s: another after %s s would pass --request-timeout (%s s)")
      :format(attempts, attempts == 1 and "" or "s", retry.num(wait), retry.num(self.seconds))
  end
end

-- Seconds a Retry-After asks to wait: seconds (default 1), within 0..max.
-- (An HTTP date, or garbage, counts as absent.)
function retry.after(v, max)
  local n = type(v) == "string" and v:match("^%s*(%d+%.?%d*)%s*$") and tonumber(v)
         or type(v) == "number" and v or 1
  return math.max(0, math.min(n, max))
end

return retry
