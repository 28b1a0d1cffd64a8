-- Marked sleeps: a process an exec credential plugin leaves behind, which a
-- spec looks for after fluence has exited (spec/exec_group_spec.lua,
-- spec/hostile_waits_spec.lua).  A unique duration marks it.
local cli = require "support.cli"

local M = {}

-- A unique duration, "2xx.nnnnnn" (base: the hundreds, 200 unless given)
function M.marker(base)
  return ("%d.%d"):format((base or 200) + math.random(0, 99), math.random(100000, 999999))
end

-- Is a `sleep MARKER` running?  ("slee[p]": the shell running pgrep has the
-- marker in its own command line)
function M.running(marker)
  local p = io.popen("env -u LD_PRELOAD pgrep -f " .. cli.quote("slee[p] " .. marker) .. " 2>/dev/null")
  local out = p:read("a")
  p:close()
  return out ~= ""
end

-- An executable shell script at path: "#!/bin/sh\n" .. body
function M.script(path, body)
  cli.write(path, "#!/bin/sh\n" .. body)
  assert(os.execute("chmod +x " .. cli.quote(path)))
  return path
end

return M
