-- Loaded by busted before every spec file (see .busted).
-- C modules come from the shared object (FLUENCE_CPATH overrides, e.g. for the
-- sanitizer build); plugins load from this source tree.
local root = os.getenv("PWD")
local cdir = os.getenv("FLUENCE_CPATH") or (root .. "/build/lib")
package.cpath = cdir .. "/?.so;" .. package.cpath
package.path = root .. "/lua/?.lua;" .. root .. "/spec/?.lua;" .. package.path
