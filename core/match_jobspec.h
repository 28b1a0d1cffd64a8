/* Canonical jobspecs v1 as fluence reads and validates them
 * (match_jobspec.c), and the parsed form both jobspec readers produce
 * (match_jobspec_fluxion.c reads them as Fluxion does). */
#ifndef FLUENCE_MATCH_JOBSPEC_H
#define FLUENCE_MATCH_JOBSPEC_H
#include <stdbool.h>
#include <stddef.h>

enum { MJ_X_UNSPEC = -1, MJ_X_FALSE = 0, MJ_X_TRUE = 1 };

typedef struct mj_res {
    char *type;
    unsigned min, max;
    char oper;
    int operand;
    int exclusive;           /* MJ_X_* */
    char *label, *unit, *id;
    struct mj_res *with;
    int nwith;
} mj_res;

enum { MJC_PROPS, MJC_AND, MJC_OR, MJC_NOT, MJC_HOSTLIST, MJC_RANKS, MJC_TRUE };

typedef struct mj_cons {
    int op;
    char **items;            /* properties / hostnames / rank ranges */
    int nitems;
    struct mj_cons *kids;
    int nkids;
} mj_cons;

typedef struct mj_task {
    char *slot;
    int per_slot, total;     /* one of them > 0 */
} mj_task;

typedef struct mjobspec {
    int version;
    mj_res *res;
    int nres;
    double duration;
    mj_cons *constraint;     /* NULL: none */
    mj_task *tasks;
    int ntasks;
} mjobspec;

/* Parses and validates YAML or JSON.  NULL + message "NAME: path: problem". */
mjobspec *mj_parse(const char *text, size_t len, const char *name, char *err, size_t errlen);
void mj_free(mjobspec *js);
void mj_cons_free(mj_cons *k); /* a constraint tree and its root */

#endif
