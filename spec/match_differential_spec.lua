-- fluence match against Fluxion's own resource-query on random command
-- streams (fuzz/differential.lua: graphs, jobspecs -- valid ones and odd
-- ones mixed -- and command scripts, flux-sched-, Fluence- and storage-
-- shaped, every policy and output format): the -t text and the lines
-- printed besides must be byte for byte the same.  300 streams from a fixed
-- seed under make test, in seconds (FLUENCE_DIFF_SEED and FLUENCE_DIFF_CASES
-- choose others; `make fluxion-diff` runs thousands, and every stream that
-- ever differed); under make check (ASan, valgrind) a small seeded share of
-- them, the C being the same.  The FLUENCE_FLUXION_LIB backend runs a tenth
-- of them too.  A failing stream is kept under build/differential/<seed>
-- with the commands to rerun it.
local cli = require "support.cli"
local fluxion = require "support.fluxion"
local diff = dofile(cli.root .. "/fuzz/differential.lua")

local SEED = tonumber(os.getenv("FLUENCE_DIFF_SEED") or "") or 14001
local CASES = tonumber(os.getenv("FLUENCE_DIFF_CASES") or "") or
              (os.getenv("FLUENCE_VALGRIND") and 4 or os.getenv("FLUENCE_SANITIZE") and 30 or 300)

local VALGRIND = "valgrind -q --error-exitcode=99 --leak-check=full " ..
                 "--errors-for-leak-kinds=definite,indirect --show-leak-kinds=definite,indirect"

local function run_cases(first, n, opts, label)
  local failed, report = 0, {}
  local dir = cli.tmpdir()
  for seed = first, first + n - 1 do
    local case = diff.generate(seed)
    opts.dir = dir .. "/" .. seed
    local ok, why = diff.run(case, opts)
    if ok then
      os.execute("rm -rf " .. cli.quote(opts.dir))
    else
      failed = failed + 1
      local keep = cli.root .. "/build/differential/" .. seed
      os.execute(("rm -rf %s && mkdir -p %s && cp -r %s/. %s"):format(cli.quote(keep), cli.quote(keep),
        cli.quote(opts.dir), cli.quote(keep)))
      if #report < 10 then
        report[#report + 1] = ("seed %d (%s graph, policy %s, format %s%s): %s\n  kept in %s; rerun: " ..
          "FLUENCE_DIFF_SEED=%d FLUENCE_DIFF_CASES=1 sh spec/run spec/match_differential_spec.lua"):format(
          seed, case.family, case.policy, case.format, label, why, keep, seed)
      end
    end
  end
  cli.cleanup()
  return failed, report
end

describe("fluence match and resource-query on random inputs", function()
  if not fluxion.resource_query then
    it("agree", function() pending(fluxion.SKIP) end)
    return
  end

  it(("agree byte for byte on %d streams from seed %d"):format(CASES, SEED), function()
    local opts = { fluence = cli.bin, resource_query = fluxion.resource_query,
                   env = os.getenv("FLUENCE_SANITIZE") and "ASAN_OPTIONS=detect_leaks=1" or nil,
                   wrap = os.getenv("FLUENCE_VALGRIND") and VALGRIND or nil }
    local failed, report = run_cases(SEED, CASES, opts, "")
    assert(failed == 0, ("%d of %d streams from seed %d disagree:\n%s"):format(failed, CASES, SEED,
      table.concat(report, "\n")))
  end)

  it("agree through FLUENCE_FLUXION_LIB on a share of them", function()
    if not fluxion.lib then return pending(fluxion.SKIP) end
    -- the library is Fluxion itself: this checks the dlopen backend's
    -- plumbing (ids, errors, formats), not the matching
    local n = math.max(1, CASES // 10)
    local env = {}
    for k, v in pairs(fluxion.lib_env()) do env[#env + 1] = k .. "=" .. cli.quote(v) end
    table.sort(env)
    local opts = { fluence = cli.bin, resource_query = fluxion.resource_query, env = table.concat(env, " ") }
    local failed, report = run_cases(SEED, n, opts, ", FLUENCE_FLUXION_LIB")
    assert(failed == 0, ("%d of %d streams from seed %d disagree through the library:\n%s"):format(failed, n, SEED,
      table.concat(report, "\n")))
  end)
end)
