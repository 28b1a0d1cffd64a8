/* resource-query's match writers (match_writers.c): what one match emitted,
 * as the simple, rv1, rv1_nosched or jgf text; and a whole graph as JGF. */
#ifndef FLUENCE_MATCH_WRITERS_H
#define FLUENCE_MATCH_WRITERS_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "match_graph.h"

/* resource-query's match formats (-F) */
enum { MFMT_SIMPLE, MFMT_RV1, MFMT_RV1_NOSCHED, MFMT_JGF };
/* MFMT_* of a format's name, -1 when unknown; and the name of one */
int mw_format(const char *name);
const char *mw_format_name(int format);

/* What one match emitted, in resource-query's order: vertices post-order
 * (children before parents; a vertex reached through two parents twice)
 * with the amount taken and exclusivity, and the edges followed, each right
 * after its target's subtree. */
typedef struct memit {
    uint32_t *verts;
    unsigned *needs;
    uint8_t *excl;
    char **label;            /* per vertex, its label when emitted (NULL: none) */
    uint32_t n, cap, lcap;
    uint32_t *esrc, *etgt;
    uint32_t ne, ecap;
    int oom;
} memit;

/* The rv1 / rv1_nosched / jgf text of an emission (malloc'd, "" when the
 * format has nothing to say, NULL on error with errno set).  pending: what
 * earlier rv1 emissions without R_lite left in Fluxion's writer (they open
 * the next rv1 graph), kept by the caller across matches. */
char *mw_write(const mgraph *g, const memit *e, int format, int64_t starttime, int64_t expiration, memit *pending);
/* frees what a memit holds (and empties it) */
void mw_pending_free(memit *pending);
/* Emits vertex v (taking needs of it, exclusively or not, under a label or
 * NULL) and an edge followed; out of memory sets e->oom. */
void mw_vertex(memit *e, uint32_t v, unsigned needs, bool excl, const char *label);
void mw_edge(memit *e, uint32_t src, uint32_t tgt);
/* The whole graph as a JGF document (compact), e.g. to hand it to Fluxion. */
char *mw_graph_jgf(const mgraph *g);

#endif
