-- fluence match --graph GRAPH.json [--policy P] [--format simple|rv1|rv1_nosched|jgf] [JOBSPEC...]
--
-- Reads a resource-query command script on stdin (match allocate FILE,
-- match allocate_orelse_reserve FILE, match allocate_with_satisfiability FILE,
-- match satisfiability FILE, cancel N, info N, quit, # comments) and prints
-- exactly what resource-query writes to its -t file.  With jobspec arguments,
-- each one is "match allocate FILE".  info and errors go to stderr, as
-- resource-query's stdout/stderr are not part of the -t output.
local sys = require "fluence.sys"
local errors = require "fluence.errors"
local match = require "fluence.match"

local M = {}

local FORMATS = { simple = true, rv1 = true, rv1_nosched = true, jgf = true }

local function one(v)
  if type(v) == "table" then return v[#v] end
  return v
end

local function words(line)
  local t = {}
  for w in line:gmatch("%S+") do t[#t + 1] = w end
  return t
end

-- resource-query reads a job id with C's strtoll (info: atoll, the same):
-- leading blanks, a sign, decimal digits (none: 0), clamped to 64 bits
local function strtoll(s)
  local sign, digits = s:match("^%s*([+-]?)(%d*)")
  digits = (digits or ""):gsub("^0+", "")
  if digits == "" then return 0 end
  if #digits > 19 or (#digits == 19 and digits > "9223372036854775807") then
    return sign == "-" and math.mininteger or math.maxinteger
  end
  local v = math.tointeger(tonumber(digits))
  return sign == "-" and -v or v
end

-- resource-query's commands (name or abbreviation) that fluence match does
-- not run; any other first word is ignored, as resource-query ignores it
local UNSUPPORTED = { ["multi-match"] = true, M = true, update = true, u = true, attach = true, j = true,
                      remove = true, find = true, f = true, ["partial-cancel"] = true, pc = true,
                      ["set-property"] = true, p = true, ["get-property"] = true, g = true,
                      ["set-status"] = true, t = true, ["get-status"] = true, e = true, list = true, l = true,
                      stat = true, s = true, cat = true, a = true, help = true, h = true }

local SUBCMDS = { allocate = true, allocate_orelse_reserve = true, allocate_with_satisfiability = true,
                  satisfiability = true }

-- Runs a command script as resource-query does: returns the -t text and
-- what resource-query prints besides it, in order (its errors on stderr,
-- its info lines on stdout; the time an info line ends with is 0 here).
function M.script(m, text)
  local out, err = {}, {}
  local specs = {}
  for line in (text .. "\n"):gmatch("([^\n]*)\n") do
    local w = words(line)
    local cmd = w[1]
    if cmd == "quit" or cmd == "q" then
      break
    elseif cmd == "match" or cmd == "m" then
      if #w ~= 3 then
        err[#err + 1] = "ERROR: malformed command\n"
      elseif w[2] == "without_allocating" or w[2] == "without_allocating_future" then
        err[#err + 1] = ("ERROR: fluence match does not support match %s\n"):format(w[2])
      elseif not SUBCMDS[w[2]] then
        err[#err + 1] = "ERROR: unknown subcmd " .. w[2] .. "\n"
      else
        local op, file = w[2], w[3]
        local js = sys.read_file(file)
        if not js then
          err[#err + 1] = "ERROR: can't open " .. file .. "\n"
        else
          local r = m:run(op, js)
          err[#err + 1] = r.stderr
          out[#out + 1] = r.text
          if r.ok then specs[r.jobid] = file end
        end
      end
    elseif cmd == "cancel" or cmd == "c" then
      if #w < 2 or #w > 3 then
        err[#err + 1] = "ERROR: malformed command\n"
      else
        local id = strtoll(w[2])
        local ok, pre, post = m:cancel(id)
        if not ok then
          err[#err + 1] = ("cancel: ERROR: nonexistent job %u\n"):format(id)
        elseif w[3] == "stats" and m:backend() == "builtin" then
          out[#out + 1] = ('INFO: =============================\nINFO: CANCEL PREORDER COUNT="%d"\n' ..
                           'INFO: CANCEL POSTORDER COUNT="%d"\nINFO: =============================\n'):format(pre, post)
        elseif w[3] == "stats" then
          err[#err + 1] = "ERROR: cancel stats: Fluxion's library does not tell its cancel's visit counts\n"
        end
      end
    elseif cmd == "info" or cmd == "i" then
      if #w ~= 2 then
        err[#err + 1] = "ERROR: malformed command\n"
      else
        local id = strtoll(w[2])
        local info = m:info(id)
        if not info then
          err[#err + 1] = ("info: ERROR: nonexistent job %u\n"):format(id)
        else
          err[#err + 1] = ("INFO: %u, %s, %d, %s, 0\n"):format(id, info.state, info.at, specs[id] or "")
        end
      end
    elseif cmd and UNSUPPORTED[cmd] then
      err[#err + 1] = ("ERROR: fluence match does not support resource-query's %s command\n"):format(cmd)
    end
  end
  return table.concat(out), table.concat(err)
end

-- A graph's names and a jobspec's strings are not ours: on a terminal
-- stdout shows them escaped as every message is (sys.escape; stderr is
-- always escaped by sys.write), a file or a pipe gets resource-query's bytes.
local function for_stdout(text)
  if not sys.isatty(1) then return text end
  return sys.escape(text, true)
end

-- Which matcher runs, for -v (here and for fits): Fluxion's own library
-- (FLUENCE_FLUXION_LIB, with its path) or the built-in one.  m: a matcher
-- made already (else: the one that would be made).
function M.describe(m)
  if (m and m:backend() == "fluxion") or (not m and match.fluxion_lib()) then
    return ("Fluxion's library %s (FLUENCE_FLUXION_LIB)"):format(sys.escape(tostring(match.fluxion_lib())))
  end
  return "the built-in matcher (Fluxion v0.54's traversal, in C; FLUENCE_FLUXION_LIB unset)"
end

function M.run(args)
  local opts = args.opts or {}
  local graph = one(opts.graph)
  if not graph then errors.raise("USAGE", "match: --graph GRAPH.json is required") end
  local format = one(opts.format) or "simple"
  if not FORMATS[format] then
    errors.raise("USAGE", "match: --format must be simple, rv1, rv1_nosched or jgf (got %s)", format)
  end
  local policy = one(opts.policy) or "first"
  local g, gerr = match.load_jgf_file(graph)
  if not g then errors.raise("INPUT", "%s", gerr) end
  local m, merr = match.new(g, { policy = policy, format = format })
  -- Fluxion refusing the graph is bad input; a bad policy or library is usage
  if not m then errors.raise(merr:find("^Fluxion: ") and "INPUT" or "USAGE", "match: %s", merr) end
  require("fluence.log").v(1, "match: %s, policy %s, format %s", M.describe(m), sys.escape(policy), format)
  local script
  local positional = args.positional or {}
  if #positional > 0 then
    local lines = {}
    for _, f in ipairs(positional) do lines[#lines + 1] = "match allocate " .. f end
    script = table.concat(lines, "\n")
  else
    local text, rerr = sys.read_file("-")
    if not text then errors.raise("INPUT", "%s", rerr) end
    script = text
  end
  local out, err = M.script(m, script)
  if err ~= "" then sys.write(2, err) end
  sys.write(1, for_stdout(out))
  return sys.EXIT.OK
end

return M
