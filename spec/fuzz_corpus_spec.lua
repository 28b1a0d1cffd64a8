-- Every seed of the fuzz corpus (fuzz/corpus/TARGET/*) through its target in
-- lua/fluence/fuzz.lua, as `make fuzz` starts: a structured error or nil,
-- message is how a reader refuses bad input; a plain error (a broken
-- property check, a crash in Lua) fails.  So the properties the fuzzers
-- check are checked by `make test` on the seeds too.
local cli = require "support.cli"
local errors = require "fluence.errors"
local sys = require "fluence.sys"
local fuzz = require "fluence.fuzz"

local corpus = cli.root .. "/fuzz/corpus"

describe("fuzz corpus seeds", function()
  for _, target in ipairs(assert(sys.list_dir(corpus))) do
    if type(fuzz[target]) == "function" then
      for _, name in ipairs(assert(sys.list_dir(corpus .. "/" .. target))) do
        it(target .. "/" .. name, function()
          local data = assert(cli.slurp(corpus .. "/" .. target .. "/" .. name))
          local ok, e = pcall(fuzz[target], data)
          assert(ok or errors.is(e), tostring(e))
        end)
      end
    end
  end
end)

-- The kubelists target's oracle is RFC 8259's grammar (jansson refuses more
-- than the grammar does: limits on numbers, duplicate keys).  It must agree
-- with jansson everywhere jansson has no such limit, and allow what it has.
describe("fuzz.is_json_text, the JSON grammar the kubelists target checks against", function()
  local json = require "fluence.json"
  local texts = {
    '{}', '[]', ' [ 1 , -0 , 0.5e+3 , 1E-2 , true , false , null ] ', '"a\\u00e9\\n\\"\\\\\\/"', '{"a":{"b":[{}]}}',
    '"h\xc3\xa9"', '"\xf0\x9f\x98\x80"', '0', '-1.25',
    '', ' ', '[1,]', '{"a":1,}', '{"a"}', '[01]', '[1.]', '[.5]', '[1e]', '[-]', '[+1]', "['a']", '[tru]',
    '"\x01"', '"\\x"', '"\\u12"', '"\xc0\x80"', '"\xed\xa0\x80"', '"\xff"', '[1] x', '{"a":1}}', '[NaN]',
    -- beyond int64: jansson refuses it as an integer, json.decode takes it
    -- as a float (as Go's decoders do)
    '[3333333333333333333333333333]', '[-92233720368547758080]',
    -- a NUL in a string (jansson refuses it unless asked)
    '"a\\u0000b"',
  }
  for _, text in ipairs(texts) do
    it(("%q"):format(text), function()
      assert.equal(json.decode(text) ~= nil, fuzz.is_json_text(text))
    end)
  end
  for _, text in ipairs{ '[1e999]', '{"a":1,"a":2}' } do
    it(("%q: JSON text jansson refuses"):format(text), function()
      assert.is_nil(json.decode(text))
      assert.is_true(fuzz.is_json_text(text))
    end)
  end
  it("nesting as deep as the scanner reads", function()
    local deep = ("["):rep(512) .. ("]"):rep(512)
    assert.is_true(fuzz.is_json_text(deep))
    assert.is_false(fuzz.is_json_text(deep .. "]"))
  end)
end)
