/* fluence's entry point: a runtime, one command in it (command.h: the
 * command line parsed, then help or lua/fluence/cli.lua), stdout checked.
 * Nothing else lives here. */
#include <stdio.h>
#include <string.h>
#include "command.h"
#include "exitcode.h"
#include "output.h"
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
    int rc = fluence_command(L, prog, argc - 1, argv + 1);
    fluence_runtime_exit(L);
    return fluence_close_stdout(rc);
}
