-- Talking to the user on stderr: verbosity levels, a progress line, colour.
--
--   log.setup(args)          once per run: reads args.opts.verbose (-v count)
--                            and args.opts.color (--color[=WHEN])
--   log.v(level, fmt, ...)   "fluence: MESSAGE" on stderr when -v was given at
--                            least `level` times (1: providers, timings;
--                            2: HTTP status lines; 3: everything), on one
--                            line: control characters and newlines escaped.
--                            Never pass secrets: tokens and keys must not
--                            reach a log.
--   log.level()              the current verbosity (0 without -v)
--   log.progress(msg)        a single updating status line on stderr, shown
--                            only when stderr is a terminal and the current
--                            operation has run for more than 1 s (the clock
--                            starts at the first progress call after a
--                            clear); log.progress(nil) clears it and ends
--                            the operation.  Call it as often as you like.
--                            A transfer that blocks redraws it with
--                            "(waiting for HOST, N s)" (core/progress.c).
--   log.color()              --color=always: true; --color=never: false;
--                            --color=auto (the default): true when stdout is
--                            a terminal and NO_COLOR is unset or empty
--                            (https://no-color.org)
--   log.paint(code, text)    text wrapped in the SGR code when log.color()
--
-- Verbose lines and the progress line share stderr: a verbose line first
-- erases the progress line, which the next progress() call redraws.
local sys = require "fluence.sys"
local progress = require "fluence.progress"   -- the line's state, in C

local log = {}

local level = 0
local color_when = "auto"     -- --color: auto, always or never
local WHEN = { auto = true, always = true, never = true }

function log.setup(args)
  local opts = args and args.opts or {}
  local v = opts.verbose
  level = math.tointeger(tonumber(v) or 0) or 0
  -- --color alone means always, as ls and grep take it
  local c = opts.color
  if c == true then c = "always" end
  if c ~= nil and not WHEN[c] then
    require("fluence.errors").raise("USAGE", "--color: %q is not auto, always or never", tostring(c))
  end
  color_when = c or "auto"
  progress.update(nil)
end

function log.level() return level end

function log.v(n, fmt, ...)
  if level < n then return end
  local msg = select("#", ...) > 0 and fmt:format(...) or tostring(fmt)
  progress.erase()
  -- one message, one line, whatever it names (a server's answer, a plugin's
  -- text): escaped as Go's %q does (core/escape.h)
  sys.write(2, "fluence: " .. sys.escape(msg) .. "\n")
end

function log.progress(msg)
  progress.update(msg ~= nil and tostring(msg) or nil)
end

-- Could a progress() now be drawn?  Callers updating once per object check
-- this before formatting the text (off a terminal it never is).
log.progress_due = progress.due

function log.color()
  if color_when ~= "auto" then return color_when == "always" end
  if not sys.isatty(1) then return false end
  local nc = sys.getenv("NO_COLOR")
  return nc == nil or nc == ""
end

function log.paint(code, text)
  if not log.color() then return text end
  return "\27[" .. code .. "m" .. text .. "\27[0m"
end

return log
