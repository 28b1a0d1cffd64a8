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

-- Runs a command script; returns the -t text and the stderr text.
function M.script(m, text)
  local out, err = {}, {}
  local specs = {}
  for line in (text .. "\n"):gmatch("([^\n]*)\n") do
    local w = words(line)
    local cmd = w[1]
    if not cmd or cmd:sub(1, 1) == "#" then
      -- blank line or comment
    elseif cmd == "quit" or cmd == "q" then
      break
    elseif cmd == "match" or cmd == "m" then
      if #w ~= 3 then
        err[#err + 1] = "ERROR: malformed command\n"
      else
        local op, file = w[2], w[3]
        if op ~= "allocate" and op ~= "allocate_orelse_reserve" and
           op ~= "allocate_with_satisfiability" and op ~= "satisfiability" then
          err[#err + 1] = "ERROR: unknown subcmd " .. op .. "\n"
        else
          local js = sys.read_file(file)
          if not js then
            err[#err + 1] = "ERROR: can't open " .. file .. "\n"
          else
            local r = m:run(op, js, file)
            if r.error then
              local e = r.error:find("^match_allocate") and r.error or "match_allocate: ERROR: " .. r.error
              err[#err + 1] = e .. "\n"
            end
            out[#out + 1] = r.text
            if r.ok then specs[r.jobid] = file end
          end
        end
      end
    elseif cmd == "cancel" or cmd == "c" then
      local id = tonumber(w[2] or "")
      if #w < 2 or #w > 3 then
        err[#err + 1] = "ERROR: malformed command\n"
      else
        local ok = id and m:cancel(math.tointeger(id) or -1)
        if not ok then err[#err + 1] = ("ERROR: nonexistent job %s\n"):format(w[2]) end
      end
    elseif cmd == "info" or cmd == "i" then
      local id = math.tointeger(tonumber(w[2] or "") or -1)
      local info = id and m:info(id)
      if #w ~= 2 then
        err[#err + 1] = "ERROR: malformed command\n"
      elseif not info then
        err[#err + 1] = ("ERROR: jobid doesn't exist: %s\n"):format(w[2])
      else
        err[#err + 1] = ("INFO: %d, %s, %d, %s, 0\n"):format(id, info.state, info.at, specs[id] or "")
      end
    else
      err[#err + 1] = "ERROR: unknown command: " .. cmd .. "\n"
    end
  end
  return table.concat(out), table.concat(err)
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
  sys.write(1, out)
  return sys.EXIT.OK
end

return M
