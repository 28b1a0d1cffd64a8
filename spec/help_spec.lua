-- Every verb's --help, against the command-line tables (fluence.clispec): the
-- summary keeps its words (only a lower-case first letter is raised: issue
-- 15's "&luxion-compatible"), every option of the verb is listed once, and
-- the descriptions start in one column, clear of the longest option
-- (issue 19's "--request-timeout SECONDStimeout of ...").
local cli = require "support.cli"
local spec = require "fluence.clispec"

-- "  -f, --filename FILE" / "      --dry-run[=MODE]" as clispec.c writes them
local function left(o)
  local s = (o.short and ("-" .. o.short .. ", ") or "    ") .. "--" .. o.name
  if o.metavar then s = s .. (o.arg == "optional" and ("[=" .. o.metavar .. "]") or (" " .. o.metavar)) end
  return s
end

-- The lines of a section: after the "Title:" line, up to the blank line.
local function section(text, title)
  local lines, on = {}, false
  for line in (text .. "\n"):gmatch("([^\n]*)\n") do
    if on and line == "" then break end
    if on then lines[#lines + 1] = line end
    if line == title .. ":" then on = true end
  end
  return lines
end

-- Every line is "  NAME" .. spaces .. "DESCRIPTION" with the descriptions in
-- one column, at least two spaces after the longest name; returns name -> description.
local function columns(lines, what)
  local col, out = nil, {}
  for _, line in ipairs(lines) do
    local name, gap, desc = line:match("^  (.-%S)(  +)(%S.*)$")
    assert(name, what .. ": not NAME  DESCRIPTION: " .. line)
    local at = 2 + #name + #gap
    col = col or at
    assert.are.equal(col, at, what .. ": description out of column: " .. line)
    out[name] = desc
  end
  return out, col
end

describe("--help", function()
  for _, v in ipairs(spec.verbs) do
    it("of " .. v.name, function()
      local r = cli.run{ v.name, "--help" }
      assert.are.equal(0, r.code, r.err)
      assert.are.equal("", r.err)
      assert.are.equal(r.out, cli.run{ "help", v.name }.out)
      local usage, summary = r.out:match("^Usage: fluence ([^\n]*)\n\n([^\n]*)\n\nOptions:\n")
      assert.are.equal(v.name .. " " .. v.args, usage)
      assert.are.equal(v.summary:sub(1, 1):upper() .. v.summary:sub(2) .. ".", summary)
      local want = {}
      for _, o in ipairs(spec.options) do
        for _, name in ipairs(o.verbs) do
          if name == v.name then want[left(o)] = o.help end
        end
      end
      local got = columns(section(r.out, "Options"), v.name)
      assert.are.same(want, got)
      assert.are.equal(#section(r.out, "Exit codes"), #spec.exit_codes)
    end)
  end

  it("of -o names only the formats of its verb", function()
    local function output_help(verb)
      return cli.run{ verb, "--help" }.out:match("\n  %-o, %-%-output FMT +([^\n]*)")
    end
    assert.are.equal("yaml (default), json or name", output_help("select"))
    assert.are.equal("yaml (default) or json", output_help("jobspec"))
    assert.are.equal("jgf (default; json is the same), yaml or tree", output_help("graph"))
    assert.are.equal("text (default), junit or tap", output_help("test"))
    assert.are.equal("table (default), wide (every attribute), json or yaml", output_help("explain"))
    -- and each verb takes -o
    for _, v in ipairs{ "select", "apply", "explain", "policies", "graph", "test" } do
      assert.is_string(output_help(v), v)
    end
  end)

  it("overview: verbs and environment variables in columns", function()
    local r = cli.run{ "--help" }
    assert.are.equal(0, r.code)
    local verbs = columns(section(r.out, "Verbs"), "verbs")
    for _, v in ipairs(spec.verbs) do assert.are.equal(v.summary, verbs[v.name]) end
    local env = columns(section(r.out, "Environment"), "environment")
    assert.matches("as %-%-plugin%-timeout", env.FLUENCE_PLUGIN_TIMEOUT)
  end)
end)
