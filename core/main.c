/* fluence's entry point: parse the command line, then hand the parsed table
 * to lua/fluence/cli.lua inside one protected call.  Nothing else lives here. */
#include <stdio.h>
#include <string.h>
#include <lauxlib.h>
#include "clispec.h"
#include "exitcode.h"
#include "output.h"
#include "progress.h"
#include "runtime.h"
#include "timelimit.h"

/* Every return goes through fluence_close_stdout: stdout flushed, closed
 * and checked (output.h). */
int main(int argc, char **argv)
{
    fluence_guard_std_fds();
    /* Installed as kubectl-fluence, kubectl runs us as "kubectl fluence". */
    const char *base = argc > 0 && argv[0] ? strrchr(argv[0], '/') : NULL;
    base = base ? base + 1 : (argc > 0 && argv[0] ? argv[0] : "fluence");
    const char *prog = strncmp(base, "kubectl-", 8) == 0 ? "kubectl fluence" : "fluence";

    /* a plugin stuck in C past its time limit ends the process (timelimit.h) */
    fluence_timelimit_enable_hard_stop();
    lua_State *L = fluence_runtime_new();
    if (!L) {
        fprintf(stderr, "fluence: cannot start the Lua runtime\n");
        return fluence_close_stdout(FLUENCE_EXIT_INTERNAL);
    }
    int rc = fluence_cli_parse(L, prog, argc - 1, argv + 1);
    if (rc != 0) {
        fluence_runtime_exit(L);
        return fluence_close_stdout(rc);
    }
    /* args.argv: the words as given, for the commands a hint suggests
     * running again (lua/fluence/hint.lua) */
    lua_createtable(L, argc > 1 ? argc - 1 : 0, 0);
    for (int i = 1; i < argc; i++) {
        lua_pushstring(L, argv[i]);
        lua_rawseti(L, -2, i);
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
        fluence_runtime_exit(L);
        return fluence_close_stdout(rc);
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
    fluence_runtime_exit(L);
    return fluence_close_stdout(rc);
}
