/* The wall-clock limit of plugin calls (see timelimit.c).
 *
 * lua/fluence/sandbox.lua opens a limit around every plugin call
 * (fluence.timelimit enter/leave); the instruction hook and the C functions
 * that can run long on a plugin's behalf (core/guard_string.c,
 * core/guard_table.c) check it and raise a Lua error once it has passed.
 * Outside a plugin call a check is one branch. */
#ifndef FLUENCE_TIMELIMIT_H
#define FLUENCE_TIMELIMIT_H
#include <lua.h>
#include <lauxlib.h>

/* True while a plugin call with a finite limit runs (and is not paused for
 * network I/O).  Read before fluence_timelimit_check() to keep the common
 * case free. */
extern int fluence_timelimit_armed;

/* [-0, +0, v]  Raises "WHERE: time limit exceeded in WHAT" (WHERE: the Lua
 * caller's chunk:line) when the running plugin call is past its deadline.
 * Call it every few thousand steps of a long C loop that holds no C
 * resources (a Lua error unwinds it). */
void fluence_timelimit_check(lua_State *L, const char *what);

/* Turns on the last resort for C work that checks nothing (a sort of huge
 * strings, a giant string operation): one second after a call's deadline a
 * watchdog thread prints the call's message on stderr and ends the process
 * with exit code 3.  Only for the fluence program (main.c), never for a
 * process that merely loads the modules (busted, fuzzers). */
void fluence_timelimit_enable_hard_stop(void);

/* [-0, +1, v]  The `install` of core/guard_string.c and core/guard_table.c:
 * puts the guarded functions into the library table at index 1 and returns
 * a table of the standard ones they replaced.  The guarded ones live only
 * in that library table (never in a module of ours), so error messages
 * name them as the standard library's ("bad argument #1 to 'string.find'").
 * key: the registry slot remembering the originals, so installing twice
 * changes nothing and returns the same table. */
int fluence_guard_install(lua_State *L, const luaL_Reg *guarded, const void *key);

#endif
