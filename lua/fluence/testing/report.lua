-- What `fluence test` prints: the results of every spec and case as text (a
-- line per failure, then "N passed, M failed"), JUnit XML or TAP.
--
--   report.text(results, verbose) / report.junit(results) / report.tap(results) -> text
--   report.summary(results) -> "N passed, M failed" (", K pending" before it when some are)
-- results: { {file =, line =, name =, status = "pass" | "fail" | "pending", message =, time =}, ... }
local report = {}

local function count(results)
  local n = { pass = 0, fail = 0, pending = 0 }
  for _, r in ipairs(results) do n[r.status] = n[r.status] + 1 end
  return n
end

function report.summary(results)
  local n = count(results)
  return ("%d passed, %d failed"):format(n.pass, n.fail)
end

local function first_line(s) return (tostring(s or ""):match("^[^\n]*")) end

local function where(r) return ("%s:%d"):format(r.file, r.line or 0) end

-- One line per failure (and, verbose, every test and the whole message).
function report.text(results, verbose)
  local out = {}
  for _, r in ipairs(results) do
    if r.status == "fail" then
      out[#out + 1] = ("%s: %s: %s"):format(where(r), r.name, first_line(r.message))
      if verbose then
        for l in tostring(r.message or ""):gmatch("\n([^\n]*)") do out[#out + 1] = "    " .. l end
      end
    elseif r.status == "pending" then
      out[#out + 1] = ("%s: %s: pending%s"):format(where(r), r.name,
                                                   r.message and (": " .. first_line(r.message)) or "")
    elseif verbose then
      out[#out + 1] = ("%s: %s: ok (%.0f ms)"):format(where(r), r.name, (r.time or 0) * 1000)
    end
  end
  out[#out + 1] = report.summary(results)
  return table.concat(out, "\n") .. "\n"
end

-- XML 1.0 text: the five escapes; characters XML cannot hold at all become
-- U+FFFD (a plugin's error may quote any byte).
local function xml(s)
  s = tostring(s or "")
  s = s:gsub("[%z\1-\8\11\12\14-\31\127]", "\239\191\189")
  if not utf8.len(s) then                 -- invalid UTF-8: keep the ASCII
    s = s:gsub("[\128-\255]", "?")
  end
  return (s:gsub("[&<>\"']", { ["&"] = "&amp;", ["<"] = "&lt;", [">"] = "&gt;", ['"'] = "&quot;",
                                ["'"] = "&apos;" }))
end

-- JUnit XML, one testsuite per file and one testcase per spec or case; a
-- failure element carries FILE:LINE and the whole message.
function report.junit(results)
  local files, by = {}, {}
  for _, r in ipairs(results) do
    if not by[r.file] then by[r.file] = {}; files[#files + 1] = r.file end
    table.insert(by[r.file], r)
  end
  local n = count(results)
  local total = 0
  for _, r in ipairs(results) do total = total + (r.time or 0) end
  local out = { '<?xml version="1.0" encoding="UTF-8"?>',
                ('<testsuites name="fluence test" tests="%d" failures="%d" errors="0" skipped="%d" time="%.6f">')
                  :format(#results, n.fail, n.pending, total) }
  for _, file in ipairs(files) do
    local list, c, t = by[file], count(by[file]), 0
    for _, r in ipairs(list) do t = t + (r.time or 0) end
    out[#out + 1] = ('  <testsuite name="%s" tests="%d" failures="%d" errors="0" skipped="%d" time="%.6f">')
                      :format(xml(file), #list, c.fail, c.pending, t)
    for _, r in ipairs(list) do
      local head = ('    <testcase classname="%s" name="%s" file="%s" line="%d" time="%.6f"')
                     :format(xml(file), xml(r.name), xml(file), r.line or 0, r.time or 0)
      if r.status == "pass" then
        out[#out + 1] = head .. "/>"
      elseif r.status == "pending" then
        out[#out + 1] = head .. ">"
        out[#out + 1] = ('      <skipped message="%s"/>'):format(xml(r.message or "pending"))
        out[#out + 1] = "    </testcase>"
      else
        out[#out + 1] = head .. ">"
        out[#out + 1] = ('      <failure message="%s" type="failure">%s: %s</failure>')
                          :format(xml(first_line(r.message)), xml(where(r)), xml(r.message))
        out[#out + 1] = "    </testcase>"
      end
    end
    out[#out + 1] = "  </testsuite>"
  end
  out[#out + 1] = "</testsuites>"
  return table.concat(out, "\n") .. "\n"
end

-- TAP version 13: "ok N - FILE: NAME", failures with a YAML block (message,
-- at), pending tests as "# SKIP"; the summary as the last comment.
function report.tap(results)
  local out = { "TAP version 13", ("1..%d"):format(#results) }
  for i, r in ipairs(results) do
    local desc = (("%s: %s"):format(r.file, r.name)):gsub("#", "\\#"):gsub("\n", " ")
    if r.status == "pass" then
      out[#out + 1] = ("ok %d - %s"):format(i, desc)
    elseif r.status == "pending" then
      out[#out + 1] = ("ok %d - %s # SKIP %s"):format(i, desc, first_line(r.message or "pending"))
    else
      out[#out + 1] = ("not ok %d - %s"):format(i, desc)
      out[#out + 1] = "  ---"
      out[#out + 1] = ("  message: %q"):format(first_line(r.message)):gsub("\\\n", "\\n")
      out[#out + 1] = ("  at: %q"):format(where(r))
      out[#out + 1] = "  ..."
    end
  end
  out[#out + 1] = "# " .. report.summary(results)
  return table.concat(out, "\n") .. "\n"
end

return report
