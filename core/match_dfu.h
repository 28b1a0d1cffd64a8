/* The Fluxion-compatible matcher (match_dfu.c): Fluxion's depth-first-and-up
 * traversal on a resource graph, one resource-query `match` command at a
 * time, with its job ids, its planners' time and its answers.  Plain C, no
 * Lua: the Lua binding is match.c. */
#ifndef FLUENCE_MATCH_DFU_H
#define FLUENCE_MATCH_DFU_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "match_graph.h"

enum { MOP_ALLOCATE, MOP_ALLOCATE_W_SAT, MOP_ALLOCATE_ORELSE_RESERVE, MOP_SATISFIABILITY };

typedef struct matcher matcher;

/* policy: a name (first, high, ...) or "policy=high node_centric=true ...";
 * format: MFMT_* (match_writers.h) of the resources each match writes */
matcher *m_new(mgraph *g, const char *policy, int format, char *err, size_t errlen);
void m_free(matcher *m);
/* 0 when policy is one the matcher knows, else -1 and the reason in err */
int m_check_policy(const char *policy, char *err, size_t errlen);

typedef struct mresult {
    bool matched;            /* allocated or reserved */
    bool satisfiable;
    bool reserved;
    bool counted;            /* the job id was used */
    int64_t jobid;
    int64_t at;
    char *R;                 /* the matched resources in the matcher's format ("" none) */
    char *info;              /* the INFO block */
    char *text;              /* R + info: resource-query's -t text of this command */
    char *msgs;              /* what resource-query prints on stderr for it ("" none) */
    char err[256];           /* when the command is an error rather than a verdict
                              * (its id unused): why, one line; else "" */
} mresult;

/* Runs one match command on a jobspec's text, as resource-query's `match
 * OP FILE` does: the jobspec read as Fluxion reads it, Fluxion's traversal,
 * its job ids, output and error lines. */
void m_match(matcher *m, int op, const char *text, size_t len, mresult *r);
void m_result_free(mresult *r);
int64_t m_next_jobid(const matcher *m);
/* Undoes every job from jobid on (cancels them) and makes jobid the next id
 * again: a trial match (fits:now) leaves no trace in the job ids. */
void m_rewind(matcher *m, int64_t jobid);
/* 0 ok, -1 no such job.  visits (may be NULL): the vertices the cancel
 * walk visits and those it finishes, as resource-query's `cancel N stats`
 * prints them. */
int m_cancel(matcher *m, int64_t jobid, unsigned visits[2]);
/* info: state "ALLOCATED" / "RESERVED" / "CANCELED"; -1 when unknown */
int m_info(const matcher *m, int64_t jobid, const char **state, int64_t *at, bool *reserved);

#endif
