local yaml = require "fluence.yaml"
local json = require "fluence.json"

describe("fluence.yaml", function()
  it("resolves plain scalars by the core schema and keeps quoted ones", function()
    local v = yaml.decode([[
i: 42
neg: -7
hex: 0x1f
f: 2.5
e: 1e3
t: true
n: null
tilde: ~
s: "42"
s2: '0.5'
word: yes
ver: 1.2.3
inf: .inf
str: !!str 12
]])
    assert.are.equal(42, v.i); assert.are.equal("integer", math.type(v.i))
    assert.are.equal(-7, v.neg)
    assert.are.equal(31, v.hex)
    assert.are.equal(2.5, v.f)
    assert.are.equal(1000.0, v.e)
    assert.is_true(v.t)
    assert.are.equal(yaml.null, v.n)
    assert.are.equal(yaml.null, v.tilde)
    assert.are.equal("42", v.s)
    assert.are.equal("0.5", v.s2)
    assert.are.equal("yes", v.word)
    assert.are.equal("1.2.3", v.ver)
    assert.are.equal(math.huge, v.inf)
    assert.are.equal("12", v.str)
  end)

  it("decodes every document of a stream", function()
    local docs = assert(yaml.decode_all("a: 1\n---\nb: 2\n...\n---\n- x\n"))
    assert.are.equal(3, #docs)
    assert.are.equal(2, docs[2].b)
    assert.are.equal("x", docs[3][1])
  end)

  it("keeps the shape for JSON re-encoding", function()
    local v = yaml.decode("a: []\nb: {}\nc: [1, {d: e}]\n")
    assert.are.equal('{"a":[],"b":{},"c":[1,{"d":"e"}]}', json.encode(v))
  end)

  it("supports anchors, aliases and merge keys", function()
    local v = yaml.decode([[
base: &b {x: 1, y: 2}
other:
  <<: *b
  y: 3
list: [*b, *b]
]])
    assert.are.equal(1, v.other.x)
    assert.are.equal(3, v.other.y)
    assert.are.equal(2, v.list[2].y)
  end)

  it("reports syntax errors with line, column and caret", function()
    local v, err = yaml.decode("a: 1\nb: [1, 2\nc: 3\n", "bad.yaml")
    assert.is_nil(v)
    assert.matches("^bad%.yaml:%d+:%d+: ", err)
    assert.matches("\n    [^\n]*\n    %s*%^$", err)
  end)

  it("rejects duplicate keys at the second key", function()
    local v, err = yaml.decode("a: 1\nb: 2\na: 3\n", "dup.yaml")
    assert.is_nil(v)
    assert.are.equal('dup.yaml:3:1: duplicate key "a"\n    a: 3\n    ^', err)
  end)

  it("stops a billion-laughs document quickly", function()
    local lines = { 'a: &a ["x","x","x","x","x","x","x","x","x","x"]' }
    local prev = "a"
    for i = 1, 9 do
      local name = string.char(97 + i)
      lines[#lines + 1] = ("%s: &%s [%s]"):format(name, name, ("*" .. prev .. ","):rep(9) .. "*" .. prev)
      prev = name
    end
    local t0 = os.clock()
    local v, err = yaml.decode(table.concat(lines, "\n"), "lol.yaml")
    assert.is_nil(v)
    assert.matches("billion laughs", err)
    assert.is_true(os.clock() - t0 < 2)
  end)

  it("limits nesting depth", function()
    local v, err = yaml.decode(("["):rep(10000), "deep.yaml")
    assert.is_nil(v)
    assert.matches("deep%.yaml:1:%d+:", err)
  end)

  it("remembers where mappings and keys are", function()
    local v = yaml.decode("top:\n  name: x\n  count: 2\n")
    local m = yaml.marks(v.top)
    assert.are.equal(2, m.line)
    assert.are.equal(3, m.keys.count.line)
    assert.are.equal(3, m.keys.count.col)
  end)

  it("returns null for an empty document", function()
    assert.are.equal(yaml.null, yaml.decode(""))
    assert.are.same({}, yaml.decode_all(""))
  end)
end)
