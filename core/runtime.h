/* The embedded Lua runtime: one lua_State with the standard libraries, LPeg,
 * every fluence.* C module preloaded, and a searcher that finds the Lua
 * sources compiled into the binary (or, when FLUENCE_SOURCE_DIR is set, the
 * ones in a source tree, for development).
 *
 * Every call from C into Lua goes through fluence_pcall(): a protected call
 * whose message handler keeps structured errors ({code=, message=}) as they
 * are and turns anything else into "FILE:LINE: message" plus a traceback. */
#ifndef FLUENCE_RUNTIME_H
#define FLUENCE_RUNTIME_H
#include <lua.h>

lua_State *fluence_runtime_new(void);

/* [-(nargs+1), +(nresults|1), -]  Like lua_pcall with the traceback handler.
 * On error leaves one value (the error object) and returns the status. */
int fluence_pcall(lua_State *L, int nargs, int nresults);

/* [-1, +0, -]  Reports the error object on top of the stack to stderr as
 * "fluence: message" and returns the exit code it asks for. */
int fluence_report(lua_State *L);

/* The end of the program's runtime, at exit.  Freeing every object of a big
 * run one by one (lua_close) cost as much as a tenth of it, for memory the
 * process returns to the system as it exits anyway; so the state is closed
 * only when a memory checker is watching (AddressSanitizer, valgrind: they
 * check that the runtime frees everything it owns), and otherwise left to
 * the exit, still reachable from a global. */
void fluence_runtime_exit(lua_State *L);

/* Closes a runtime fluence_runtime_new made, and frees its allocator. */
void fluence_runtime_close(lua_State *L);

#endif
