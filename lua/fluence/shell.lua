-- Words for a shell: the one quoting of everything fluence prints for a
-- user to paste into a shell (the kubectl commands of its hints, a command
-- to run again) and of the words in its completion scripts.
--
--   shell.quote(s) -> word        s as one shell word, meaning exactly s
--   shell.command(words) -> text  the words quoted and joined by spaces
--
-- A word of plain characters stays as it is (kubectl delete job.batch/x);
-- anything else is single-quoted, which the shell takes literally.  Text
-- that would reach the terminal as something else (control characters, a
-- newline, an escape sequence, invisible format characters, bytes that are
-- not UTF-8: a context name can hold anything) is written $'...' with each
-- such byte as \xHH, so printing the command cannot repaint the terminal or
-- forge a line, and the shell (bash, zsh, ksh, busybox sh) still gets the
-- same bytes back.
local sys = require "fluence.sys"

local M = {}

-- '=' leads zsh's =cmd expansion: not plain at the start
local PLAIN = "^[%w@%%+=:,./_-]+$"

function M.quote(s)
  s = tostring(s)
  if s:match(PLAIN) and s:sub(1, 1) ~= "=" then return s end
  if sys.escape(s) == s then return "'" .. s:gsub("'", [['\'']]) .. "'" end
  local body = s:gsub("[^ -&(-%[%]-~]", function(c) return ("\\x%02x"):format(c:byte()) end)
  return "$'" .. body .. "'"
end

function M.command(words)
  local out = {}
  for i, w in ipairs(words) do out[i] = M.quote(w) end
  return table.concat(out, " ")
end

return M
