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
