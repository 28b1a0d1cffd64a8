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

-- The parser against the LPeg grammar it replaced (spec/support/grammar_lpeg.lua):
-- the same trees and the same errors, positions and messages, for texts made
-- of the language's tokens and of single characters that stress its edges
-- (quotes, escapes, operators, whitespace the parser does and does not skip).
describe("the parser and the LPeg grammar", function()
  local grammar = require "fluence.grammar"
  local reference = dofile("spec/support/grammar_lpeg.lua")

  local function same(a, b, path)
    if type(a) ~= type(b) then return false, path end
    if type(a) ~= "table" then return a == b or (a ~= a and b ~= b), path end
    for k, v in pairs(a) do
      local ok, p = same(v, b[k], path .. "." .. tostring(k))
      if not ok then return false, p end
    end
    for k in pairs(b) do if a[k] == nil then return false, path .. "." .. tostring(k) end end
    return true
  end

  local function check(texts)
    local differ = {}
    for _, s in ipairs(texts) do
      local ok, where = same({ grammar.parse(s) }, { reference.parse(s) }, "")
      if not ok and #differ < 5 then differ[#differ + 1] = ("%q (at %s)"):format(s, where) end
    end
    assert.are.same({}, differ)
  end

  local function generate(seed, n, pieces, maxlen)
    local rng, out = seed, {}
    local function rand(m)      -- a small LCG: the same texts on every machine
      rng = (rng * 1103515245 + 12345) % 2147483648
      return (rng >> 15) % m + 1   -- the high bits: the low ones of an LCG cycle
    end
    for i = 1, n do
      local parts = {}
      for j = 1, rand(maxlen) - 1 do parts[j] = pieces[rand(#pieces)] end
      out[i] = table.concat(parts)
    end
    return out
  end

  it("agree on texts made of the language's tokens", function()
    check(generate(1, 30000, { "min-cost", "require", ":", ",", "|", "=", ">=", "<", "!=", "==", "=<", "~", "5%",
      "0.05", "x", "memory_gb", '"us east"', "'a'", '"open', " ", "\t", "\n", "1e5", ".5", "-3", "prefer", "region",
      "a.b-c", "!", "~x", "1e999999", '\\"', "online-only", "_", "9abc", "%", "weighted", "cost=2", "" }, 13))
  end)

  it("agree on texts made of single characters", function()
    check(generate(7, 30000, { "a", "Z", "_", "-", ".", "0", "9", "e", "E", "+", "=", "<", ">", "!", "~", "%", ",",
      "|", ":", '"', "'", "\\", " ", "\t", "\n", "\r", "\v", "\f", "\0", "\xc3\xa9" }, 17))
  end)

  -- policies built from the grammar's own productions, then cut short at a
  -- random byte or given one byte more or less: errors at every position
  it("agree on generated policies, whole, cut short and mangled", function()
    local rng = 11
    local function rand(m)
      rng = (rng * 1103515245 + 12345) % 2147483648
      return (rng >> 15) % m + 1
    end
    local function pick(t) return t[rand(#t)] end
    local WS = { "", "", "", " ", "  ", "\t", "\n" }
    local function value()
      return pick{ "a", "us-east-1", "24", "0.5", "-3", "1e5", ".5", "1e999999", "x.y", "\xc3\xa9",
                   '"us east"', "'eu west'", '"a\\"b"', "'it\\'s'", '"\\\\"', '"\\"' }
    end
    local function item()
      local vals = { value() }
      for _ = 2, rand(3) do vals[#vals + 1] = pick(WS) .. "|" .. pick(WS) .. value() end
      local key = rand(4) > 1 and (pick{ "memory_gb", "region", "min_qubits", "cost", "a.b-c" } .. pick(WS) ..
                                   pick{ "=", ">=", "<", "!=", "==", "<=", ">", "=<", "!" } .. pick(WS)) or ""
      return key .. table.concat(vals)
    end
    local function stage()
      local s = pick{ "min-cost", "require", "prefer", "online-only", "weighted", "max-throughput", "x_1" }
      if rand(3) == 1 then s = s .. pick(WS) .. "~" .. pick(WS) .. pick{ "5%", "0.05", "1e999", "x", "+.5e-1%" } end
      if rand(2) == 1 then
        local items = { item() }
        for _ = 2, rand(3) do items[#items + 1] = pick(WS) .. pick{ ",", "|" } .. pick(WS) .. item() end
        s = s .. pick(WS) .. ":" .. pick(WS) .. table.concat(items)
      end
      return s
    end
    local texts = {}
    for _ = 1, 6000 do
      local st = { stage() }
      for _ = 2, rand(3) do st[#st + 1] = pick(WS) .. "," .. pick(WS) .. stage() end
      local s = pick(WS) .. table.concat(st) .. pick(WS)
      texts[#texts + 1] = s
      texts[#texts + 1] = s:sub(1, rand(#s + 1) - 1)                       -- cut short
      local at = rand(#s + 1)
      texts[#texts + 1] = s:sub(1, at - 1) .. pick{ ",", "|", ":", "~", '"', "'", "\\", "=", " ", "%" } .. s:sub(at)
      texts[#texts + 1] = s:sub(1, at - 1) .. s:sub(at + 1)                 -- a byte less
    end
    check(texts)
  end)

  it("agree on the policies of the examples and the Go client's cases", function()
    local texts = { "", "   ", "min-cost", "online-only,require:min_qubits=10,min-queue~5,min-cost",
      "prefer:region=us-east-1|region=eu-west-2,min-cost~5%", "require:region=\"us east\"|'eu west',max-throughput",
      "weighted:cost_usd=-1,throughput=0.5", "exclude:name=a|b", "fits:now", "min-cost~1e999,,", "a,,b", "a b",
      "require:x=", "require:x=|", "require:x>=1|2", "require:", "min-cost~", "min-cost~%", "~5" }
    check(texts)
  end)
end)
