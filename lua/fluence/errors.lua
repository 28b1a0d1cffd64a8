-- Structured errors: what the user sees and the exit code it means.
--
--   errors.raise("INPUT", "job.yaml:3:5: message")   -- never returns
--   errors.raise("INPUT", "unknown provider %q", name)  -- %q: Go's, one line
--   errors.brief(text)  -- text, or its start when long: what a message quotes
--
-- The C message handler passes these tables through untouched and main()
-- prints "fluence: <message>" and exits with EXIT[code].  Any other error
-- (a plain Lua error) is a bug and exits 70 with "FILE:LINE: message".
local sys = require "fluence.sys"

local errors = {}
-- __metatable: a plugin that catches one of these cannot take its metatable
-- to make its own.
local mt = { __tostring = function(e) return e.message end, __metatable = "fluence error" }
-- each error as made: a plugin that catches one and edits it (an exit code
-- of 0, another message) holds no longer a structured error (errors.is)
local made = setmetatable({}, { __mode = "k" })

function errors.new(code, message)
  local n = sys.EXIT[code]
  assert(n, "unknown exit code name " .. tostring(code))
  local e = setmetatable({ code = n, kind = code, message = message }, mt)
  made[e] = { n, code, message }
  return e
end

-- string.format, but %q quotes as Go's %q does (sys.quote): a string from
-- outside (a name from a manifest, a kubeconfig, a plugin) stays on one
-- line, its control characters escaped, where Lua's %q writes a newline as
-- a backslash and a real newline.
function errors.format(fmt, ...)
  local args, n = table.pack(...), 0
  local f = fmt:gsub("%%([-+ #0]*%d*%.?%d*)(.)", function(flags, c)
    if c == "%" then return nil end
    n = n + 1
    if c == "q" and flags == "" and type(args[n]) == "string" then
      args[n] = sys.quote(args[n])
      return "%s"
    end
  end)
  return f:format(table.unpack(args, 1, args.n))
end

-- A text as a message (or a drop reason) quotes it: whole up to 80 bytes,
-- else its first 60 (never half a UTF-8 character) and its length.  Policy
-- texts and values from files may be megabytes: quoted whole, one message
-- became a megabyte line, and a drop reason, given to every backend a stage
-- drops, made the output and the audit grow with backends x policy length.
-- (Plugins get it as ctx.brief.)
local BRIEF_MAX, BRIEF_CUT = 80, 60
function errors.brief(text)
  text = tostring(text)
  if #text <= BRIEF_MAX then return text end
  local cut = BRIEF_CUT
  while cut > 1 and (text:byte(cut + 1) or 0) & 0xC0 == 0x80 do cut = cut - 1 end
  return ("%s... (%d bytes)"):format(text:sub(1, cut), #text)
end

function errors.raise(code, fmt, ...)
  local msg = select("#", ...) > 0 and errors.format(fmt, ...) or fmt
  error(errors.new(code, msg), 0)
end

-- Made by errors.new and unchanged since.
function errors.is(e)
  local m = made[e]
  return m ~= nil and rawget(e, "code") == m[1] and rawget(e, "kind") == m[2] and rawget(e, "message") == m[3]
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
