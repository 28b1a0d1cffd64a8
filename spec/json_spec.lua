local json = require "fluence.json"

describe("fluence.json", function()
  it("decodes objects, arrays, numbers, null", function()
    local v = json.decode('{"a": [1, 2.5, "x", true, null], "b": {}}')
    assert.are.equal(1, v.a[1])
    assert.is_true(math.type(v.a[1]) == "integer")
    assert.are.equal(2.5, v.a[2])
    assert.are.equal(json.null, v.a[5])
    assert.is_false(json.is_array(v.b))
    assert.is_true(json.is_array(v.a))
  end)

  it("reports errors with line, column, the source line and a caret", function()
    local v, err = json.decode('{\n  "a": [1, 2,\n  ]\n}', "x.json")
    assert.is_nil(v)
    assert.matches("^x%.json:3:%d+: ", err)
    assert.matches("\n    %s*%]\n    %s*%^$", err)
  end)

  it("rejects duplicate keys", function()
    local v, err = json.decode('{"a": 1, "a": 2}', "d.json")
    assert.is_nil(v)
    assert.matches("duplicate", err)
  end)

  it("encodes deterministically: sorted keys, shortest numbers", function()
    assert.are.equal('{"a":[1,2.5,0.1],"b":{},"c":null}',
      json.encode{ c = json.null, a = { 1, 2.5, 0.1 }, b = json.object{} })
    assert.are.equal('[]', json.encode(json.array{}))
    assert.are.equal('5', json.encode(5.0))
    assert.are.equal('"a\\"b\\n\\u0001"', json.encode('a"b\n\1'))
  end)

  it("honours a key order given by the metatable", function()
    local t = setmetatable({ z = 1, chosen = "x", policy = "p", a = 2 },
                           { __order = { "policy", "chosen" } })
    assert.are.equal('{"policy":"p","chosen":"x","a":2,"z":1}', json.encode(t))
  end)

  it("indents when asked", function()
    assert.are.equal('{\n  "a": [\n    1\n  ]\n}', json.encode({ a = { 1 } }, { indent = 2 }))
  end)

  it("refuses what JSON cannot hold", function()
    assert.has_error(function() json.encode(0 / 0) end, "cannot encode NaN in JSON")
    assert.has_error(function() json.encode(math.huge) end, "cannot encode infinity in JSON")
    local t = {}
    t.self = t
    assert.has_error(function() json.encode(t) end)
    assert.has_error(function() json.encode({ [true] = 1 }) end)
  end)

  it("keeps negative zero a float, so re-encoding is stable (a make fuzz finding)", function()
    local text = json.encode(json.decode("-0.0"))
    assert.are.equal("-0.0", text)
    assert.are.equal(text, json.encode(json.decode(text)))
  end)

  it("round-trips decoded documents", function()
    local text = '{"a":[],"b":{},"c":[1,{"d":"e"}],"n":-1.5e+300}'
    assert.are.equal(text, json.encode(json.decode(text)))
  end)
end)
