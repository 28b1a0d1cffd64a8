-- The select-policy grammar (lua/fluence/grammar.lua): trees with positions
-- for every form, and parse errors at the right byte.
local grammar = require "fluence.grammar"

local function parse(t)
  local tree, err = grammar.parse(t)
  assert(tree, err and (err.pos .. ": " .. err.msg))
  return tree.stages
end

local function perr(t)
  local tree, err = grammar.parse(t)
  assert.is_nil(tree)
  return err.pos, err.msg
end

describe("grammar", function()
  it("parses comma-separated stages with their positions", function()
    local s = parse("min-cost,min-queue")
    assert.are.equal(2, #s)
    assert.are.same({ "min-cost", 1, 9 }, { s[1].word, s[1].pos, s[1].endpos })
    assert.are.same({ "min-queue", 10, "min-queue" }, { s[2].word, s[2].pos, s[2].text })
    assert.is_nil(s[1].args)
    assert.is_nil(s[1].tolerance)
  end)

  it("tolerates whitespace everywhere between tokens", function()
    local s = parse("  min-cost ~ 5% ,\n require : memory_gb >= 24 | 32 ,prefer: a | b  ")
    assert.are.equal(3, #s)
    assert.are.same({ "min-cost ~ 5%", 3 }, { s[1].text, s[1].pos })
    assert.are.equal("require : memory_gb >= 24 | 32", s[2].text)
    local it = s[2].args.items[1]
    assert.are.same({ "memory_gb", ">=" }, { it.key, it.op })
    assert.are.same({ 24, 32 }, { it.values[1].number, it.values[2].number })
    assert.are.equal("a | b", s[3].args.raw)
  end)

  it("parses absolute and relative tolerances", function()
    local s = parse("min-cost~0.05,max-throughput~5%")
    assert.are.same({ value = 0.05, relative = false, text = "0.05", pos = 10 }, s[1].tolerance)
    assert.are.same({ value = 0.05, relative = true, text = "5%", pos = 30 }, s[2].tolerance)
  end)

  it("parses the Go client's require form as key = number", function()
    local it = parse("require:min_qubits=10")[1].args.items[1]
    assert.are.same({ "min_qubits", "=", 9, 19 }, { it.key, it.op, it.pos, it.oppos })
    assert.are.same({ text = "10", value = "10", number = 10, quoted = false, pos = 20 }, it.values[1])
  end)

  it("knows every comparison operator", function()
    for _, o in ipairs({ "=", "!=", "<", "<=", ">", ">=" }) do
      local it = parse("require:x" .. o .. "1")[1].args.items[1]
      assert.are.equal(o, it.op)
    end
    assert.are.equal("=", parse("require:x==1")[1].args.items[1].op)
  end)

  it("reads numbers in Go's %g forms and keeps other words as strings", function()
    local vals = {}
    for _, v in ipairs({ "1e3", "+5", "-2.5", ".5", "3.", "us-east-1", "1.2.3", "0x10" }) do
      vals[#vals + 1] = parse("require:x=" .. v)[1].args.items[1].values[1].number or false
    end
    assert.are.same({ 1000, 5, -2.5, 0.5, 3, false, false, false }, vals)
  end)

  it("parses quoted values with escapes, never as numbers", function()
    local v = parse([[require:region="us east",x='it\'s',y="24"]])[1].args.items
    assert.are.same({ "us east", true }, { v[1].values[1].value, v[1].values[1].quoted })
    assert.are.equal("it's", v[2].values[1].value)
    assert.is_nil(v[3].values[1].number)
    assert.are.equal("24", v[3].values[1].value)
  end)

  it("continues an argument list only while ident OP value follows the comma", function()
    local s = parse("weighted:throughput=1,cost=-2,min-cost,prefer:a,exclude:b|c")
    assert.are.equal(4, #s)
    assert.are.equal("weighted:throughput=1,cost=-2", s[1].text)
    assert.are.equal(2, #s[1].args.items)
    assert.are.same({ "cost", -2 }, { s[1].args.items[2].key, s[1].args.items[2].values[1].number })
    assert.are.equal("min-cost", s[2].word)
    assert.are.same({ "b", "c" }, { s[4].args.items[1].values[1].value, s[4].args.items[1].values[2].value })
  end)

  it("takes ordered alternatives with |", function()
    local it = parse("prefer:gpu-l4|arn:aws:braket:::device/qpu/x|\"odd name\"")[1].args.items[1]
    assert.is_nil(it.key)
    local names = {}
    for i, v in ipairs(it.values) do names[i] = v.value end
    assert.are.same({ "gpu-l4", "arn:aws:braket:::device/qpu/x", "odd name" }, names)
  end)

  it("starts an alternative item at | followed by ident op (issue 15)", function()
    local items = parse("prefer:a|b|region=us-east-1,spot=true | gpu_gb>=40,min-cost")[1].args.items
    local got = {}
    for i, it in ipairs(items) do
      local vals = {}
      for j, v in ipairs(it.values) do vals[j] = v.value end
      got[i] = { it.sep or "", it.seppos or 0, it.key or "", table.concat(vals, "|") }
    end
    assert.are.same({ { "", 0, "", "a|b" }, { "|", 11, "region", "us-east-1" }, { ",", 28, "spot", "true" },
                      { "|", 39, "gpu_gb", "40" } }, got)
    -- a bar before a plain word still separates values
    local v = parse("prefer:region=a|b")[1].args.items
    assert.are.same({ 1, 2 }, { #v, #v[1].values })
  end)

  it("accepts user policy names with dots, digits and underscores", function()
    local s = parse("my_policy.v2:level=3,Team-Fav")
    assert.are.same({ "my_policy.v2", "Team-Fav" }, { s[1].word, s[2].word })
    assert.are.equal("level=3", s[1].args.raw)
  end)

  describe("errors", function()
    local cases = {
      { "", 1, "empty policy" },
      { "   ", 4, "empty policy" },
      { "a,,b", 3, "empty stage" },
      { ",a", 1, "empty stage" },
      { "a, ", 4, "empty stage" },
      { "@x", 1, 'expected a policy name, found "@"' },
      { "min-cost?", 9, 'unexpected "?" (expected "," between stages)' },
      { "require:x>=24 GB", 15, 'unexpected "GB" (expected "," between stages)' },
      { "min-cost~x", 10, 'bad tolerance "x" (expected a number like 0.05 or 5%)' },
      { "min-cost~", 10, "bad tolerance end of text (expected a number like 0.05 or 5%)" },
      { "require:x=>3", 10, 'bad operator "=>" (expected one of = != < <= > >=)' },
      { "require:x<>3", 10, 'bad operator "<>" (expected one of = != < <= > >=)' },
      { "require:x>=", 12, 'missing value after ">="' },
      { "require:x>=,b", 12, 'missing value after ">="' },
      { "prefer:", 8, 'missing argument after ":"' },
      { "prefer:,a", 8, 'missing argument after ":"' },
      { "prefer:=a", 8, 'expected an argument after ":", found "="' },
      { "prefer:a|", 10, 'missing value after "|"' },
      { 'require:region="us east', 16, "unterminated string" },
    }
    for _, c in ipairs(cases) do
      it(("%q -> %s"):format(c[1], c[3]), function()
        local pos, msg = perr(c[1])
        assert.are.same({ c[2], c[3] }, { pos, msg })
      end)
    end
  end)

  it("gives line and column of a position", function()
    assert.are.same({ 1, 5 }, { grammar.linecol("abcdef", 5) })
    assert.are.same({ 2, 2 }, { grammar.linecol("ab\ncd", 5) })
  end)
end)

describe("numbers out of range", function()
  local grammar = require "fluence.grammar"
  it("are not numbers (1e999999 is not infinity)", function()
    local t = assert(grammar.parse("require:memory_gb>=1e999999"))
    local v = t.stages[1].args.items[1].values[1]
    assert.is_nil(v.number)
    local ok, err = grammar.parse("min-cost~1e999")
    assert.is_nil(ok)
    assert.matches("out of range", err.msg)
  end)
end)
