-- `fluence test --coverage`: which lines of each plugin file the tests ran,
-- as luacov and `opa test --coverage` report it.
--
--   coverage.start()                 count the lines plugins run from now on
--                                    (sandbox.on_line: every plugin call goes
--                                    through sandbox.call)
--   coverage.stop()
--   coverage.report(files) -> { files = { {path, lines, hit, missed = {n...},
--                                          error = msg|nil}, ... },
--                               lines =, hit =, percent = }
--     files: plugin paths; each one's executable lines are those holding an
--     instruction of its compiled code (every nested function's, read from
--     string.dump: the lines a line hook can see), so a file no test loaded
--     counts in full as missed.
--   coverage.text(rep) -> the table printed after the test summary
local sandbox = require "fluence.sandbox"
local sys = require "fluence.sys"

local coverage = {}

local hits = {}          -- normalised path -> { [line] = true }

local function normalise(path)
  path = path:gsub("/+", "/")
  while path:sub(1, 2) == "./" do path = path:sub(3) end
  return path
end

function coverage.start()
  hits = {}
  local seen = {}        -- chunk source -> its line set (one lookup a line)
  sandbox.on_line = function(source, line)
    local set = seen[source]
    if not set then
      if source:sub(1, 1) ~= "@" then return end
      local key = normalise(source:sub(2))
      set = hits[key] or {}
      hits[key] = set
      seen[source] = set
    end
    set[line] = true
  end
end

function coverage.stop() sandbox.on_line = nil end

------------------------------------------------------------------------------
-- The lines with instructions, from a Lua 5.4 binary chunk (ldump.c):
-- every function prototype's line info, nested ones included.

local function reader(s)
  local pos = 1
  local r = {}
  function r.byte()
    local b = s:byte(pos)
    if not b then error("truncated chunk", 0) end
    pos = pos + 1
    return b
  end
  function r.skip(n) pos = pos + n end
  function r.size()                       -- dumpSize: 7 bits a byte, last has 0x80
    local x = 0
    repeat
      local b = r.byte()
      x = x * 128 + (b & 0x7f)
    until b & 0x80 ~= 0
    return x
  end
  function r.string()
    local n = r.size()
    if n > 0 then r.skip(n - 1) end
  end
  function r.signed()
    local b = r.byte()
    return b >= 128 and b - 256 or b
  end
  return r
end

local VARARG_LINE_SKIPPED = true   -- a vararg function's first instruction (VARARGPREP) has no line event

local function proto(r, lines)
  r.string()                                      -- source
  local linedefined = r.size()
  r.size()                                        -- lastlinedefined
  r.byte()                                        -- numparams
  local is_vararg = r.byte() ~= 0
  r.byte()                                        -- maxstacksize
  r.skip(r.size() * 4)                            -- code
  for _ = 1, r.size() do                          -- constants
    local t = r.byte()
    if t == 3 or t == 19 then r.skip(8)           -- integer, float
    elseif t == 4 or t == 20 then r.string() end  -- strings; nil, false, true: nothing
  end
  r.skip(r.size() * 3)                            -- upvalues: instack, idx, kind
  for _ = 1, r.size() do proto(r, lines) end      -- nested functions
  local n = r.size()
  local deltas = {}
  for i = 1, n do deltas[i] = r.signed() end
  local abs = {}
  for _ = 1, r.size() do
    local pc = r.size()
    abs[pc] = r.size()
  end
  local line = linedefined
  for pc = 0, n - 1 do
    local d = deltas[pc + 1]
    if d == -128 then line = abs[pc] else line = line + d end
    if line > 0 and not (pc == 0 and is_vararg and VARARG_LINE_SKIPPED) then lines[line] = true end
  end
  for _ = 1, r.size() do r.string(); r.size(); r.size() end   -- local variables
  for _ = 1, r.size() do r.string() end                       -- upvalue names
end

-- The executable lines of a Lua source, or nil and why not.
function coverage.executable_lines(text, name)
  local f, err = load(text, "@" .. name, "t", {})
  if not f then return nil, err end
  local chunk = string.dump(f)
  local r = reader(chunk)
  r.skip(4 + 1 + 1 + 6 + 3 + 8 + 8)               -- signature ... LUAC_NUM
  r.byte()                                        -- the main function's upvalue count
  local lines = {}
  local ok, perr = pcall(proto, r, lines)
  if not ok then return nil, "cannot read its compiled code: " .. tostring(perr) end
  return lines
end

------------------------------------------------------------------------------

function coverage.report(files)
  local rep = { files = {}, lines = 0, hit = 0 }
  for _, path in ipairs(files) do
    local entry = { path = path, lines = 0, hit = 0, missed = {} }
    local text, err = sys.read_file(path)
    local lines
    if text then lines, err = coverage.executable_lines(text, path) end
    if not lines then
      entry.error = err
    else
      local ran = hits[normalise(path)] or {}
      local sorted = {}
      for l in pairs(lines) do sorted[#sorted + 1] = l end
      table.sort(sorted)
      for _, l in ipairs(sorted) do
        entry.lines = entry.lines + 1
        if ran[l] then entry.hit = entry.hit + 1 else entry.missed[#entry.missed + 1] = l end
      end
      rep.lines, rep.hit = rep.lines + entry.lines, rep.hit + entry.hit
    end
    rep.files[#rep.files + 1] = entry
  end
  rep.percent = rep.lines > 0 and 100 * rep.hit / rep.lines or 100
  return rep
end

-- "3-5, 9" for {3, 4, 5, 9}
local function ranges(list)
  local out, i = {}, 1
  while i <= #list do
    local j = i
    while j < #list and list[j + 1] == list[j] + 1 do j = j + 1 end
    out[#out + 1] = i == j and tostring(list[i]) or (list[i] .. "-" .. list[j])
    i = j + 1
  end
  return table.concat(out, ", ")
end

local function pct(hit, lines) return lines > 0 and 100 * hit / lines or 100 end

function coverage.text(rep)
  local width = #"total"
  for _, f in ipairs(rep.files) do width = math.max(width, #f.path) end
  local out = { ("%-" .. width .. "s  %5s  %5s  %6s  %s\n"):format("coverage", "lines", "ran", "", "missed") }
  for _, f in ipairs(rep.files) do
    local path = sys.escape(f.path)
    if f.error then
      out[#out + 1] = ("%-" .. width .. "s  %s\n"):format(path, "not measured: " .. sys.escape(tostring(f.error)))
    else
      out[#out + 1] = ("%-" .. width .. "s  %5d  %5d  %5.1f%%  %s\n"):format(path, f.lines, f.hit,
        pct(f.hit, f.lines), ranges(f.missed))
    end
  end
  out[#out + 1] = ("%-" .. width .. "s  %5d  %5d  %5.1f%%\n"):format("total", rep.lines, rep.hit, rep.percent)
  return table.concat(out)
end

return coverage
