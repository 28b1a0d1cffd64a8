/* The matcher's scoring: what each visited vertex hands to its parent, as
 * Fluxion's scoring_api_t / evals_t keep it (dfu_match_id_based.cpp).  Per
 * resource type, a list of candidates ("edge groups": a score, how many
 * they offer, the edges to take), the counts of qualified and all
 * candidates, and the best k chosen by the policy's order.  The traversal
 * (match_dfu.c) fills and reads these; the order of equal scores is
 * std::sort's (match_sort.h), so ties come out as in Fluxion.
 *
 * The few calls made once per candidate are inline here; the rest live in
 * match_score.c. */
#ifndef FLUENCE_MATCH_SCORE_H
#define FLUENCE_MATCH_SCORE_H
#include <stdbool.h>
#include <stdint.h>

/* An edge a candidate takes: an index into mgraph.children (UINT32_MAX:
 * the root's own), how much it offers and how much of it is needed. */
typedef struct evedge {
    uint32_t edge;
    unsigned count, needs, excl;
} evedge;

typedef struct egroup {
    int64_t score;
    unsigned count, needs, excl;
    bool root;
    const char *label;
    evedge *edges;
    uint32_t nedges;
} egroup;

/* The candidates of one type; iter walks them (sc_next). */
typedef struct evals {
    int32_t type;
    egroup *g;
    uint32_t n, cap;
    unsigned qual, total, best_k, best_i;
    uint32_t iter;
    bool iter_reset;
} evals;

typedef struct scoring {
    evals *t;
    int nt, cap, hint;       /* hint: the type asked for last */
    uint32_t cap_hint;       /* a new list's first capacity (the vertex's children) */
    int64_t overall;
    unsigned avail;
    bool hier;
} scoring;

void sc_init(scoring *s);
void sc_free(scoring *s);
/* The type's candidates, NULL when it has none. */
evals *sc_find(scoring *s, int32_t type);
/* The type's candidates, created when missing (as std::map's operator[]);
 * NULL out of memory.  sc_get is its fast path. */
evals *sc_get_new(scoring *s, int32_t type);
/* Room for one more candidate in e; -1 out of memory. */
int sc_grow(evals *e, uint32_t first_cap);
/* How many candidates of the type qualify (score above 0) / there are
 * (both create the type's list, as operator[] does). */
unsigned sc_qual(scoring *s, int32_t type);
unsigned sc_total(scoring *s, int32_t type);
/* Appends o's candidates to s (o is emptied); -1 out of memory. */
int sc_merge(scoring *s, scoring *o);
/* Orders the type's candidates by the policy (hi: higher scores first;
 * intervals: by runs of consecutive scores, the locality policy's order)
 * and marks the first that make up k as needed; -1 when fewer than k
 * qualify, or out of memory. */
int sc_choose_best_k(scoring *s, int32_t type, unsigned k, bool hi, bool intervals);

static inline evals *sc_get(scoring *s, int32_t type)
{
    if (s->hint < s->nt && s->t[s->hint].type == type) return &s->t[s->hint];
    return sc_get_new(s, type);
}

/* inline: once per candidate of every match */
static inline int sc_add(scoring *s, int32_t type, const egroup *g)
{
    evals *e = sc_get(s, type);
    if (!e) return -1;
    e->total += g->count;
    if (g->score > 0) e->qual += g->count; /* cutline 0: every matched vertex (MATCH_MET and up) */
    if (e->n == e->cap && sc_grow(e, s->cap_hint) < 0) return -1;
    e->g[e->n++] = *g;
    return 0;
}

/* The next candidate of e's iteration (Fluxion's evals iterator). */
static inline egroup *sc_next(evals *e)
{
    if (e->iter_reset) {
        e->iter = 0;
        e->iter_reset = false;
    } else if (e->iter < e->n) {
        e->iter++;
    }
    return e->iter < e->n ? &e->g[e->iter] : NULL;
}

#endif
