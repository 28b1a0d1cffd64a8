/* One fluence command in a runtime (runtime.h): what bin/fluence does with
 * its words, shared with bench/startup.c's trace so the two cannot drift. */
#ifndef FLUENCE_COMMAND_H
#define FLUENCE_COMMAND_H
#include <lua.h>

/* [-0, +0] Parses args (the words after the program's name; prog names it
 * in messages), answers help from the C tables without starting any Lua
 * module, else runs require("fluence.cli").main(args).  Errors are reported
 * on stderr.  Returns the exit code; stdout is left to the caller
 * (fluence_close_stdout). */
int fluence_command(lua_State *L, const char *prog, int nargs, char **args);

#endif
