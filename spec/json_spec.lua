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

-- One JSON string escaper (core/json_write.c) serves json.encode, the
-- manifests' JSON (-o json, server-side apply) and the values written into
-- JSON manifests: the same string comes out the same from each, and they
-- differ only where they say so (a byte that is not UTF-8: kept by encode,
-- U+FFFD in a manifest's JSON, refused as an annotation value; the line
-- separators YAML folds: escaped in what is written into a manifest).
describe("the one JSON string escaper", function()
  local manifest = require "fluence.manifest"
  local S = 'q" b\\ nl\n cr\r tab\t bs\b ff\f nul\0 esc\27 del\127 c1\194\133\194\159 é € 𝄞 /'
  local ESCAPED = '"q\\" b\\\\ nl\\n cr\\r tab\\t bs\\u0008 ff\\u000c nul\\u0000 esc\\u001b del\\u007f ' ..
                  'c1\\u0085\\u009f é € 𝄞 /"'

  it("writes a string alike in json.encode, a manifest's JSON and an annotation value", function()
    assert.are.equal(ESCAPED, json.encode(S))
    local s = assert(manifest.parse('{"kind":"Pod","metadata":{"name":"p","annotations":{"v":' ..
                                    json.encode(S) .. '}}}', "t.json"))
    assert.are.equal('{"kind":"Pod","metadata":{"name":"p","annotations":{"v":' .. ESCAPED .. '}}}',
                     s:object_json(1))
    local e = assert(manifest.parse('{"kind": "Pod", "metadata": {"name": "p"}}', "e.json"))
    assert(e:set_annotations(1, { w = S }))
    assert.are.equal('{"kind": "Pod", "metadata": {"name": "p", "annotations": {"w": ' .. ESCAPED .. '}}}',
                     e:render())
  end)

  it("differs where each says: bytes that are not UTF-8, YAML's line separators", function()
    local bad = "a\255b\194"
    assert.are.equal('"a\255b\194"', json.encode(bad))
    -- in a manifest only a !!binary value holds such bytes (a\255b here)
    local s = assert(manifest.parse("kind: Pod\nmetadata:\n  name: p\n  labels:\n    x: !!binary Yf9i\n", "b.yaml"))
    assert.are.equal('{"kind":"Pod","metadata":{"name":"p","labels":{"x":"a\\ufffdb"}}}', s:object_json(1))
    local e = assert(manifest.parse('{"kind": "Pod", "metadata": {"name": "p"}}', "e.json"))
    assert.is_nil(e:set_annotations(1, { w = bad }))
    local ls = "a\226\128\168b"
    assert.are.equal('"' .. ls .. '"', json.encode(ls))
    assert(e:set_annotations(1, { w = ls }))
    assert.matches('"w": "a\\u2028b"', e:render(), 1, true)
  end)
end)
