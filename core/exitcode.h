/* Named exit codes: the contract with shells and CI scripts.  Documented in
 * `fluence --help` and the README; exported to Lua as fluence.sys.EXIT. */
#ifndef FLUENCE_EXITCODE_H
#define FLUENCE_EXITCODE_H

enum fluence_exit {
    FLUENCE_EXIT_OK = 0,        /* success */
    FLUENCE_EXIT_SELECT = 1,    /* a selection failed (same as the Go client) */
    FLUENCE_EXIT_USAGE = 2,     /* bad command line */
    FLUENCE_EXIT_INPUT = 3,     /* bad input: manifest, attribute file, policy, plugin */
    FLUENCE_EXIT_CLUSTER = 4,   /* cluster or network: API server, cloud API */
    FLUENCE_EXIT_INTERNAL = 70, /* a bug in fluence (EX_SOFTWARE) */
    FLUENCE_EXIT_OUTPUT = 74    /* stdout could not be written: full, closed (EX_IOERR) */
};

#endif
