-- Structured errors: what the user sees and the exit code it means.
--
--   errors.raise("INPUT", "job.yaml:3:5: message")   -- never returns
--
-- The C message handler passes these tables through untouched and main()
-- prints "fluence: <message>" and exits with EXIT[code].  Any other error
-- (a plain Lua error) is a bug and exits 70 with "FILE:LINE: message".
local sys = require "fluence.sys"

local errors = {}
local mt = { __tostring = function(e) return e.message end }

function errors.new(code, message)
  local n = sys.EXIT[code]
  assert(n, "unknown exit code name " .. tostring(code))
  return setmetatable({ code = n, kind = code, message = message }, mt)
end

function errors.raise(code, fmt, ...)
  local msg = select("#", ...) > 0 and fmt:format(...) or fmt
  error(errors.new(code, msg), 0)
end

function errors.is(e)
  return getmetatable(e) == mt
end

-- Runs f(...) and returns true, results... or false, structured error.
-- Plain errors are turned into INTERNAL errors keeping their location.
function errors.try(f, ...)
  local r = table.pack(pcall(f, ...))
  if r[1] then return table.unpack(r, 1, r.n) end
  local e = r[2]
  if errors.is(e) then return false, e end
  return false, errors.new("INTERNAL", tostring(e))
end

return errors
