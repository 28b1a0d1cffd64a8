-- Where Fluxion itself is, for the specs that compare with it: flux-sched
-- v0.54's libreapi_cli (what FLUENCE_FLUXION_LIB loads) and resource-query.
-- FLUENCE_FLUXION_LIB / FLUENCE_RESOURCE_QUERY name them; else they are
-- looked for in ../shared/fluxion beside the source tree (CI puts them
-- there; `make test` installs their Debian runtime packages,
-- tools/fluxion-deps.sh).  Specs call pending(M.SKIP) when one is missing.
local cli = require "support.cli"

local M = {}

local SHARED = cli.root .. "/../shared/fluxion"

local function exists(p)
  local f = p and io.open(p, "rb")
  if f then f:close() end
  return f ~= nil
end

local function pick(env, rel)
  local v = os.getenv(env)
  if v and v ~= "" then return v end
  local p = SHARED .. "/" .. rel
  return exists(p) and p or nil
end

M.lib = pick("FLUENCE_FLUXION_LIB", "lib/libreapi_cli.so")
M.resource_query = pick("FLUENCE_RESOURCE_QUERY", "bin/resource-query")
M.SKIP = "skipped: Fluxion v0.54 not found; set FLUENCE_FLUXION_LIB=/path/libreapi_cli.so and " ..
         "FLUENCE_RESOURCE_QUERY=/path/resource-query, or put it in ../shared/fluxion"

-- True under `make check` (ASan / valgrind): a smaller share of the work.
M.checking = os.getenv("FLUENCE_SANITIZE") ~= nil or os.getenv("FLUENCE_VALGRIND") ~= nil

-- The environment of a fluence run backed by the library.  Under ASan, the
-- library's own leak (spec/support/lsan-fluxion.supp) is suppressed, with
-- full stacks so that the suppression can see the library's frames.  Under
-- valgrind such runs go without it (M.valgrind = false): the C of the
-- dlopen backend is checked under ASan.
function M.lib_env(extra)
  local env = { FLUENCE_FLUXION_LIB = M.lib }
  if os.getenv("FLUENCE_SANITIZE") then
    env.ASAN_OPTIONS = "detect_leaks=1:fast_unwind_on_malloc=0"
    env.LSAN_OPTIONS = "print_suppressions=0:suppressions=" .. cli.root .. "/spec/support/lsan-fluxion.supp"
  end
  for k, v in pairs(extra or {}) do env[k] = v end
  return env
end
M.valgrind = false

-- resource-query -L GRAPH -f LOADFMT -S CA -P POLICY -F FORMAT -t OUT < script,
-- run in dir; returns the -t text and what it printed besides (its info
-- lines on stdout and its errors on stderr, in order), or nil and that
-- when it failed.  loadfmt: "jgf" (default) or "grug".
function M.query(dir, graph, policy, format, script, loadfmt)
  local base = os.tmpname()
  local f = assert(io.open(base .. ".in", "wb"))
  f:write(script)
  if not script:find("\nquit\n?$") then f:write("\nquit\n") end
  f:close()
  local cmd = ("cd %s && env -u LD_PRELOAD timeout 120 %s -L %s -f %s -S CA -P %s -F %s -d -t %s <%s >%s 2>&1"):format(
    cli.quote(dir), cli.quote(M.resource_query), cli.quote(graph), loadfmt or "jgf", cli.quote(policy), cli.quote(format),
    cli.quote(base .. ".out"), cli.quote(base .. ".in"), cli.quote(base .. ".err"))
  local ok = os.execute(cmd)
  local out, err = cli.slurp(base .. ".out"), cli.slurp(base .. ".err")
  os.remove(base); os.remove(base .. ".in"); os.remove(base .. ".out"); os.remove(base .. ".err")
  if not ok then return nil, err end
  return out or "", err or ""
end

return M
