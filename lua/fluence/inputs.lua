-- Gathering the manifests named by -f: files, directories, "-" for stdin.
--
--   inputs.read(filenames, recursive) -> { { name = display_name, text = bytes }, ... }
--     text: what manifest.read returns (manifest.parse takes it; #text is its
--     length, tostring(text) the bytes as a Lua string)
--   inputs.join(texts) -> one stream (kubectl's way of concatenating files)
--   inputs.write(fd, items) -> true | nil, message: join's text, written to fd
--                              (items may be manifest streams, rendered late)
--
-- Directories contribute their *.yaml, *.yml and *.json entries in sorted
-- order; subdirectories only with recursive (-R).  Stdin may be named once.
-- Any problem is an INPUT error naming the path.
--
-- While recursing, a symbolic link to a directory is not followed (as
-- kubectl's -R does not): a link to itself or a parent would loop.  A
-- directory named with -f is read even when it is a link.  A file found in
-- a directory is read once, however many names lead to it (a link to a file
-- in the same tree, or to one named with -f); files named with -f are read
-- as named.
local sys = require "fluence.sys"
local errors = require "fluence.errors"
local manifest = require "fluence.manifest"
local logger = require "fluence.log"

local inputs = {}

local EXTENSIONS = { yaml = true, yml = true, json = true }

local function manifest_name(name)
  local ext = name:match("%.([^.]+)$")
  return ext and EXTENSIONS[ext:lower()] or false
end

local function join_path(dir, name)
  if dir:sub(-1) == "/" then return dir .. name end
  return dir .. "/" .. name
end

-- A file's bytes stay out of the Lua heap (manifest.read): no second copy
-- of a 100 MB stream while reading it, and far fewer page faults.
local function read_one(path, display, out)
  local text, err = manifest.read(path)
  if not text then errors.raise("INPUT", "cannot read %s", err or display) end
  out[#out + 1] = { name = display, text = text }
end

-- seen: identities of the files read so far (sys.kind), so each is read once
local function read_dir(dir, recursive, out, depth, seen)
  if depth > 64 then errors.raise("INPUT", "%s: directories nested more than 64 deep", dir) end
  local names, err = sys.list_dir(dir)
  if not names then errors.raise("INPUT", "cannot read directory %s", err or dir) end
  local found = 0
  for _, name in ipairs(names) do
    local path = join_path(dir, name)
    local kind, id, link = sys.kind(path)
    if kind == "dir" then
      if recursive and name:sub(1, 1) ~= "." then
        if link then
          logger.v(1, "-R: not following the directory link %s", path)
        else
          found = found + read_dir(path, recursive, out, depth + 1, seen)
        end
      end
    elseif kind == "file" and manifest_name(name) then
      if seen[id] then
        logger.v(1, "%s: already read as %s", path, seen[id])
      else
        seen[id] = path
        read_one(path, path, out)
        found = found + 1
      end
    end
  end
  return found
end

function inputs.read(filenames, recursive)
  if type(filenames) == "string" then filenames = { filenames } end
  if not filenames or #filenames == 0 then
    errors.raise("INPUT", "no manifests given (use -f FILE, -f DIRECTORY or -f - for stdin)")
  end
  local out, stdin_used, seen = {}, false, {}
  for _, f in ipairs(filenames) do
    if f == "-" then
      if stdin_used then errors.raise("INPUT", "-f -: standard input can be read only once") end
      stdin_used = true
      read_one("-", "-", out)
    else
      local kind, id = sys.kind(f)
      if kind == nil then
        errors.raise("INPUT", "%s: no such file or directory", f)
      elseif kind == "dir" then
        if read_dir(f, recursive, out, 0, seen) == 0 then
          errors.raise("INPUT", "%s: no manifests found (*.yaml, *.yml, *.json%s)", f,
                       recursive and "" or "; use -R to search subdirectories")
        end
      else
        seen[id] = seen[id] or f
        read_one(f, f, out)
      end
    end
  end
  return out
end

-- Does the text end inside an unterminated last line?  Then a separator
-- needs a newline first.
local function ends_with_newline(text)
  return text == "" or text:sub(-1) == "\n"
end

-- Position of the first byte that is not blank or part of a comment line.
local function skip_comments(text)
  local pos = 1
  while true do
    local p = text:match("^[ \t\r\n]*()", pos)
    if text:sub(p, p) ~= "#" then return p end
    pos = text:match("^[^\n]*\n?()", p)
    if pos > #text then return pos end
  end
end

-- The text of one item: a string, a text, { text = ... }, or a manifest
-- stream (rendered now, with its edits).
local function text_of(item)
  if type(item) == "table" then item = item.text end
  if type(item) == "userdata" then
    if item.render then return item:render() end
    return tostring(item)              -- a text from manifest.read
  end
  return item
end

-- Calls emit(part) for each part of the joined stream, in order.  Each text
-- after the first starts a new document ("---") unless it already begins
-- with one, so documents never merge; a file ending in "..." or a JSON file
-- needs the same separator.  A leading UTF-8 BOM is only valid at the very
-- start: later ones are dropped.  One item's text is made (a stream
-- rendered) only when its turn comes, and dropped after.
local function each_part(items, emit)
  local prev_nl = nil
  for i, item in ipairs(items) do
    local text = text_of(item)
    if i > 1 then
      if text:sub(1, 3) == "\239\187\191" then text = text:sub(4) end
      if not prev_nl then emit("\n") end
      local crlf = text:find("\r\n", 1, true) ~= nil
      local nl = crlf and "\r\n" or "\n"
      local first = skip_comments(text)
      if text:sub(first, first) == "%" then
        -- directives are only allowed once the previous document is closed
        emit("..." .. nl)
      elseif not (text:match("^%-%-%-[ \t\r\n]", first) or text:match("^%-%-%-$", first)) then
        emit("---" .. nl)
      end
    end
    emit(text)
    prev_nl = ends_with_newline(text)
  end
end

-- Concatenates texts (see each_part) into one YAML stream.
function inputs.join(texts)
  local parts = {}
  each_part(texts, function(p) parts[#parts + 1] = p end)
  return table.concat(parts)
end

-- Writes what join(items) returns to fd (1 or 2) without building it: a
-- lone manifest stream writes itself straight from its text and edits (no
-- copy of the stream in memory); otherwise part by part.
-- Returns true | nil, message.
function inputs.write(fd, items)
  if #items == 1 and type(items[1]) == "userdata" then return items[1]:write(fd) end
  local ok, err = true, nil
  each_part(items, function(p)
    if ok then ok, err = sys.write(fd, p) end
  end)
  return ok, err
end

return inputs
