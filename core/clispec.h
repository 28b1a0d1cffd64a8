/* The command line (clispec.c, also the module fluence.clispec): one sorted
 * static table of verbs and one of options, the parser that turns argv into
 * a Lua table for lua/fluence/cli.lua, and the help text generated from the
 * same tables (so they cannot disagree). */
#ifndef FLUENCE_CLISPEC_H
#define FLUENCE_CLISPEC_H
#include <stdio.h>
#include <lua.h>

/* [-0, +1, -]  Parses argv (after the program name) into
 *   {prog=, verb=, positional={...}, opts={long_name=value|true|count|{...}}}
 * Returns 0, or prints a usage error to stderr and returns an exit code. */
int fluence_cli_parse(lua_State *L, const char *prog, int argc, char **argv);

/* [-0, +0, -]  Prints the help for a verb (NULL: the overview) to f.  Returns
 * 0, or prints the usage error of an unknown verb (as the parser does: the
 * nearest verb named) and returns 2. */
int fluence_cli_help(lua_State *L, FILE *f, const char *prog, const char *verb);

#endif
