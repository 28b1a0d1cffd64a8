-- Talking to the user on stderr: verbosity levels, a progress line, colour.
--
--   log.setup(args)          once per run: reads args.opts.verbose (-v count)
--   log.v(level, fmt, ...)   "fluence: MESSAGE" on stderr when -v was given at
--                            least `level` times (1: providers, timings;
--                            2: HTTP status lines; 3: everything).  Never pass
--                            secrets: tokens and keys must not reach a log.
--   log.level()              the current verbosity (0 without -v)
--   log.progress(msg)        a single updating status line on stderr, shown
--                            only when stderr is a terminal and the current
--                            operation has run for more than 1 s (the clock
--                            starts at the first progress call after a
--                            clear); log.progress(nil) clears it and ends
--                            the operation.  Call it as often as you like.
--   log.color()              true when stdout is a terminal and NO_COLOR is
--                            unset or empty (https://no-color.org)
--   log.paint(code, text)    text wrapped in the SGR code when log.color()
--
-- Verbose lines and the progress line share stderr: a verbose line first
-- erases the progress line, which the next progress() call redraws.
local sys = require "fluence.sys"

local log = {}

local level = 0
local started                 -- monotonic time of the current operation
local shown = false           -- a progress line is on the terminal
local DELAY = 1.0             -- seconds before a progress line appears
local CLEAR = "\r\27[K"

function log.setup(args)
  local v = args and args.opts and args.opts.verbose
  level = math.tointeger(tonumber(v) or 0) or 0
  started, shown = nil, false
end

function log.level() return level end

local function erase()
  if shown then
    sys.write(2, CLEAR)
    shown = false
  end
end

function log.v(n, fmt, ...)
  if level < n then return end
  local msg = select("#", ...) > 0 and fmt:format(...) or tostring(fmt)
  erase()
  sys.write(2, "fluence: " .. msg .. "\n")
end

function log.progress(msg)
  if msg == nil then
    erase()
    started = nil
    return
  end
  local now = sys.monotonic()
  if not started then started = now end
  if now - started < DELAY or not sys.isatty(2) then return end
  -- one line: cut what would wrap (a wrapped line cannot be erased with \r)
  local text = "fluence: " .. tostring(msg):gsub("[\r\n]", " ")
  if #text > 79 then text = text:sub(1, 76) .. "..." end
  sys.write(2, CLEAR .. text)
  shown = true
end

function log.color()
  if not sys.isatty(1) then return false end
  local nc = sys.getenv("NO_COLOR")
  return nc == nil or nc == ""
end

function log.paint(code, text)
  if not log.color() then return text end
  return "\27[" .. code .. "m" .. text .. "\27[0m"
end

return log
