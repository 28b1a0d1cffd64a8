/* One fluence command in a runtime (command.h). */
#include <stdio.h>
#include <string.h>
#include "clispec.h"
#include "command.h"
#include "exitcode.h"
#include "progress.h"
#include "runtime.h"

int fluence_command(lua_State *L, const char *prog, int nargs, char **args)
{
    int top = lua_gettop(L);
    int rc = fluence_cli_parse(L, prog, nargs, args);
    if (rc != 0) {
        lua_settop(L, top);
        return rc;
    }
    /* args.argv: the words as given, for the commands a hint suggests
     * running again (lua/fluence/hint.lua) */
    lua_createtable(L, nargs > 0 ? nargs : 0, 0);
    for (int i = 0; i < nargs; i++) {
        lua_pushstring(L, args[i]);
        lua_rawseti(L, -2, i + 1);
    }
    lua_setfield(L, -2, "argv");
    /* Help is answered from the C tables without starting any Lua module. */
    lua_getfield(L, -1, "verb");
    const char *verb = lua_tostring(L, -1);
    lua_getfield(L, -2, "opts");
    lua_getfield(L, -1, "help");
    int want_help = lua_toboolean(L, -1);
    lua_pop(L, 2);
    if (strcmp(verb, "help") == 0 || want_help) {
        const char *topic = NULL;
        lua_getfield(L, -2, "implicit_verb");
        int implicit = lua_toboolean(L, -1);
        lua_pop(L, 1);
        /* `help --help` is the help verb's own; `--help` alone the overview */
        if (strcmp(verb, "help") != 0 || (want_help && !implicit)) topic = verb;
        else {
            lua_getfield(L, -2, "positional");
            lua_rawgeti(L, -1, 1);
            topic = lua_tostring(L, -1);   /* stays valid: still on the stack */
        }
        rc = fluence_cli_help(L, stdout, prog, topic);
        lua_settop(L, top);
        return rc;
    }
    lua_pop(L, 1);

    /* [args] -> require("fluence.cli").main(args) -> exit code */
    lua_getglobal(L, "require");
    lua_pushliteral(L, "fluence.cli");
    if (fluence_pcall(L, 1, 1) != LUA_OK) {
        rc = fluence_report(L);
    } else {
        lua_getfield(L, -1, "main");
        lua_remove(L, -2);
        lua_insert(L, -2);
        int st = fluence_pcall(L, 1, 1);
        fluence_progress_clear();          /* an error message starts its own line */
        if (st != LUA_OK) rc = fluence_report(L);
        else rc = lua_isinteger(L, -1) ? (int)lua_tointeger(L, -1) : FLUENCE_EXIT_OK;
    }
    lua_settop(L, top);
    return rc;
}
