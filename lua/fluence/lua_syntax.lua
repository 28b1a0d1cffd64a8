-- A Lua syntax error, located as policy errors are: "PATH:LINE:COL: message",
-- the source line and a caret under the token the parser stopped at.
--
--   lua_syntax.location(name, src, err) -> its location (fluence.location),
--     or nil when err is not a syntax error of src named name ("@"..name chunk)
--   lua_syntax.locate(name, src, err) -> the located message, or err as it was
--
-- Lua reports a line, not a column, and names the token ("near '='").  That
-- token may stand several times on the line: the one the parser stopped at
-- is the first whose text, cut right after it, already gives the same
-- error -- the parser reads left to right, and the tokens before it parsed.
local location = require "fluence.location"

local M = {}

local function lines_of(src)
  local lines = {}
  for l in (src .. "\n"):gmatch("([^\n]*)\n") do lines[#lines + 1] = l end
  return lines
end

-- The error message load gives for src (nil when it compiles).
local function syntax_error(src, name)
  local f, err = load(src, "@" .. name, "t", {})
  if f then return nil end
  return err
end

function M.location(name, src, err)
  err = tostring(err)
  local prefix = name .. ":"
  if err:sub(1, #prefix) ~= prefix then return nil end
  local line, msg = err:sub(#prefix + 1):match("^(%d+): (.*)$")
  line = tonumber(line)
  if not line then return nil end
  local lines = lines_of(src)
  local text = lines[line]
  if not text then return nil end
  local col
  local token = msg:match("near '(.*)'$")
  if msg:match("near <eof>$") then
    -- the end of the file: after the last line that holds something
    while line > 1 and not text:find("%S") do
      line = line - 1
      text = lines[line]
    end
    col = #text + 1
  elseif token then
    local before = table.concat(lines, "\n", 1, line - 1) .. (line > 1 and "\n" or "")
    local from, first, count = 1, nil, 0
    while true do
      local s, e = text:find(token, from, true)
      if not s then break end
      first, count = first or s, count + 1
      if syntax_error(before .. text:sub(1, e), name) == err then col = s break end
      from = s + 1
    end
    -- a token the cut changes (an unfinished string): where it stands, if once
    if not col and count == 1 then col = first end
  end
  if not col then return nil end
  return location.in_text(name, src, line, col, msg)
end

function M.locate(name, src, err)
  local loc = M.location(name, src, err)
  return loc and location.render(loc) or tostring(err)
end

return M
