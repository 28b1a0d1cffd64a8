-- Runs bin/fluence (or $FLUENCE_BIN) and captures stdout, stderr and the exit
-- code.  Under FLUENCE_VALGRIND=1 every run goes through valgrind memcheck and
-- a memory error or leak fails the run.
local M = {}

local root = os.getenv("PWD")
M.root = root
M.bin = os.getenv("FLUENCE_BIN") or (root .. "/bin/fluence")

local function quote(s)
  return "'" .. tostring(s):gsub("'", "'\\''") .. "'"
end
M.quote = quote

function M.slurp(path)
  local f = io.open(path, "rb")
  if not f then return nil end
  local d = f:read("a")
  f:close()
  return d
end

function M.write(path, data)
  local f = assert(io.open(path, "wb"))
  f:write(data)
  f:close()
  return path
end

-- A Fluence Pod whose select-policy is %s (POD:format(policy)): the
-- smallest object a selection concerns, for specs of the CLI.
M.POD = [[
apiVersion: v1
kind: Pod
metadata:
  name: p
  annotations:
    fluence.flux-framework.org/select-policy: "%s"
spec:
  schedulerName: fluence
  containers: [{name: c, image: x}]
]]

-- The non-empty lines of s, in order.
function M.lines(s)
  local out = {}
  for l in s:gmatch("[^\n]+") do out[#out + 1] = l end
  return out
end

-- A fresh temporary directory, removed by M.cleanup().
local made = {}
function M.tmpdir()
  local p = os.tmpname()
  os.remove(p)
  assert(os.execute("mkdir -p " .. quote(p)))
  made[#made + 1] = p
  return p
end

-- A fresh temporary directory holding pod.yaml, a Fluence Pod whose policy
-- is min-cost (POD): returns the directory and the file's path.
function M.workdir()
  local dir = M.tmpdir()
  return dir, M.write(dir .. "/pod.yaml", M.POD:format("min-cost"))
end

function M.cleanup()
  for _, p in ipairs(made) do os.execute("rm -rf " .. quote(p)) end
  made = {}
end

local VALGRIND = "valgrind -q --error-exitcode=99 --leak-check=full " ..
                 "--errors-for-leak-kinds=definite,indirect --show-leak-kinds=definite,indirect"

-- run{args...; stdin=, env={K=V|false}, cwd=, bin=, valgrind=bool, timeout=s}
--   -> {out=, err=, code=}
-- timeout: a hang detector for specs of bounded waits, not a measure: past
-- it the run is killed (code 124, or 137 when it ignored SIGTERM), so a
-- wait that never ends fails the spec instead of stalling the suite.
-- Under valgrind it is tripled.
function M.run(args)
  local base = os.tmpname()
  local parts = {}
  if args.cwd then parts[#parts + 1] = "cd " .. quote(args.cwd) .. " &&" end
  -- children never inherit the sanitizer preload (see `make check-asan`);
  -- fluence itself is linked with the sanitizers there and checks leaks.
  -- env wants every -u before the first assignment.
  local unset, assign = { "-u LD_PRELOAD" }, {}
  if os.getenv("FLUENCE_SANITIZE") then assign[#assign + 1] = "ASAN_OPTIONS=detect_leaks=1" end
  for k, v in pairs(args.env or {}) do
    if v == false then unset[#unset + 1] = "-u " .. k
    else assign[#assign + 1] = k .. "=" .. quote(v) end
  end
  parts[#parts + 1] = "env " .. table.concat(unset, " ") .. " " .. table.concat(assign, " ")
  local valgrind = args.valgrind or (os.getenv("FLUENCE_VALGRIND") and args.valgrind ~= false)
  if args.timeout then
    parts[#parts + 1] = ("timeout -k 5 %d"):format(math.ceil(args.timeout * (valgrind and 3 or 1)))
  end
  if valgrind then parts[#parts + 1] = VALGRIND end
  parts[#parts + 1] = quote(args.bin or M.bin)
  for _, a in ipairs(args) do parts[#parts + 1] = quote(a) end
  local stdin = "/dev/null"
  if args.stdin then stdin = M.write(base .. ".in", args.stdin) end
  local cmd = table.concat(parts, " ") .. " <" .. quote(stdin) ..
              " >" .. base .. ".out 2>" .. base .. ".err"
  local _, how, code = os.execute(cmd)
  local r = { out = M.slurp(base .. ".out") or "", err = M.slurp(base .. ".err") or "",
              code = how == "exit" and code or 128 + (code or 0) }
  os.remove(base .. ".out"); os.remove(base .. ".err"); os.remove(base)
  if args.stdin then os.remove(stdin) end
  if r.code == 99 and (args.valgrind or os.getenv("FLUENCE_VALGRIND")) then
    error("valgrind found memory errors or leaks:\n" .. r.err, 2)
  end
  return r
end

-- Is prog on PATH?
function M.have(prog)
  return os.execute("command -v " .. quote(prog) .. " >/dev/null 2>&1") == true
end

-- Runs a shell command in cwd (default the source tree), without the
-- sanitizers' preload: {out=, err=, code=}.
function M.sh(cmd, cwd)
  local base = os.tmpname()
  local _, how, code = os.execute("cd " .. quote(cwd or root) .. " && env -u LD_PRELOAD sh -c " .. quote(cmd) ..
                                  " >" .. base .. ".out 2>" .. base .. ".err")
  local r = { out = M.slurp(base .. ".out") or "", err = M.slurp(base .. ".err") or "",
              code = how == "exit" and code or 128 + code }
  os.remove(base .. ".out"); os.remove(base .. ".err"); os.remove(base)
  return r
end

return M
