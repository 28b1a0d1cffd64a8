-- Located messages, made in one place.  A location travels as data -- its
-- file, line, column and message -- until something shows it: render()
-- makes the text a terminal gets ("FILE:LINE:COL: message", the source line
-- and a caret under the column), fields() what `check -o json` reports.  A
-- message is never parsed back for its place.
--
--   location.in_text(file, text, line, column, message)  in a text held as a string
--   location.in_stream(stream, byte, message)            at byte of a manifest stream
--   location.at(file, line, column [, message])          a place (and what is said there)
--   location.within(at, head, inner)  inner (its own place and excerpt) said
--       at `at`: "AT: HEAD" then inner, as a policy text that cannot be
--       mapped into its file is pointed into at the object's place
--   location.policy{...}  a byte of a policy text, at the file's own line and
--       column when its source maps it (see below)
--   location.render(loc) -> text;  location.fields(loc) -> {file, line, column, message}
--   location.error(kind, loc) -> a structured error (fluence.errors) carrying .location
local sys = require "fluence.sys"
local errors = require "fluence.errors"

local M = {}

function M.in_text(file, text, line, column, message)
  return { file = file, line = line, column = column, message = message, text = text }
end

function M.in_stream(stream, byte, message)
  local file, line, column = stream:position(byte)
  return { file = file, line = line, column = column, message = message, stream = stream, byte = byte }
end

function M.at(file, line, column, message)
  return { file = file, line = line, column = column, message = message }
end

function M.within(at, head, inner)
  return { file = at.file, line = at.line, column = at.column, message = head, inner = inner }
end

-- "FILE:LINE:COL" (or less, when the line or column is unknown), escaped:
-- one line whatever a file name holds.
local function place(loc)
  local p = sys.escape(loc.file or "?")
  if loc.line then
    p = p .. ":" .. loc.line
    if loc.column then p = p .. ":" .. loc.column end
  end
  return p
end

-- The one line that says where and what, without the excerpt.
local function one_line(loc)
  local msg = loc.message or ""
  if loc.inner then msg = msg .. one_line(loc.inner) end
  return place(loc) .. ": " .. msg
end

function M.render(loc)
  if loc.inner then return place(loc) .. ": " .. sys.escape(loc.message or "") .. M.render(loc.inner) end
  if loc.stream then return loc.stream:locate(loc.byte, loc.message) end
  if loc.text and loc.line then return sys.locate(loc.file, loc.text, loc.line, loc.column or 0, loc.message) end
  return place(loc) .. ": " .. sys.escape(loc.message or "")
end

function M.fields(loc)
  local msg = loc.message or ""
  if loc.inner then msg = msg .. one_line(loc.inner) end
  return { file = loc.file, line = loc.line, column = loc.column, message = msg }
end

function M.error(kind, loc)
  local e = errors.new(kind, M.render(loc))
  e.location = loc
  return e
end

-- A message about byte pos of a policy text (the text of a select-policy
-- annotation, a test case's policy, a `fluence run` file's pipeline):
--   p.source   where the text is written (fluence.policy_source), or nil
--   p.text, p.name   the policy text, and what it is called when the
--              message points into it ("select-policy")
--   p.pos, p.message   the byte (clamped into the text) and the message
--   p.at, p.head   the object's place (location.at) and what the message
--              says first ("Job/train: ")
-- With a source that maps the text: at the byte's own line and column in
-- the file -- the manifest's, head first; a policy file's, said at the
-- object.  Else at the value's place (or the object's), pointing into the
-- policy text.
function M.policy(p)
  local src, head = p.source, p.head or ""
  local pos = math.max(1, math.min(p.pos, #p.text + 1))
  if src and src.map then
    local inner = src:location(pos, src.same_file and head .. p.message or p.message)
    if inner and src.same_file then return inner end
    if inner then return M.within(p.at, head, inner) end
  end
  local line, col = require("fluence.grammar").linecol(p.text, pos)
  return M.within(src and src.at or p.at, head, M.in_text(p.name, p.text, line, col, p.message))
end

return M
