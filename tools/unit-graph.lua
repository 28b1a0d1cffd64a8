-- The call and include graph between the C units of core/, derived from the
-- sources, and the structure rules it must keep (docs/architecture.md):
--
--   1. no circle: no unit reaches itself through calls and includes;
--   2. one header per unit: X.h declares what X.c defines and nothing else
--      (a header without a .c of its own holds types, macros and the tables
--      the build generates, no functions), so no header serves a family;
--   3. what a unit uses from another is declared in that unit's own header;
--   4. a file is named after the module it opens: luaopen_fluence_NAME is
--      defined in NAME.c.
--
--   lua5.4 tools/unit-graph.lua [DIR]          print the graph (A -> B: what A uses of B)
--   lua5.4 tools/unit-graph.lua --dot [DIR]    the same for graphviz
--   lua5.4 tools/unit-graph.lua --check [DIR]  print what breaks a rule; exit 1 if any
--
-- A unit is X.c with its X.h.  An edge A -> B: A calls (or reads) something
-- B.c defines and exports, or includes B.h.  The C is read as tokens, not
-- compiled: comments, strings and character literals are dropped, a
-- definition is a top-level declaration outside any braces, static ones are
-- the unit's own.  spec/unit_graph_spec.lua runs --check on core/.
local mode, dir = "print", nil
for _, a in ipairs(arg) do
  if a == "--dot" or a == "--check" then mode = a:sub(3)
  elseif a:sub(1, 1) == "-" then io.stderr:write("unit-graph: unknown option " .. a .. "\n") os.exit(2)
  else dir = a end
end
dir = dir or ((arg[0]:match("^(.*)/tools/[^/]*$") or ".") .. "/core")

local function read(path)
  local f = io.open(path, "rb")
  if not f then return nil end
  local s = f:read("a")
  f:close()
  return s
end

local function list(d)
  local p = assert(io.popen(("ls -1 '%s' 2>/dev/null"):format(d:gsub("'", "'\\''"))))
  local names = {}
  for n in p:lines() do names[#names + 1] = n end
  p:close()
  table.sort(names)
  return names
end

local KEYWORDS = {}
for w in ([[auto break case char const continue default do double else enum extern float for goto if
  inline int long register restrict return short signed sizeof static struct switch typedef union unsigned
  void volatile while _Bool _Static_assert __attribute__ __inline__ __restrict__ __typeof__ typeof
  _Noreturn _Thread_local]]):gmatch("%S+") do KEYWORDS[w] = true end

-- The tokens of a C text (identifiers and single punctuation characters),
-- its quoted includes, and the identifiers of its other directives (a macro
-- body uses what it names).
local function lex(text)
  local toks, includes, macro_uses = {}, {}, {}
  local i, n = 1, #text
  local bol = true                     -- at the beginning of a line (but blanks)
  while i <= n do
    local c = text:sub(i, i)
    if c == "\n" then bol = true; i = i + 1
    elseif c:match("%s") then i = i + 1
    elseif c == "#" and bol then
      -- a directive, up to an unescaped end of line
      local j = i
      repeat
        local e = text:find("\n", j, true) or n + 1
        local cont = text:sub(e - 1, e - 1) == "\\"
        j = e + 1
      until not cont or j > n
      local line = text:sub(i, j - 1):gsub("/%*.-%*/", " "):gsub("//[^\n]*", "")
      local inc = line:match('^#%s*include%s*"([^"]+)"')
      if inc then includes[#includes + 1] = inc
      elseif not line:match("^#%s*include") then
        for w in line:gsub('"[^"\n]*"', ""):gmatch("[%a_][%w_]*") do macro_uses[w] = true end
      end
      i = j
    elseif text:sub(i, i + 1) == "/*" then
      local e = text:find("*/", i + 2, true)
      i = e and e + 2 or n + 1
    elseif text:sub(i, i + 1) == "//" then
      i = (text:find("\n", i, true) or n + 1)
    elseif c == '"' or c == "'" then
      local j = i + 1
      while j <= n do
        local d = text:sub(j, j)
        if d == "\\" then j = j + 2
        elseif d == c or d == "\n" then break
        else j = j + 1 end
      end
      toks[#toks + 1] = c == '"' and "<string>" or "<char>"
      i = j + 1
      bol = false
    elseif c:match("[%a_]") then
      local w = text:match("^[%a_][%w_]*", i)
      toks[#toks + 1] = w
      i = i + #w
      bol = false
    elseif c:match("%d") then
      local w = text:match("^[%w_.]+", i)
      toks[#toks + 1] = "<number>"
      i = i + #w
      bol = false
    else
      toks[#toks + 1] = c
      i = i + 1
      bol = false
    end
  end
  return toks, includes, macro_uses
end

local OPEN, CLOSE = { ["("] = ")", ["["] = "]", ["{"] = "}" }, { [")"] = true, ["]"] = true, ["}"] = true }

-- The top-level declarations of a token list: for each, its name, whether
-- it is a definition (a function body or a variable without extern), a
-- function, static.  Types (typedef, a bare struct) declare no name here.
local function declarations(toks)
  local decls = {}
  local stmt, depth = {}, 0
  local function finish(body)
    local s = stmt
    stmt = {}
    if #s == 0 then return end
    local flags = {}
    for _, t in ipairs(s) do if t.depth == 0 then flags[t.tok] = true end end
    if flags.typedef then return end
    local name, func
    for k, t in ipairs(s) do
      if t.depth == 0 and t.tok == "(" then
        local prev = s[k - 1]
        if prev and prev.tok:match("^[%a_][%w_]*$") and not KEYWORDS[prev.tok] then name, func = prev.tok, true end
        break
      end
      if t.depth == 0 and (t.tok == "=" or t.tok == "[" or t.tok == ";" or t.tok == ",") then
        local prev, before = s[k - 1], s[k - 2]
        if prev and prev.tok:match("^[%a_][%w_]*$") and not KEYWORDS[prev.tok] and
           not (before and (before.tok == "struct" or before.tok == "union" or before.tok == "enum")) then
          name = prev.tok
        end
        break
      end
    end
    if not name then return end
    decls[#decls + 1] = { name = name, func = func, static = flags.static or false,
                          extern = flags.extern or false,
                          definition = body or (not func and not flags.extern) }
  end
  local k = 1
  while k <= #toks do
    local t = toks[k]
    if depth == 0 and t == "{" and #stmt > 0 and stmt[#stmt].tok == ")" then
      -- a function body: skip it whole
      local d = 0
      repeat
        if toks[k] == "{" then d = d + 1 elseif toks[k] == "}" then d = d - 1 end
        k = k + 1
      until d == 0 or k > #toks
      finish(true)
    else
      if depth == 0 and t == ";" then
        stmt[#stmt + 1] = { tok = t, depth = 0 }
        finish(false)
      else
        stmt[#stmt + 1] = { tok = t, depth = depth }
        if OPEN[t] then depth = depth + 1 elseif CLOSE[t] then depth = depth - 1 end
      end
      k = k + 1
    end
  end
  return decls
end

-- ------------------------------------------------------------------ units

local units, order = {}, {}          -- name -> {c =, h =, exports =, uses =, includes =}
local headers = {}                   -- "x.h" -> {decls =, includes =}
for _, f in ipairs(list(dir)) do
  local base, ext = f:match("^(.-)%.([ch])$")
  if base then
    local text = read(dir .. "/" .. f)
    local toks, includes, macro_uses = lex(text)
    if ext == "c" then
      local u = { name = base, exports = {}, statics = {}, uses = macro_uses, includes = includes, luaopen = {} }
      for _, d in ipairs(declarations(toks)) do
        if d.definition then
          if d.static then u.statics[d.name] = true else u.exports[d.name] = true end
          local mod = d.func and d.name:match("^luaopen_fluence_([%w_]+)$")
          if mod and not d.static then u.luaopen[#u.luaopen + 1] = mod end
        end
      end
      for _, t in ipairs(toks) do if t:match("^[%a_]") then u.uses[t] = true end end
      units[base] = u
      order[#order + 1] = base
    else
      local h = { name = f, decls = {}, includes = includes, uses = macro_uses }
      for _, d in ipairs(declarations(toks)) do
        if not d.static then h.decls[#h.decls + 1] = d end
      end
      for _, t in ipairs(toks) do if t:match("^[%a_]") then h.uses[t] = true end end
      headers[f] = h
    end
  end
end

-- every header a unit reaches through its includes (headers include headers)
local function reached(list0)
  local seen, out = {}, {}
  local function walk(l)
    for _, inc in ipairs(l) do
      if not seen[inc] then
        seen[inc] = true
        out[#out + 1] = inc
        if headers[inc] then walk(headers[inc].includes) end
      end
    end
  end
  walk(list0)
  return out
end

local exporter = {}                  -- symbol -> unit
for _, name in ipairs(order) do
  for s in pairs(units[name].exports) do exporter[s] = exporter[s] or name end
end

-- edges[a][b] = {calls = {sym...}, include = bool}
local edges = {}
for _, a in ipairs(order) do
  local u = units[a]
  edges[a] = {}
  local function edge(b)
    edges[a][b] = edges[a][b] or { calls = {}, include = false }
    return edges[a][b]
  end
  for s in pairs(u.uses) do
    local b = exporter[s]
    if b and b ~= a and not u.statics[s] then table.insert(edge(b).calls, s) end
  end
  for _, inc in ipairs(u.includes) do
    local b = inc:match("^(.-)%.h$")
    if b and b ~= a and units[b] then edge(b).include = true end
  end
  for _, e in pairs(edges[a]) do table.sort(e.calls) end
end
-- a paired header's own includes are arrows of its unit too
for hname, h in pairs(headers) do
  local a = hname:match("^(.-)%.h$")
  if units[a] then
    for _, inc in ipairs(reached(h.includes)) do
      local b = inc:match("^(.-)%.h$")
      if b and b ~= a and units[b] then
        edges[a][b] = edges[a][b] or { calls = {}, include = false }
        edges[a][b].include = true
      end
    end
  end
end

local function targets(a)
  local t = {}
  for b in pairs(edges[a]) do t[#t + 1] = b end
  table.sort(t)
  return t
end

-- -------------------------------------------------------------- circles

-- Tarjan's strongly connected components: a component of more than one
-- unit is a circle.
local function circles()
  local index, low, onstack, stack, out, n = {}, {}, {}, {}, {}, 0
  local function visit(v)
    n = n + 1
    index[v], low[v] = n, n
    stack[#stack + 1] = v
    onstack[v] = true
    for _, w in ipairs(targets(v)) do
      if not index[w] then visit(w); low[v] = math.min(low[v], low[w])
      elseif onstack[w] then low[v] = math.min(low[v], index[w]) end
    end
    if low[v] == index[v] then
      local comp = {}
      repeat
        local w = table.remove(stack)
        onstack[w] = false
        comp[#comp + 1] = w
      until w == v
      if #comp > 1 then table.sort(comp); out[#out + 1] = comp end
    end
  end
  for _, v in ipairs(order) do if not index[v] then visit(v) end end
  table.sort(out, function(x, y) return x[1] < y[1] end)
  return out
end

local function why(a, b)
  local e = edges[a][b]
  local parts = {}
  if e.include then parts[#parts + 1] = "includes " .. b .. ".h" end
  if #e.calls > 0 then parts[#parts + 1] = "uses " .. table.concat(e.calls, ", ") end
  return table.concat(parts, "; ")
end

-- ------------------------------------------------------------------ rules

local function check()
  local problems = {}
  local function say(fmt, ...) problems[#problems + 1] = fmt:format(...) end
  for _, comp in ipairs(circles()) do
    local inside = {}
    for _, v in ipairs(comp) do inside[v] = true end
    local arrows = {}
    for _, a in ipairs(comp) do
      for _, b in ipairs(targets(a)) do
        if inside[b] then arrows[#arrows + 1] = ("%s -> %s (%s)"):format(a, b, why(a, b)) end
      end
    end
    say("circle: %s: %s", table.concat(comp, ", "), table.concat(arrows, "; "))
  end
  local hnames = {}
  for h in pairs(headers) do hnames[#hnames + 1] = h end
  table.sort(hnames)
  for _, hname in ipairs(hnames) do
    local h, base = headers[hname], hname:match("^(.-)%.h$")
    local u = units[base]
    for _, d in ipairs(h.decls) do
      if u then
        if not u.exports[d.name] then
          local owner = exporter[d.name]
          say("%s declares %s, which %s", hname, d.name,
              owner and ("is defined in " .. owner .. ".c, not " .. base .. ".c") or ("no unit defines"))
        end
      elseif d.func then
        say("%s declares the function %s but has no %s.c: a header serves its own unit", hname, d.name, base)
      end
    end
  end
  for _, a in ipairs(order) do
    local seen = {}
    for _, inc in ipairs(reached(units[a].includes)) do seen[inc] = true end
    for _, b in ipairs(targets(a)) do
      for _, s in ipairs(edges[a][b].calls) do
        local declared = false
        if headers[b .. ".h"] then
          for _, d in ipairs(headers[b .. ".h"].decls) do if d.name == s then declared = true end end
        end
        if not declared then say("%s.c uses %s of %s.c, which %s.h does not declare", a, s, b, b)
        elseif not seen[b .. ".h"] then say("%s.c uses %s of %s.c without including %s.h", a, s, b, b) end
      end
    end
    for _, mod in ipairs(units[a].luaopen) do
      if mod ~= a then say("%s.c opens the module fluence.%s: name the file %s.c", a, mod, mod) end
    end
  end
  return problems
end

if mode == "check" then
  local problems = check()
  for _, p in ipairs(problems) do print(p) end
  if #problems > 0 then os.exit(1) end
  print(("unit-graph: %d units, %d headers: no circle, one header per unit, files named after their modules")
        :format(#order, (function() local c = 0 for _ in pairs(headers) do c = c + 1 end return c end)()))
elseif mode == "dot" then
  print("digraph core {")
  print("  rankdir=LR; node [shape=box, fontname=monospace];")
  for _, a in ipairs(order) do
    for _, b in ipairs(targets(a)) do print(('  "%s" -> "%s";'):format(a, b)) end
  end
  print("}")
else
  for _, a in ipairs(order) do
    for _, b in ipairs(targets(a)) do print(("%s -> %s: %s"):format(a, b, why(a, b))) end
  end
end
