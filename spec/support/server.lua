-- Starts a test server script (spec/support/*.py) on a loopback port for the
-- duration of a spec file, and stops it.  The script must accept
-- "--port-file PATH" and write its port there once it listens.
--
--   local server = require "support.server"
--   local s = server.start("spec/support/http_server.py", { "--tls" })
--   ... s.port, s.url ...
--   s:stop()
local M = {}

local function quote(s) return "'" .. tostring(s):gsub("'", "'\\''") .. "'" end

function M.start(script, args)
  local base = os.tmpname()
  local portfile, pidfile, logfile = base .. ".port", base .. ".pid", base .. ".log"
  local parts = { "env -u LD_PRELOAD python3", quote(script), "--port-file", quote(portfile) }
  for _, a in ipairs(args or {}) do parts[#parts + 1] = quote(a) end
  local cmd = table.concat(parts, " ") .. " >" .. quote(logfile) .. " 2>&1 & echo $! >" .. quote(pidfile)
  assert(os.execute(cmd))
  local port
  for _ = 1, 200 do                                  -- up to ~10 s
    local f = io.open(portfile)
    if f then port = tonumber(f:read("a")); f:close() end
    if port then break end
    os.execute("sleep 0.05")
  end
  local pf = io.open(pidfile)
  local pid = pf and pf:read("l")
  if pf then pf:close() end
  if not port then
    if pid then os.execute("kill " .. pid .. " 2>/dev/null") end
    local lf = io.open(logfile)
    error("test server " .. script .. " did not start: " .. (lf and lf:read("a") or ""))
  end
  local s = { port = port, pid = pid, log = logfile, base = base }
  function s.stop()
    if s.pid then os.execute("kill " .. s.pid .. " 2>/dev/null; wait " .. s.pid .. " 2>/dev/null") end
    s.pid = nil
    for _, p in ipairs{ portfile, pidfile, logfile, base } do os.remove(p) end
  end
  return s
end

return M
