/* The matcher: Fluxion's depth-first-and-up (DFU) traversal, reproduced.
 *
 * select(): walk the containment tree depth first.  Each visited vertex
 * returns to its parent a scoring object: per resource type, a list of
 * "edge groups" (a candidate: score, available count, the edges to take).
 * A vertex whose type matches a jobspec resource with children chooses the
 * best k candidates of each child type (sort by score with the policy's
 * comparator, exactly as std::sort would order them) and marks the chosen
 * edges with the current sequence number ("enforce"); other vertices pass
 * their candidates up ("merge").  Slots gather whole vertices into slot
 * candidates.  At the root the top-level resources are chosen and the path
 * up to the root is marked.  update(): a second walk follows the marked
 * edges, allocates (planner spans on vertices) and emits the vertices in
 * post-order, which is resource-query's output order.
 *
 * Scores are the vertex id + 1 (plus, for node-centric policies, a factor
 * of the enclosing node); "high" prefers larger scores, "low" smaller.
 * Policies with stop_on_1_matches (first, firstnodex) visit children by
 * decreasing (weight, uniq_id) and stop once enough is found.
 *
 * Time: every vertex keeps spans [start, end) of its allocations and
 * reservations; allocate_orelse_reserve retries at the end times of
 * existing jobs, earliest first. */
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "mbuf.h"
#include "match_dfu.h"
#include "match_jobspec_fluxion.h"
#include "match_score.h"
#include "match_writers.h"

/* Fluxion's values (matcher.hpp): every matched vertex scores MATCH_MET plus
 * its policy's score, so a slot's score (MATCH_MET plus the sum of what it
 * holds) counts how many vertices it holds, not only their ids */
#define MATCH_MET 1
#define MATCH_UNMET 0
#define GRAPH_END INT64_C(3153600000) /* 100 years: resource-query's graph */
#define ROOT_EDGE UINT32_MAX

enum { AT_ALLOC, AT_RESERVE, AT_SAT };
/* scoring: vertex ids (first, high, low, ...), ids with contiguous runs
 * chosen first at the root (locality), the perf_class property (variation) */
enum { POL_ID, POL_LOCALITY, POL_VARIATION };
enum { SP_ALLOC, SP_RESERVE, SP_X };

/* --------------------------------------------------------------- helpers */

/* A bump arena for edge arrays of one match. */
typedef struct arena_blk {
    struct arena_blk *next;
    size_t used, cap;
    char data[];
} arena_blk;

static void *arena_grow(arena_blk **a, size_t n)
{
    size_t cap = n > 65536 ? n : 65536;
    arena_blk *b = malloc(sizeof *b + cap);
    if (!b) return NULL;
    b->next = *a;
    b->used = n;
    b->cap = cap;
    *a = b;
    return b->data;
}

/* inline: one per leaf of every match */
static inline void *arena_alloc(arena_blk **a, size_t n)
{
    n = (n + 15) & ~(size_t)15;
    if (!*a || (*a)->used + n > (*a)->cap) return arena_grow(a, n);
    void *p = (*a)->data + (*a)->used;
    (*a)->used += n;
    return p;
}

static void arena_free(arena_blk **a)
{
    while (*a) {
        arena_blk *n = (*a)->next;
        free(*a);
        *a = n;
    }
}

/* ---------------------------------------------------------------- jobspec */

typedef struct cres {
    int32_t type;
    bool slot;
    unsigned min, max;
    char oper;
    int operand;
    int excl;
    const char *label;
    struct cres *with;
    int nwith;
    /* Fluxion's user_data (prime_jobspec): how much of each pruning type
     * one of this resource holds below it (has_ud: any entry at all) */
    int64_t *ud;
    bool has_ud;
} cres;

static unsigned calc_count(const cres *r, unsigned qc)
{
    if (r->min > r->max || r->min > qc) return 0;
    unsigned count = 0, cur = r->min;
    switch (r->oper) {
    case '+': {
        count = qc < r->max ? qc : r->max;
        unsigned range = count - cur;
        count -= range % (unsigned)r->operand;
        break;
    }
    case '*':
        if (r->operand == 1) count = cur;
        else
            while (cur <= qc && cur <= r->max) {
                count = cur;
                if (cur > UINT_MAX / (unsigned)r->operand) break;
                cur *= (unsigned)r->operand;
            }
        break;
    case '^':
        if (r->operand < 2 || cur == 1) count = cur;
        else
            while (cur <= qc && cur <= r->max) {
                unsigned base = cur;
                count = cur;
                int of = 0;
                for (int i = 1; i < r->operand; i++) {
                    if (cur > UINT_MAX / base) {
                        of = 1;
                        break;
                    }
                    cur *= base;
                }
                if (of) break;
            }
        break;
    default:
        break;
    }
    return count;
}

static unsigned eff_max(const cres *r)
{
    return calc_count(r, UINT_MAX);
}

/* ---------------------------------------------------------------- matcher */

typedef struct span {
    int64_t jobid, start, end, amount;
    int kind;
} span;

typedef struct vstate {
    span *s;
    uint32_t n, cap;
    uint64_t color;          /* 2 * epoch: gray (being visited), + 1: black (done) */
    /* the pruning filter's spans here: per job (jobid, start, end) and how
     * much of each pruning type it holds below (m->npt counts) */
    int64_t *agg;
    uint32_t nagg, aggcap;
    /* Fluxion's ephemeral store: the label of the request a selection of
     * that sequence number matched here; kept until a later one labels
     * the vertex again (the writers print it, stale or not) */
    char *label;
    uint64_t label_seq;
} vstate;

/* An edge (an index into mgraph.children: a graph that is a DAG, such as
 * storage shared by a rack and a global unit, reaches a vertex by several
 * edges, and the choice is made per edge, as in Fluxion). */
typedef struct estate {
    uint64_t seq;            /* chosen by the match of this sequence number */
    unsigned needs;
    uint8_t excl;
    uint64_t weight;         /* stop_on_1 policies visit edges by decreasing weight */
} estate;

typedef struct job {
    int64_t id;
    int state;               /* 0 allocated, 1 reserved, 2 canceled */
    bool ghost;              /* its writer failed: it holds what it matched, and
                              * Fluxion never knew it as a job (info, cancel) */
    int64_t at, duration;
    uint32_t *verts;
    uint32_t nverts, cap;
} job;

struct matcher {
    mgraph *g;
    vstate *st;
    estate *es;              /* per edge */
    uint32_t *esrc;          /* per edge: its source vertex */
    uint64_t *fin_seq;       /* per vertex, made when first needed: the match that marked
                              * the reverse edge that is its first in-edge */
    uint64_t epoch;          /* of the colors of the current traversal */
    /* policy */
    bool high, node_centric, node_exclusive, stop_on_1;
    int kind;                /* POL_ID, POL_LOCALITY, POL_VARIATION */
    int format;              /* MFMT_* */
    /* state */
    bool writer_broken;      /* rv1: Fluxion's writer failed once, and keeps failing */
    memit pending;           /* rv1: vertices Fluxion's jgf writer still holds */
    uint8_t *known;          /* per type id at creation: some vertex has that type */
    int nknown;
    int64_t counter;
    uint64_t seq;
    job *jobs;
    size_t njobs, jobcap;
    /* per-match */
    int alloc_type;
    int64_t at, duration;
    const mj_cons *constraint;
    int32_t slot_type;
    int32_t *xtypes;
    int nxtypes;
    int64_t ml_scores, last_factor;
    arena_blk *arena;
    evedge *scratch;         /* dom_slot's edges of one slot, reused */
    uint32_t scratch_cap;
    unsigned root_needs;
    bool root_excl;
    uint64_t root_seq;
    unsigned preorder;
    unsigned trav_level;     /* Fluxion's m_trav_level: the update walk's depth, which
                              * a failed planner span leaves one deeper (upd_dfv) */
    /* What Fluxion's traverser leaves for resource-query to read after a
     * match: errno as its C code sets it (before a command, ENOTTY: what
     * resource-query's readline leaves when stdin is not a terminal) and
     * the error text it gathered (printed only when the match fails). */
    int fx_errno;
    mbuf fx_msg;
    /* Fluxion's pruning filter (prime_pruning_filter, ALL:core,ALL:node):
     * pruning types 0 core, 1 node, then the types of the graph's leaves,
     * which the cluster counts; per vertex with out-edges, the totals under
     * it (tot, npt a vertex) */
    int npt;
    int32_t *pt;             /* pruning index -> type id */
    int32_t *pt_of;          /* type id (as of m_new) -> pruning index, -1 */
    int npt_of;
    int64_t *tot;
    int32_t cluster_type, storage_node_type;
    int64_t *dfv;            /* the request's aggregate (prime_jobspec) */
    bool labels;             /* a request other than a slot has a label */
    /* what a leaf of one type under one request list is (dom_dfv): the
     * siblings of a node's leaves are mostly of its type */
    struct leafmemo {
        const void *R;
        int nR, sm;
        int32_t type, back;
        uint64_t seq;
        bool pristine, excl, valid, x_in, takes_with, labeled, slotty;
    } leaf;
};

static int parse_policy(matcher *m, const char *policy, char *err, size_t errlen)
{
    static const struct {
        const char *name, *spec;
    } named[] = {
        {"first", "policy=high node_centric=true stop_on_1_matches=true"},
        {"firstnodex", "policy=high node_centric=true node_exclusive=true stop_on_1_matches=true"},
        {"high", "policy=high"},
        {"low", "policy=low"},
        {"lonode", "policy=low node_centric=true"},
        {"hinode", "policy=high node_centric=true"},
        {"lonodex", "policy=low node_centric=true node_exclusive=true"},
        {"hinodex", "policy=high node_centric=true node_exclusive=true"},
    };
    const char *spec = policy && *policy ? policy : "first";
    for (size_t i = 0; i < sizeof named / sizeof named[0]; i++)
        if (!strcmp(spec, named[i].name)) spec = named[i].spec;
    if (!strcmp(spec, "locality")) {
        m->high = true;
        m->kind = POL_LOCALITY;
        return 0;
    }
    if (!strcmp(spec, "variation")) {
        m->high = false;
        m->kind = POL_VARIATION;
        return 0;
    }
    char *copy = strdup(spec);
    if (!copy) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    int have_policy = 0, rc = 0;
    char *save = NULL;
    for (char *tok = strtok_r(copy, " ", &save); tok; tok = strtok_r(NULL, " ", &save)) {
        char *eq = strchr(tok, '=');
        if (!eq) {
            snprintf(err, errlen, "invalid policy option: %s", tok);
            rc = -1;
            break;
        }
        *eq = 0;
        const char *k = tok, *v = eq + 1;
        if (!strcmp(k, "policy")) {
            if (!strcmp(v, "high")) m->high = true;
            else if (!strcmp(v, "low")) m->high = false;
            else {
                snprintf(err, errlen, "policy key within custom policy accepts only low or high");
                rc = -1;
                break;
            }
            have_policy = 1;
        } else if (!strcmp(k, "node_centric") || !strcmp(k, "node_exclusive") || !strcmp(k, "stop_on_1_matches")) {
            bool b;
            if (!strcmp(v, "true")) b = true;
            else if (!strcmp(v, "false")) b = false;
            else {
                snprintf(err, errlen, "Policy option %s requires true or false, got %s", k, v);
                rc = -1;
                break;
            }
            if (k[5] == 'c') m->node_centric = b;
            else if (k[5] == 'e') m->node_exclusive = b;
            else m->stop_on_1 = b;
        } else {
            snprintf(err, errlen, "invalid policy option: %s", k);
            rc = -1;
            break;
        }
    }
    free(copy);
    if (rc == 0 && !have_policy) {
        snprintf(err, errlen, "unknown match policy: %s", policy);
        rc = -1;
    }
    return rc;
}

int m_check_policy(const char *policy, char *err, size_t errlen)
{
    matcher tmp;
    memset(&tmp, 0, sizeof tmp);
    return parse_policy(&tmp, policy, err, errlen);
}

/* Fluxion's pruning filter, primed (dfu_impl_t::prime_pruning_filter with
 * ALL:core,ALL:node): a depth-first walk from the root, each vertex once,
 * children in edge order.  A leaf (no out-edges at all) of a type not yet
 * counted makes that type counted, by the cluster, from then on; every
 * vertex with out-edges gets the totals of the counted types under it,
 * each passed up as the unsigned int Fluxion passes.  Two walks: the
 * first finds when each leaf type starts to count, the second counts. */
typedef struct primer {
    matcher *m;
    uint8_t *seen;
    uint32_t step;
    uint32_t *since;         /* per pruning index: the step it counts from */
} primer;

static int prime_types(primer *p, uint32_t u)
{
    matcher *m = p->m;
    const mg_vertex *x = &m->g->v[u];
    p->seen[u] = 1;
    p->step++;
    if (x->nchild + x->nback == 0) {
        if (m->pt_of[x->type] < 0) {
            int32_t *t = realloc(m->pt, (size_t)(m->npt + 1) * sizeof *t);
            uint32_t *since = realloc(p->since, (size_t)(m->npt + 1) * sizeof *since);
            if (t) m->pt = t;
            if (since) p->since = since;
            if (!t || !since) return -1;
            m->pt[m->npt] = x->type;
            p->since[m->npt] = p->step;
            m->pt_of[x->type] = m->npt++;
        }
        return 0;
    }
    for (uint32_t k = 0; k < x->nchild; k++) {
        uint32_t c = m->g->children[x->child0 + k];
        if (!p->seen[c] && prime_types(p, c) < 0) return -1;
    }
    return 0;
}

static void prime_counts(primer *p, uint32_t u, int64_t *up)
{
    matcher *m = p->m;
    const mg_vertex *x = &m->g->v[u];
    p->seen[u] = 1;
    p->step++;
    int i = m->pt_of[x->type];
    if (i >= 0 && p->step >= p->since[i]) up[i] += (int64_t)(uint32_t)x->size;
    if (x->nchild + x->nback == 0) return;
    int64_t *mine = &m->tot[(size_t)u * (size_t)m->npt];
    for (uint32_t k = 0; k < x->nchild; k++) {
        uint32_t c = m->g->children[x->child0 + k];
        if (!p->seen[c]) prime_counts(p, c, mine);
    }
    for (int j = 0; j < m->npt; j++) up[j] += (int64_t)(uint32_t)mine[j];
}

static int prime(matcher *m)
{
    mgraph *g = m->g;
    /* cores and nodes count everywhere (Fluxion has the types built in) */
    if (mg_type_id(g, "core", true) < 0 || mg_type_id(g, "node", true) < 0) return -1;
    m->cluster_type = mg_type_id(g, "cluster", false);
    m->storage_node_type = mg_type_id(g, "storage_node", false);
    m->npt_of = g->ntypes;
    m->pt_of = malloc((size_t)g->ntypes * sizeof *m->pt_of);
    m->pt = malloc(2 * sizeof *m->pt);
    primer p = {m, calloc((size_t)g->nv + 1, 1), 0, calloc(2, sizeof *p.since)};
    int rc = -1;
    if (!m->pt_of || !m->pt || !p.seen || !p.since) goto out;
    for (int t = 0; t < g->ntypes; t++) m->pt_of[t] = -1;
    m->pt[0] = g->core_type;
    m->pt[1] = g->node_type;
    m->pt_of[g->core_type] = 0;
    m->pt_of[g->node_type] = 1;
    m->npt = 2;
    if (prime_types(&p, (uint32_t)g->root) < 0) goto out;
    if (!(m->tot = calloc((size_t)g->nv * (size_t)m->npt + 1, sizeof *m->tot))) goto out;
    if (!(m->dfv = calloc((size_t)m->npt, sizeof *m->dfv))) goto out;
    memset(p.seen, 0, (size_t)g->nv + 1);
    p.step = 0;
    int64_t *above = calloc((size_t)m->npt, sizeof *above);
    if (!above) goto out;
    prime_counts(&p, (uint32_t)g->root, above);
    free(above);
    rc = 0;
out:
    free(p.seen);
    free(p.since);
    return rc;
}

matcher *m_new(mgraph *g, const char *policy, int format, char *err, size_t errlen)
{
    if (format < MFMT_SIMPLE || format > MFMT_JGF) {
        snprintf(err, errlen, "unknown match format");
        return NULL;
    }
    matcher *m = calloc(1, sizeof *m);
    if (!m) {
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    m->format = format;
    if (parse_policy(m, policy, err, errlen) < 0) {
        free(m);
        return NULL;
    }
    m->g = g;
    m->st = calloc(g->nv ? g->nv : 1, sizeof *m->st);
    if (!m->st) {
        free(m);
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    uint32_t nedges = 0;
    for (uint32_t v = 0; v < g->nv; v++) nedges += g->v[v].nchild;
    m->es = calloc(nedges ? nedges : 1, sizeof *m->es);
    m->esrc = malloc((nedges ? nedges : 1) * sizeof *m->esrc);
    if (!m->es || !m->esrc) {
        free(m->es);
        free(m->esrc);
        free(m->st);
        free(m);
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    for (uint32_t e = 0; e < nedges; e++) m->es[e].weight = UINT64_MAX; /* untouched edges first */
    for (uint32_t v = 0; v < g->nv; v++)
        for (uint32_t k = 0; k < g->v[v].nchild; k++) m->esrc[g->v[v].child0 + k] = v;
    m->nknown = g->ntypes;
    m->known = calloc((size_t)g->ntypes + 1, 1);
    if (!m->known) {
        free(m->es);
        free(m->esrc);
        free(m->st);
        free(m);
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    for (uint32_t v = 0; v < g->nv; v++) m->known[g->v[v].type] = 1;
    m->counter = 1;
    if (prime(m) < 0) {
        m_free(m);
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    return m;
}

void m_free(matcher *m)
{
    if (!m) return;
    for (uint32_t v = 0; v < m->g->nv; v++) {
        free(m->st[v].s);
        free(m->st[v].agg);
        free(m->st[v].label);
    }
    free(m->st);
    free(m->es);
    free(m->esrc);
    free(m->fin_seq);
    for (size_t i = 0; i < m->njobs; i++) free(m->jobs[i].verts);
    free(m->jobs);
    free(m->xtypes);
    free(m->known);
    free(m->pt);
    free(m->pt_of);
    free(m->tot);
    free(m->dfv);
    free(m->fx_msg.d);
    mw_pending_free(&m->pending);
    arena_free(&m->arena);
    free(m->scratch);
    free(m);
}

int64_t m_next_jobid(const matcher *m)
{
    return m->counter;
}

/* ----------------------------------------------------------------- planner */

static bool overlaps(const span *s, int64_t at, int64_t d)
{
    return s->start < at + d && at < s->end;
}

/* Available amount of u during [at, at+d): size minus the peak usage. */
static int64_t plan_avail(const matcher *m, uint32_t u, int64_t at, int64_t d)
{
    const vstate *st = &m->st[u];
    int64_t size = m->g->v[u].size, peak = 0;
    for (uint32_t i = 0; i < st->n; i++) {
        const span *a = &st->s[i];
        if (a->kind == SP_X || !overlaps(a, at, d)) continue;
        int64_t p = a->start > at ? a->start : at, use = 0;
        for (uint32_t j = 0; j < st->n; j++) {
            const span *b = &st->s[j];
            if (b->kind != SP_X && b->start <= p && p < b->end) use += b->amount;
        }
        if (use > peak) peak = use;
    }
    int64_t r = size - peak;
    return r < 0 ? 0 : r;
}

static bool x_busy(const matcher *m, uint32_t u, int64_t at, int64_t d)
{
    const vstate *st = &m->st[u];
    for (uint32_t i = 0; i < st->n; i++)
        if (st->s[i].kind == SP_X && overlaps(&st->s[i], at, d)) return true;
    return false;
}

static bool has_allocation(const matcher *m, uint32_t u)
{
    const vstate *st = &m->st[u];
    for (uint32_t i = 0; i < st->n; i++)
        if (st->s[i].kind == SP_ALLOC) return true;
    return false;
}

static int add_span(matcher *m, uint32_t u, int64_t jobid, int64_t at, int64_t d, int64_t amount, int kind)
{
    vstate *st = &m->st[u];
    if (st->n == st->cap) {
        uint32_t nc = st->cap ? st->cap * 2 : 2;
        span *p = realloc(st->s, (size_t)nc * sizeof *p);
        if (!p) return -1;
        st->s = p;
        st->cap = nc;
    }
    span *s = &st->s[st->n++];
    s->jobid = jobid;
    s->start = at;
    s->end = at + d;
    s->amount = amount;
    s->kind = kind;
    return 0;
}

/* --------------------------------------------------------- RFC 31 match */

static bool hostlist_has(const char *expr, const char *name)
{
    /* "node[1-3,5]" or plain names, comma separated at top level */
    const char *p = expr;
    while (*p) {
        const char *q = p;
        int depth = 0;
        while (*q && (depth || *q != ',')) {
            if (*q == '[') depth++;
            else if (*q == ']') depth--;
            q++;
        }
        const char *br = memchr(p, '[', (size_t)(q - p));
        if (!br) {
            if ((size_t)(q - p) == strlen(name) && !strncmp(p, name, (size_t)(q - p))) return true;
        } else {
            size_t pre = (size_t)(br - p);
            if (!strncmp(name, p, pre)) {
                const char *num = name + pre;
                char *e;
                long val = strtol(num, &e, 10);
                if (e != num && *e == 0) {
                    const char *r = br + 1;
                    while (r < q && *r != ']') {
                        char *e2;
                        long a = strtol(r, &e2, 10), b = a;
                        if (e2 == r) break;
                        size_t width = (size_t)(e2 - r);
                        r = e2;
                        if (*r == '-') {
                            b = strtol(r + 1, &e2, 10);
                            r = e2;
                        }
                        if (val >= a && val <= b && (width == strlen(num) || num[0] != '0')) return true;
                        if (*r == ',') r++;
                    }
                }
            }
        }
        p = *q ? q + 1 : q;
    }
    return false;
}

static bool idset_has(const char *expr, int64_t v)
{
    const char *p = expr;
    while (*p) {
        char *e;
        long long a = strtoll(p, &e, 10), b = a;
        if (e == p) return false;
        p = e;
        if (*p == '-') {
            b = strtoll(p + 1, &e, 10);
            p = e;
        }
        if (v >= a && v <= b) return true;
        if (*p == ',') p++;
        else if (*p) return false;
    }
    return false;
}

static bool cons_match(const matcher *m, const mj_cons *k, uint32_t u)
{
    const mg_vertex *x = &m->g->v[u];
    switch (k->op) {
    case MJC_TRUE:
        return true;
    case MJC_PROPS:
        for (int i = 0; i < k->nitems; i++) {
            const char *p = k->items[i];
            bool neg = p[0] == '^';
            bool has = mg_has_prop(m->g, u, neg ? p + 1 : p);
            if (has == neg) return false;
        }
        return true;
    case MJC_HOSTLIST:
        for (int i = 0; i < k->nitems; i++)
            if (hostlist_has(k->items[i], mg_str(m->g, x->name))) return true;
        return false;
    case MJC_RANKS:
        for (int i = 0; i < k->nitems; i++)
            if (idset_has(k->items[i], x->rank)) return true;
        return false;
    case MJC_AND:
        for (int i = 0; i < k->nkids; i++)
            if (!cons_match(m, &k->kids[i], u)) return false;
        return true;
    case MJC_OR:
        for (int i = 0; i < k->nkids; i++)
            if (cons_match(m, &k->kids[i], u)) return true;
        return false;
    case MJC_NOT:
        for (int i = 0; i < k->nkids; i++)
            if (cons_match(m, &k->kids[i], u)) return false;
        return true;
    }
    return true;
}

/* -------------------------------------------------------------- traversal */

static bool is_xtype(const matcher *m, int32_t t)
{
    if (m->node_exclusive && t == m->g->node_type) return true;
    for (int i = 0; i < m->nxtypes; i++)
        if (m->xtypes[i] == t) return true;
    return false;
}

/* A failure that Fluxion reports with errno EBUSY (a vertex pruned, a
 * request unmet here): what is left of errno decides, when a match later
 * fails without setting it, whether resource-query counts it a plain
 * failure. */
static int busy(matcher *m)
{
    m->fx_errno = EBUSY;
    return -1;
}

/* Is pruning index i one of the types u's filter counts?  Every vertex
 * counts cores and nodes (but not its own type); a cluster also counts
 * the types of the graph's leaves (Fluxion's get_my_pruning_types). */
static bool pt_counted(const matcher *m, int32_t type, int i)
{
    if (i >= 2) return type == m->cluster_type;
    return m->pt[i] != type;
}

typedef struct aevent {
    int64_t t, c;            /* at time t, c more (a start) or less (an end) */
} aevent;

static int cmp_aevent(const void *a, const void *b)
{
    const aevent *x = a, *y = b;
    if (x->t != y->t) return x->t < y->t ? -1 : 1;
    return (x->c > 0) - (y->c > 0); /* at one time, ends first: they are exclusive */
}

/* The most of pruning index i the jobs hold under u at any time in
 * [at, at + d) (the filter's spans there): a sweep over the spans in the
 * window, or, for a few, their pairs. */
static int64_t agg_peak(const matcher *m, uint32_t u, int i, int64_t at, int64_t d)
{
    const vstate *st = &m->st[u];
    size_t w = 3 + (size_t)m->npt;
    int64_t peak = 0;
    if (st->nagg <= 16) {
        for (uint32_t a = 0; a < st->nagg; a++) {
            const int64_t *ra = &st->agg[a * w];
            if (!(ra[1] < at + d && at < ra[2])) continue;
            int64_t p = ra[1] > at ? ra[1] : at, use = 0;
            for (uint32_t b = 0; b < st->nagg; b++) {
                const int64_t *rb = &st->agg[b * w];
                if (rb[1] <= p && p < rb[2]) use += rb[3 + i];
            }
            if (use > peak) peak = use;
        }
        return peak;
    }
    aevent *ev = malloc(2 * (size_t)st->nagg * sizeof *ev);
    if (!ev) return INT64_MAX; /* no room known: none */
    size_t n = 0;
    for (uint32_t a = 0; a < st->nagg; a++) {
        const int64_t *r = &st->agg[a * w];
        if (!(r[1] < at + d && at < r[2]) || !r[3 + i]) continue;
        ev[n++] = (aevent){r[1] > at ? r[1] : at, r[3 + i]};
        ev[n++] = (aevent){r[2], -r[3 + i]};
    }
    qsort(ev, n, sizeof *ev, cmp_aevent);
    int64_t use = 0;
    for (size_t k = 0; k < n; k++) {
        use += ev[k].c;
        if (ev[k].c > 0 && use > peak) peak = use;
    }
    free(ev);
    return peak;
}

/* Fluxion's by_subplan: room under u, during the match's window, for what
 * one r holds below it (nothing to check for most: leaves, requests with
 * no cores or nodes below).  A vertex without out-edges has no filter. */
static __attribute__((noinline)) bool subplan_room(const matcher *m, uint32_t u, const cres *r)
{
    const mg_vertex *x = &m->g->v[u];
    if (x->nchild + x->nback == 0) return true;
    const int64_t *tot = &m->tot[(size_t)u * (size_t)m->npt];
    for (int i = 0; i < m->npt; i++)
        if (pt_counted(m, x->type, i) && r->ud[i] > tot[i]) return false;
    for (int i = 0; i < m->npt && m->st[u].nagg; i++)
        if (pt_counted(m, x->type, i) && r->ud[i] > 0 &&
            agg_peak(m, u, i, m->at, m->duration) > tot[i] - r->ud[i])
            return false;
    return true;
}

/* Fluxion's prune, in its order: status, constraint (nodes and storage
 * nodes), availability, then for each request naming u's type (by_excl)
 * or a slot, the subtree filter (by_subplan).  avail: u's available
 * amount, as plan_avail gives it (for the caller, which needs it again for
 * a leaf). */
static int prune(matcher *m, bool x_in, uint32_t u, const cres *R, int nR, int64_t *avail)
{
    const mg_vertex *x = &m->g->v[u];
    if (m->alloc_type != AT_SAT && x->status != 0) return busy(m);
    if (m->constraint && (x->type == m->g->node_type || x->type == m->storage_node_type) &&
        !cons_match(m, m->constraint, u))
        return busy(m);
    /* never allocated, reserved or held exclusively (most vertices): all
     * of it is free */
    bool fresh = m->st[u].n == 0;
    *avail = fresh ? (x->size > 0 ? x->size : 0) : plan_avail(m, u, m->at, m->duration);
    if (*avail == 0) return busy(m);
    for (int i = 0; i < nR; i++) {
        const cres *r = &R[i];
        if (x->type != r->type && !r->slot) continue;
        if (!r->slot) {
            if (x_in && r->excl == MJ_X_FALSE) {
                mbuf_printf(&m->fx_msg, "by_excl: exclusivity conflicts at jobspec=%s : vertex=%s",
                            r->label ? r->label : "", mg_str(m->g, x->name));
                m->fx_errno = EINVAL;
                return -1;
            }
            if (!fresh && (x_in || r->excl == MJ_X_TRUE)) {
                if (m->alloc_type == AT_ALLOC && has_allocation(m, u)) return busy(m);
                if (x_busy(m, u, m->at, m->duration)) return busy(m);
            }
        }
        if (r->has_ud && !subplan_room(m, u, r)) return busy(m);
    }
    return 0;
}

enum { SM_RESOURCE, SM_SLOT, SM_NONE, SM_PRISTINE_NONE };

static const cres *test(matcher *m, uint32_t u, const cres *R, int nR, bool *pristine, unsigned *nslots,
                        int *sm, const char **label, int *nnext)
{
    int32_t t = m->g->v[u].type;
    const cres *slot_res = NULL, *match_res = NULL;
    bool matched = false;
    for (int i = 0; i < nR; i++) {
        const cres *r = &R[i];
        if (t == r->type) {
            if (matched) goto sibling;
            match_res = r;
            for (int j = 0; j < r->nwith; j++)
                if (r->with[j].slot) {
                    slot_res = &r->with[j];
                    *nslots = eff_max(slot_res);
                }
            matched = true;
        } else if (r->slot) {
            if (matched) goto sibling;
            slot_res = r;
            *nslots = eff_max(r);
            matched = true;
        }
    }
    if (slot_res) {
        /* every type of the slot among u's out-edges' targets (Fluxion's
         * slot_match: a reverse edge's parent counts too) */
        bool ok = true;
        const mg_vertex *x = &m->g->v[u];
        for (int j = 0; j < slot_res->nwith && ok; j++) {
            bool found = false;
            for (uint32_t k = 0; k < x->nchild && !found; k++)
                found = m->g->v[m->g->children[x->child0 + k]].type == slot_res->with[j].type;
            for (uint32_t k = 0; k < x->nback && !found; k++)
                found = m->g->v[m->g->backs[x->back0 + k]].type == slot_res->with[j].type;
            ok = found;
        }
        if (ok) {
            *sm = SM_SLOT;
            *pristine = false;
            *label = slot_res->label;
            *nnext = slot_res->nwith;
            return slot_res->with;
        }
    }
    if (match_res) {
        *sm = SM_RESOURCE;
        *pristine = false;
        *nnext = match_res->nwith;
        return match_res->with;
    }
    *sm = *pristine ? SM_PRISTINE_NONE : SM_NONE;
    *nnext = nR;
    return R;
sibling:
    mbuf_printf(&m->fx_msg, "test: siblings in jobspec request same resource type : %s.\n", mg_type_name(m->g, t));
    *sm = SM_NONE;
    *nnext = nR;
    return R;
}

static int dom_dfv(matcher *m, const cres *R, int nR, uint32_t u, bool pristine, bool *excl, scoring *to_parent);

/* Visited in this traversal (gray: on the way, black: done): Fluxion's
 * stop_explore, which keeps a DAG's shared vertices to one visit. */
static bool visited(const matcher *m, uint32_t c)
{
    return m->st[c].color >= 2 * m->epoch;
}

static int explore_edge(matcher *m, const cres *R, int nR, uint32_t eidx, bool pristine, bool *excl, scoring *dfu)
{
    uint32_t c = m->g->children[eidx];
    if (visited(m, c)) return -1;
    bool x_inout = *excl;
    if (dom_dfv(m, R, nR, c, pristine, &x_inout, dfu) != 0) return -1;
    evedge *e = arena_alloc(&m->arena, sizeof *e);
    if (!e) return -1;
    e->edge = eidx;
    e->count = e->needs = dfu->avail;
    e->excl = x_inout;
    egroup g = {dfu->overall, dfu->avail, 0, x_inout, false, NULL, e, 1};
    if (sc_add(dfu, m->g->v[c].type, &g) < 0) return -1;
    return 0;
}

typedef struct tally {
    int32_t type;
    unsigned per_share, prev_total, accum, shares;
} tally;

static int cmp_children(const void *a, const void *b, void *arg);

static const matcher *sort_ctx;

static int cmp_children_q(const void *a, const void *b)
{
    return cmp_children(a, b, (void *)sort_ctx);
}

static int cmp_children(const void *a, const void *b, void *arg)
{
    const matcher *m = arg;
    uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b; /* edges */
    uint64_t wx = m->es[x].weight, wy = m->es[y].weight;
    if (wx != wy) return wx > wy ? -1 : 1;
    int64_t ux = m->g->v[m->g->children[x]].uniq_id, uy = m->g->v[m->g->children[y]].uniq_id;
    if (ux != uy) return ux > uy ? -1 : 1;
    return 0;
}

static int explore(matcher *m, uint32_t u, const cres *R, int nR, bool pristine, bool *excl, scoring *dfu,
                   unsigned multiplier)
{
    const mg_vertex *x = &m->g->v[u];
    int rc2 = -1;
    /* the lists of candidates the children add start with room for them all */
    dfu->cap_hint = x->nchild < 4 ? 4 : x->nchild > 1024 ? 1024 : x->nchild;
    if (!m->stop_on_1) {
        for (uint32_t k = 0; k < x->nchild; k++) {
            if (explore_edge(m, R, nR, x->child0 + k, pristine, excl, dfu) == 0) rc2 = 0;
        }
        return rc2;
    }
    /* dynamic: children by decreasing (weight, uniq_id), stop when enough */
    uint32_t n = x->nchild;
    if (n == 0) return -1;
    uint32_t *order = malloc((size_t)n * sizeof *order);
    tally *tl = calloc((size_t)nR + 1, sizeof *tl);
    bool *sat = calloc((size_t)nR + 1, sizeof *sat);
    if (!order || !tl || !sat) {
        free(order), free(tl), free(sat);
        return -1;
    }
    for (uint32_t k = 0; k < n; k++) order[k] = x->child0 + k;
    sort_ctx = m;
    qsort(order, n, sizeof *order, cmp_children_q);
    for (int i = 0; i < nR; i++) {
        tl[i].type = R[i].type;
        tl[i].per_share = eff_max(&R[i]);
    }
    for (uint32_t k = 0; k < n; k++) {
        uint32_t c = order[k]; /* an edge */
        int32_t ct = m->g->v[m->g->children[c]].type;
        bool skip = false;
        for (int i = 0; i < nR; i++)
            if (sat[i] && tl[i].type == ct) skip = true;
        if (skip) continue;
        if (explore_edge(m, R, nR, c, pristine, excl, dfu) != 0) continue;
        for (int i = 0; i < nR; i++) {
            unsigned total = sc_total(dfu, tl[i].type);
            if (total <= tl[i].prev_total) continue;
            unsigned delta = total - tl[i].prev_total;
            tl[i].prev_total = total;
            tl[i].accum += delta;
            if (tl[i].per_share > 0 && tl[i].accum >= tl[i].per_share) {
                tl[i].shares++;
                tl[i].accum = 0;
            }
        }
        bool enough = true;
        for (int i = 0; i < nR; i++) {
            bool s = tl[i].per_share == 0 || tl[i].shares >= multiplier;
            if (s) sat[i] = true;
            else enough = false;
        }
        rc2 = 0;
        if (enough) break;
    }
    free(order);
    free(tl);
    free(sat);
    return rc2;
}

static void mark_edge(matcher *m, uint32_t edge, unsigned needs, unsigned excl)
{
    if (edge == ROOT_EDGE) return;
    m->es[edge].seq = m->seq;
    m->es[edge].needs = needs;
    m->es[edge].excl = (uint8_t)(excl != 0);
}

/* Fluxion's enforce with enforce_unconstrained (at the root): from each
 * chosen edge, up by each vertex's first in-edge (find_parent_edge) until
 * one already marked, marking those that lead to a vertex of a type the
 * request did not constrain.  The first in-edge may be a child's reverse
 * edge (the root's, in a JGF that lists every edge both ways): the walk
 * then goes down to that child and up again, and marks the edge to it,
 * which the update walk follows. */
static void mark_up(matcher *m, scoring *dfu, uint32_t edge)
{
    uint32_t v = m->esrc[edge];
    for (uint32_t guard = 0; guard <= m->g->nv; guard++) {
        const mg_vertex *x = &m->g->v[v];
        if (x->fin_src == UINT32_MAX) break;
        bool reverse = x->fin_edge == UINT32_MAX;
        if (reverse ? m->fin_seq && m->fin_seq[v] == m->seq : m->es[x->fin_edge].seq == m->seq) break;
        uint32_t tgt = v;
        v = x->fin_src;
        evals *te = sc_find(dfu, x->type);
        if (!(te && te->best_k == 0)) continue; /* constrained */
        if (!reverse) {
            mark_edge(m, x->fin_edge, (unsigned)x->size, 0);
        } else if (m->fin_seq || (m->fin_seq = calloc((size_t)m->g->nv, sizeof *m->fin_seq))) {
            m->fin_seq[tgt] = m->seq;
        }
    }
}

static void enforce(matcher *m, scoring *dfu, bool unconstrained)
{
    for (int ti = 0; ti < dfu->nt; ti++) {
        evals *e = &dfu->t[ti];
        if (!e->best_k) continue;
        for (unsigned i = 0; i < e->best_i && i < e->n; i++) {
            egroup *g = &e->g[i];
            if (g->root) continue;
            for (uint32_t j = 0; j < g->nedges; j++) {
                evedge *ed = &g->edges[j];
                mark_edge(m, ed->edge, ed->needs, ed->excl);
                if (unconstrained && ed->edge != ROOT_EDGE) mark_up(m, dfu, ed->edge);
            }
        }
    }
}

static int resolve(matcher *m, scoring *dfu, scoring *to_parent)
{
    if (dfu->overall > MATCH_UNMET) {
        if (dfu->hier) enforce(m, dfu, false);
        else return sc_merge(to_parent, dfu);
    }
    return 0;
}

static int dom_slot(matcher *m, uint32_t u, const cres *shape, int nshape, unsigned nslots, bool pristine,
                    const char *label, scoring *dfu)
{
    bool x_inout = true;
    scoring ds;
    sc_init(&ds);
    unsigned qual = 0;
    egroup *vec = NULL;
    if (explore(m, u, shape, nshape, pristine, &x_inout, &ds, nslots) != 0) goto done;
    /* dom_finish_slot: choose all of every type */
    for (int i = 0; i < ds.nt; i++) {
        int32_t t = ds.t[i].type;
        /* variation's dom_finish_slot (choose_accum_all) orders with the
         * default comparator, higher scores first */
        sc_choose_best_k(&ds, t, ds.t[i].qual, m->kind == POL_VARIATION ? true : m->high, false);
    }
    /* each shape's candidates, found once (sc_get may move ds.t: all are
     * made before any is kept) and the count it asks of them */
    evals *stack_ev[8];
    unsigned stack_cnt[8];
    evals **ev = nshape <= 8 ? stack_ev : malloc((size_t)nshape * sizeof *ev);
    unsigned *cnt = nshape <= 8 ? stack_cnt : malloc((size_t)nshape * sizeof *cnt);
    if (!ev || !cnt) goto shapes_done;
    for (int i = 0; i < nshape; i++)
        if (!sc_get(&ds, shape[i].type)) goto shapes_done;
    for (int i = 0; i < nshape; i++) {
        ev[i] = sc_get(&ds, shape[i].type);
        cnt[i] = calc_count(&shape[i], ev[i]->qual);
    }
    /* cnt_slot */
    qual = UINT_MAX;
    for (int i = 0; i < nshape; i++) {
        unsigned shares = 0, accum = 0;
        if (cnt[i] != 0) {
            egroup *g;
            while ((g = sc_next(ev[i]))) {
                accum += g->edges[0].count;
                if (accum >= cnt[i]) {
                    shares++;
                    accum = 0;
                }
            }
        }
        unsigned fit = cnt[i] == 0 ? 0 : shares;
        if (fit < qual) qual = fit;
        ev[i]->iter_reset = true;
    }
    if (qual == UINT_MAX) qual = 0;
    if (qual) {
        vec = calloc(qual, sizeof *vec);
        if (!vec) {
            qual = 0;
            goto shapes_done;
        }
    }
    for (unsigned s = 0; s < qual; s++) {
        /* the slot's edges, gathered in m->scratch, then kept in the arena */
        int64_t score = MATCH_MET;
        uint32_t ne = 0;
        for (int i = 0; i < nshape; i++) {
            for (unsigned j = 0; j < cnt[i];) {
                egroup *g = sc_next(ev[i]);
                if (!g) {
                    qual = 0;
                    goto shapes_done;
                }
                if (ne == m->scratch_cap) {
                    uint32_t nc = m->scratch_cap ? 2 * m->scratch_cap : 64;
                    evedge *p = realloc(m->scratch, nc * sizeof *p);
                    if (!p) {
                        qual = 0;
                        goto shapes_done;
                    }
                    m->scratch = p;
                    m->scratch_cap = nc;
                }
                evedge *ed = &m->scratch[ne++];
                ed->edge = g->edges[0].edge;
                ed->count = ed->needs = g->edges[0].count;
                ed->excl = 1;
                score += g->score;
                j += g->edges[0].count;
            }
        }
        evedge *ae = arena_alloc(&m->arena, (ne ? ne : 1) * sizeof *ae);
        if (!ae) {
            qual = 0;
            goto shapes_done;
        }
        if (ne) memcpy(ae, m->scratch, ne * sizeof *ae);
        vec[s].score = score;
        vec[s].count = 1;
        vec[s].excl = 1;
        vec[s].label = label;
        vec[s].edges = ae;
        vec[s].nedges = ne;
    }
shapes_done:
    if (ev != stack_ev) free(ev);
    if (cnt != stack_cnt) free(cnt);
    if (!ev || !cnt) qual = 0;
    for (unsigned s = 0; s < qual; s++)
        if (sc_add(dfu, m->slot_type, &vec[s]) < 0) {
            qual = 0;
            break;
        }
done:
    free(vec);
    sc_free(&ds);
    return qual ? 0 : -1;
}

/* std::stoi of the perf_class property, 9999 when absent, not a number or
 * outside 0..9999 (var_aware_t) */
static __attribute__((noinline)) int64_t perf_class(const matcher *m, uint32_t u)
{
    const mg_vertex *x = &m->g->v[u];
    for (uint32_t p = 0; p < x->nprop; p++) {
        if (strcmp(mg_str(m->g, m->g->props[2 * (x->prop0 + p)]), "perf_class")) continue;
        const char *v = mg_str(m->g, m->g->props[2 * (x->prop0 + p) + 1]);
        char *end;
        errno = 0;
        long n = strtol(v, &end, 10);
        if (end == v || errno == ERANGE || n < INT_MIN || n > INT_MAX || n < 0 || n > 9999) return 9999;
        return n;
    }
    return 9999;
}

/* A matched vertex's score above MATCH_MET */
static inline int64_t vertex_score(const matcher *m, uint32_t u)
{
    if (m->kind == POL_VARIATION) return perf_class(m, u);
    return m->ml_scores + m->g->v[u].id + 1;
}

static int finish_vtx(matcher *m, uint32_t u, const cres *R, int nR, scoring *dfu)
{
    const mg_vertex *x = &m->g->v[u];
    int64_t score = MATCH_MET;
    for (int i = 0; i < nR && score == MATCH_MET; i++) {
        if (R[i].type != x->type) continue;
        for (int j = 0; j < R[i].nwith; j++) {
            const cres *c = &R[i].with[j];
            unsigned qc = sc_qual(dfu, c->type);
            unsigned count = calc_count(c, qc);
            if (count == 0) {
                score = MATCH_UNMET;
                break;
            }
            sc_choose_best_k(dfu, c->type, count, m->high, false);
        }
    }
    if (m->node_centric && x->type == m->g->node_type) m->ml_scores -= m->last_factor;
    dfu->overall = score == MATCH_MET ? score + vertex_score(m, u) : score;
    return score == MATCH_MET ? 0 : busy(m);
}

/* A node's score factor under a node-centric policy (Fluxion's
 * multilevel_id_t::dom_discover_vtx and calc_factor: (id + 2) * 10000 plus
 * a tie-breaker from its uniq_id).  A node it cannot score is skipped: an
 * id below -1 silently, a negative uniq_id with EINVAL, an overflow with
 * EOVERFLOW. */
static inline int node_factor(matcher *m, uint32_t u)
{
    const mg_vertex *x = &m->g->v[u];
    if (x->id < -1) return -1;
    int64_t base = x->id + 1, tie = x->uniq_id;
    if (tie < 0) {
        m->fx_errno = EINVAL;
        return -1;
    }
    if (base > INT64_MAX - 1 || base + 1 > INT64_MAX / 10000) {
        m->fx_errno = EOVERFLOW;
        return -1;
    }
    int64_t mul = (base + 1) * 10000;
    tie = tie % 10000 - 1;
    if (tie < 0) tie = -tie;
    if (mul > INT64_MAX - tie) {
        m->fx_errno = EOVERFLOW;
        return -1;
    }
    m->last_factor = mul + tie;
    m->ml_scores += m->last_factor;
    return 0;
}

/* A vertex a selection passed: the label of the request of its type goes
 * into its ephemeral store (Fluxion's dom_dfv, last step), which a later
 * selection's label replaces.  A second label in one selection fails the
 * vertex (EEXIST). */
static int put_label(matcher *m, uint32_t u, const cres *R, int nR)
{
    if (!m->labels) return 0;
    vstate *st = &m->st[u];
    for (int i = 0; i < nR; i++) {
        if (R[i].type != m->g->v[u].type || !R[i].label || !*R[i].label) continue;
        if (st->label_seq < m->seq) {
            free(st->label);
            st->label = NULL;
        }
        st->label_seq = m->seq;
        if (st->label) {
            mbuf_printf(&m->fx_msg, "dom_dfv: inserting label into ephemeral failed.\n%s.\n", strerror(EEXIST));
            m->fx_errno = EEXIST;
            return -1;
        }
        if (!(st->label = strdup(R[i].label))) {
            mbuf_printf(&m->fx_msg, "dom_dfv: inserting label into ephemeral failed.\n%s.\n", strerror(ENOMEM));
            m->fx_errno = ENOMEM;
            return -1;
        }
    }
    return 0;
}

/* What the other out-edges of x lead to, for slot matching: -1 nothing,
 * a type for one, -2 more */
static inline int32_t back_type(const matcher *m, const mg_vertex *x)
{
    return x->nback == 0 ? -1 : x->nback == 1 ? m->g->v[m->g->backs[x->back0]].type : -2;
}

/* A leaf (nothing below to choose from): what dom_dfv computes for one,
 * with what depends only on its type, the request list and the flags passed
 * down -- exclusivity, test(), a request with children -- remembered from
 * the previous leaf of that type (test() on a sibling conflict writes an
 * error message: such a verdict is never remembered). */
static int dom_leaf(matcher *m, const cres *R, int nR, uint32_t u, bool pristine, bool *excl, scoring *to_parent)
{
    const mg_vertex *x = &m->g->v[u];
    struct leafmemo *lm = &m->leaf;
    /* slot matching looks at the targets of a vertex's other out-edges too
     * (a reverse edge to its parent): where a slot may match, the memo
     * holds for one such target */
    bool hit = lm->valid && lm->R == R && lm->nR == nR && lm->type == x->type && lm->pristine == pristine &&
               lm->excl == *excl && lm->seq == m->seq;
    if (hit && lm->slotty) hit = lm->back == back_type(m, x);
    if (!hit) {
        bool x_in = *excl;
        for (int i = 0; i < nR; i++)
            if (R[i].type == x->type && R[i].excl == MJ_X_TRUE) x_in = true;
        bool pres = pristine;
        unsigned nslots = 0;
        int sm, nnext;
        const char *label = NULL;
        test(m, u, R, nR, &pres, &nslots, &sm, &label, &nnext);
        bool with = false;
        for (int i = 0; i < nR; i++)
            if (R[i].type == x->type && R[i].nwith > 0) with = true;
        bool labeled = false, slotty = false;
        for (int i = 0; i < nR; i++) {
            if (R[i].type == x->type && R[i].label && *R[i].label) labeled = true;
            if (R[i].slot) slotty = true;
            for (int j = 0; j < R[i].nwith; j++) slotty = slotty || R[i].with[j].slot;
        }
        int32_t back = slotty ? back_type(m, x) : -1;
        *lm = (struct leafmemo){R, nR, sm, x->type, back, m->seq, pristine, *excl, sm != SM_NONE && back != -2, x_in,
                                with, labeled, slotty};
        if (sm == SM_NONE) {
            m->preorder++;
            return busy(m);
        }
    }
    m->preorder++;
    int64_t lavail;
    if (prune(m, lm->x_in, u, R, nR, &lavail) < 0) return -1;
    m->st[u].color = 2 * m->epoch + 1; /* gray, then black at once */
    /* a request with children on a leaf: its counts unmet (dom_finish_vtx) */
    if (lm->takes_with) return busy(m);
    if (lm->labeled && put_label(m, u, R, nR) < 0) return -1;
    *excl = lm->x_in;
    to_parent->avail = (unsigned)lavail;
    to_parent->overall = MATCH_MET + vertex_score(m, u);
    return 0;
}

static int dom_dfv(matcher *m, const cres *R, int nR, uint32_t u, bool pristine, bool *excl, scoring *to_parent)
{
    const mg_vertex *x = &m->g->v[u];
    if (x->nchild == 0 && !(m->node_centric && x->type == m->g->node_type))
        return dom_leaf(m, R, nR, u, pristine, excl, to_parent);
    bool x_in = *excl;
    for (int i = 0; i < nR; i++)
        if (R[i].type == x->type && R[i].excl == MJ_X_TRUE) x_in = true;
    /* a node-exclusive policy takes whole nodes in the update walk (is_xtype);
     * the selection sees only the jobspec's own exclusivity, as Fluxion */
    bool x_inout = x_in, pres = pristine;
    unsigned nslots = 0;
    int sm, nnext;
    const char *label = NULL;
    const cres *next = test(m, u, R, nR, &pres, &nslots, &sm, &label, &nnext);
    m->preorder++;
    if (sm == SM_NONE) return busy(m);
    int64_t lavail;
    if (prune(m, x_in, u, R, nR, &lavail) < 0) return -1;
    if (m->node_centric && x->type == m->g->node_type && node_factor(m, u) < 0) return -1;
    m->st[u].color = 2 * m->epoch; /* gray: explored from here on */
    if (x->nchild == 0 && !(m->node_centric && x->type == m->g->node_type)) {
        m->st[u].color = 2 * m->epoch + 1;
        /* a leaf: what the general path computes, without the scoring
         * machinery (nothing below to choose from) */
        for (int i = 0; i < nR; i++)
            if (R[i].type == x->type && R[i].nwith > 0) return busy(m);
        if (put_label(m, u, R, nR) < 0) return -1;
        /* plan_avail again would give prune's: nothing changed in between */
        *excl = x_in;
        to_parent->avail = (unsigned)lavail;
        to_parent->overall = MATCH_MET + vertex_score(m, u);
        return 0;
    }
    scoring dfu;
    sc_init(&dfu);
    if (sm == SM_SLOT) dom_slot(m, u, next, nnext, nslots, pres, label, &dfu);
    else explore(m, u, next, nnext, pres, &x_inout, &dfu, 1);
    m->st[u].color = 2 * m->epoch + 1; /* black */
    *excl = x_in;
    int64_t avail = plan_avail(m, u, m->at, m->duration);
    int rc = -1;
    if (avail == 0) {
        busy(m);
        goto out;
    }
    if (finish_vtx(m, u, R, nR, &dfu) != 0) goto out;
    if (resolve(m, &dfu, to_parent) != 0) goto out;
    to_parent->avail = (unsigned)avail;
    to_parent->overall = dfu.overall;
    if (put_label(m, u, R, nR) < 0) goto out;
    rc = 0;
out:
    sc_free(&dfu);
    return rc;
}

static int select_at(matcher *m, const cres *R, int nR, bool excl)
{
    uint32_t root = (uint32_t)m->g->root;
    m->seq++;
    m->epoch++; /* fresh colors */
    m->preorder = 0;
    m->ml_scores = 0;
    arena_free(&m->arena);
    scoring dfu;
    sc_init(&dfu);
    bool x_in = excl;
    int rc = dom_dfv(m, R, nR, root, true, &x_in, &dfu);
    if (rc == 0) {
        evedge *e = arena_alloc(&m->arena, sizeof *e);
        if (!e) {
            rc = -1;
            goto out;
        }
        e->edge = ROOT_EDGE;
        e->count = e->needs = dfu.avail;
        e->excl = excl;
        egroup g = {dfu.overall, dfu.avail, 0, excl, true, NULL, e, 1};
        sc_add(&dfu, m->g->v[root].type, &g);
        /* resolve_graph */
        int64_t score = MATCH_MET;
        for (int i = 0; i < nR; i++) {
            unsigned qc = sc_qual(&dfu, R[i].type);
            unsigned count = calc_count(&R[i], qc);
            if (count == 0) {
                score = MATCH_UNMET;
                break;
            }
            sc_choose_best_k(&dfu, R[i].type, count, m->high, m->kind == POL_LOCALITY);
        }
        dfu.overall = score;
        m->ml_scores = 0;
        unsigned needs = 1;
        if (score != MATCH_MET) rc = -1;
        for (int i = 0; rc == 0 && i < nR; i++)
            if (R[i].type == m->g->v[root].type) {
                unsigned count = calc_count(&R[i], dfu.avail);
                if (count == 0) rc = -1;
                else needs = count;
            }
        for (int i = 0; rc == 0 && i < dfu.nt; i++)
            if (dfu.t[i].qual == 0) rc = -1;
        if (rc == 0) enforce(m, &dfu, true);
        else m->fx_errno = ENODEV; /* Fluxion's select: resolve_graph failing is "never" */
        m->root_needs = needs;
        m->root_excl = x_in;
        m->root_seq = m->seq;
    }
out:
    sc_free(&dfu);
    return rc;
}

/* ------------------------------------------------------------------ update */

typedef struct emit {
    mbuf simple;              /* the simple format, written as we go */
    memit e;                 /* what the other formats are written from */
} emit;

static void emit_free(emit *out)
{
    free(out->simple.d);
    mw_pending_free(&out->e);
}

static job *find_job(matcher *m, int64_t id)
{
    for (size_t i = 0; i < m->njobs; i++)
        if (m->jobs[i].id == id && !m->jobs[i].ghost) return &m->jobs[i];
    return NULL;
}

static int job_touch(job *j, uint32_t v)
{
    if (j->nverts == j->cap) {
        uint32_t nc = j->cap ? j->cap * 2 : 16;
        uint32_t *p = realloc(j->verts, nc * sizeof *p);
        if (!p) return -1;
        j->verts = p;
        j->cap = nc;
    }
    j->verts[j->nverts++] = v;
    return 0;
}

/* The pruning filter's span for a job at u: what it holds of each pruning
 * type below u (Fluxion's upd_agfilter) */
static int add_agg(matcher *m, uint32_t u, int64_t jobid, const int64_t *cnt)
{
    vstate *st = &m->st[u];
    size_t w = 3 + (size_t)m->npt;
    if (st->nagg == st->aggcap) {
        uint32_t nc = st->aggcap ? st->aggcap * 2 : 2;
        int64_t *p = realloc(st->agg, nc * w * sizeof *p);
        if (!p) return -1;
        st->agg = p;
        st->aggcap = nc;
    }
    int64_t *r = &st->agg[st->nagg++ * w];
    r[0] = jobid;
    r[1] = m->at;
    r[2] = m->at + m->duration;
    memcpy(r + 3, cnt, (size_t)m->npt * sizeof *cnt);
    return 0;
}

/* stop_on_1 policies visit a vertex's children by decreasing weight: what
 * is free now of the last type the child's filter counts (nodes, or cores
 * under a node; Fluxion's upd_by_outedges).  A filter never used, with
 * nothing free, leaves the weight alone. */
static void update_weight(matcher *m, uint32_t edge)
{
    uint32_t c = m->g->children[edge];
    const mg_vertex *x = &m->g->v[c];
    if (x->nchild + x->nback == 0) return;
    int i = x->type == m->g->node_type ? 0 : 1;
    int64_t avail = m->tot[(size_t)c * (size_t)m->npt + (size_t)i] - agg_peak(m, c, i, 0, 1);
    if (avail == 0 && m->st[c].nagg == 0) return;
    m->es[edge].weight = (uint64_t)(avail < 0 ? 0 : avail);
}

/* Fluxion's upd_dfv: follows the marked edges, allocates and emits in
 * post-order.  acc: the parent's tally of the pruning types this subtree
 * holds (accum_to_parent; acc_set: any entry), for the filters' spans. */
static int upd_dfv(matcher *m, job *j, emit *out, uint32_t u, unsigned needs, bool excl, bool shadow, int64_t *acc,
                   bool *acc_set)
{
    const mg_vertex *x = &m->g->v[u];
    bool mod = shadow || is_xtype(m, x->type);
    excl = excl || mod;
    m->trav_level++;
    int n = 0;
    int64_t stack_dfu[8], *dfu = m->npt <= 8 ? stack_dfu : calloc((size_t)m->npt, sizeof *dfu);
    bool dfu_set = false;
    if (!dfu) {
        out->e.oom = 1;
        return 0;
    }
    memset(dfu, 0, (size_t)m->npt * sizeof *dfu);
    m->st[u].color = 2 * m->epoch;
    for (uint32_t k = 0; k < x->nchild; k++) {
        uint32_t e = x->child0 + k, c = m->g->children[e];
        const estate *es = &m->es[e];
        if (visited(m, c)) continue;
        if (es->seq != m->seq && !mod) continue;
        bool cx = (es->seq == m->seq && es->excl) || mod;
        unsigned cn = mod ? (unsigned)m->g->v[c].size : es->needs;
        int sub = upd_dfv(m, j, out, c, cn, cx, mod, dfu, &dfu_set);
        if (sub > 0) {
            n += sub;
            if (m->format != MFMT_SIMPLE) mw_edge(&out->e, u, c);
            if (m->stop_on_1 && m->alloc_type != AT_SAT) update_weight(m, e);
        }
    }
    m->st[u].color = 2 * m->epoch + 1;
    if (excl) n++;
    if (n > 0 && j && excl && plan_avail(m, u, m->at, m->duration) < needs) {
        /* Fluxion's upd_plan: a vertex taken whole that cannot hold what
         * is asked (a child of a vertex of an exclusive type, held by
         * another job) fails its planner span.  It counts, is neither held
         * nor printed, and the traversal's level is not given back: every
         * vertex printed after it, in this match and the next ones, is
         * printed one level deeper. */
        mbuf_printf(&m->fx_msg, "upd_plan: planner_add_span returned -1.\n%s\n", strerror(EINVAL));
        m->fx_errno = EINVAL;
        goto out;
    }
    if (n > 0) {
        if (j) {
            if (excl && add_span(m, u, j->id, m->at, m->duration, needs,
                                 m->alloc_type == AT_ALLOC ? SP_ALLOC : SP_RESERVE) < 0)
                out->e.oom = 1;
            if (add_span(m, u, j->id, m->at, m->duration, 1, SP_X) < 0) out->e.oom = 1;
            if (x->nchild + x->nback && dfu_set && add_agg(m, u, j->id, dfu) < 0) out->e.oom = 1;
            if (job_touch(j, u) < 0) out->e.oom = 1;
        }
        /* what the parent's filter counts of this vertex: all of it when
         * held exclusively, else its size less what was asked (sic), as
         * the unsigned int Fluxion passes (accum_to_parent) */
        int p = x->type < m->npt_of ? m->pt_of[x->type] : -1;
        if (p >= 0) {
            acc[p] += (int64_t)(uint32_t)(excl ? x->size : x->size - (int64_t)needs);
            *acc_set = true;
        }
        for (int i = 0; i < m->npt && dfu_set; i++) acc[i] += dfu[i];
        if (dfu_set) *acc_set = true;
        if (m->format == MFMT_SIMPLE) {
            for (unsigned i = 0; i < m->trav_level; i++) mbuf_puts(&out->simple, i ? "---" : "      ---");
            mbuf_printf(&out->simple, "%s[%u:%s]\n", mg_str(m->g, x->name), needs, excl ? "x" : "s");
        }
        mw_vertex(&out->e, u, needs, excl, m->st[u].label);
    }
    m->trav_level--;
out:
    if (dfu != stack_dfu) free(dfu);
    return n;
}

/* --------------------------------------------------------------------- run */

static void cres_free(cres *r, int n)
{
    if (!r) return;
    for (int i = 0; i < n; i++) {
        cres_free(r[i].with, r[i].nwith);
        free(r[i].with);
        free(r[i].ud);
    }
}

/* Fluxion's prime_jobspec: how much of each pruning type the requests
 * R hold, their minimum counts multiplied down (into ud, of npt) */
static bool aggregate(const matcher *m, const cres *R, int nR, int64_t *ud)
{
    bool any = false;
    for (int i = 0; i < nR; i++) {
        int p = R[i].type >= 0 && R[i].type < m->npt_of ? m->pt_of[R[i].type] : -1;
        if (p >= 0) {
            ud[p] += R[i].min;
            any = true;
        }
        for (int j = 0; j < m->npt && R[i].has_ud; j++)
            ud[j] = (int64_t)((uint64_t)ud[j] + (uint64_t)R[i].min * (uint64_t)R[i].ud[j]);
        any = any || R[i].has_ud;
    }
    return any;
}

static int compile(matcher *m, const mj_res *in, int n, cres **out)
{
    cres *r = calloc((size_t)(n ? n : 1), sizeof *r);
    if (!r) return -1;
    *out = r;
    for (int i = 0; i < n; i++) {
        r[i].type = mg_type_id(m->g, in[i].type, true);
        r[i].slot = !strcmp(in[i].type, "slot");
        r[i].min = in[i].min;
        r[i].max = in[i].max;
        r[i].oper = in[i].oper;
        r[i].operand = in[i].operand;
        r[i].excl = in[i].exclusive;
        r[i].label = in[i].label;
        if (!r[i].slot && r[i].label && *r[i].label) m->labels = true;
        if (in[i].exclusive == MJ_X_TRUE && !r[i].slot) {
            int32_t *p = realloc(m->xtypes, (size_t)(m->nxtypes + 1) * sizeof *p);
            if (!p) return -1;
            m->xtypes = p;
            m->xtypes[m->nxtypes++] = r[i].type;
        }
        if (r[i].type < 0) return -1;
        r[i].nwith = in[i].nwith; /* set first: cres_free walks partial trees */
        if (in[i].nwith && compile(m, in[i].with, in[i].nwith, &r[i].with) < 0) return -1;
        if (!(r[i].ud = calloc((size_t)m->npt, sizeof *r[i].ud))) return -1;
        r[i].has_ud = aggregate(m, r[i].with, r[i].nwith, r[i].ud);
    }
    return 0;
}

/* Fluxion's request_feasible: a quick count of the nodes that could serve
 * (constraint, status, free at the target time).  0 go on; -1 not now
 * (EBUSY); -2 never (ENODEV). */
static int request_feasible(matcher *m, int op, const cres *R, int nR)
{
    const mgraph *g = m->g;
    int64_t target = m->dfv[1], up = 0; /* nodes asked for, at least */
    bool sat_op = op == MOP_ALLOCATE_W_SAT || op == MOP_SATISFIABILITY;
    for (uint32_t v = 0; v < g->nv; v++)
        if (g->v[v].type == g->node_type && g->v[v].status == 0) up++;
    if (!m->constraint && target <= up) return 0;
    if (target > up) return sat_op ? -2 : -1;
    int64_t when = op == MOP_ALLOCATE ? m->at : GRAPH_END - 1;
    int64_t feasible = 0;
    for (uint32_t v = 0; v < g->nv && feasible < target; v++) {
        const mg_vertex *x = &g->v[v];
        if (x->type != g->node_type) continue;
        if (m->constraint && !cons_match(m, m->constraint, v)) continue;
        if (!sat_op && x->status != 0) continue;
        if (plan_avail(m, v, when, m->duration) != 1) continue;
        feasible++;
    }
    if (feasible < target) return sat_op ? -2 : -1;
    return 0;
}

static void info_block(mbuf *b, const mresult *r, int op)
{
    if (op == MOP_SATISFIABILITY) {
        mbuf_puts(b, "INFO: =============================\n");
        mbuf_printf(b, "INFO: %s request\n", r->satisfiable ? "Satisfiable" : "Unsatisfiable");
        mbuf_puts(b, "INFO: =============================\n");
        return;
    }
    if (r->matched) {
        mbuf_puts(b, "INFO: =============================\n");
        mbuf_printf(b, "INFO: JOBID=%lld\n", (long long)r->jobid);
        mbuf_printf(b, "INFO: RESOURCES=%s\n", r->at == 0 ? "ALLOCATED" : "RESERVED");
        if (r->at == 0) mbuf_puts(b, "INFO: SCHEDULED AT=Now\n");
        else mbuf_printf(b, "INFO: SCHEDULED AT=%lld\n", (long long)r->at);
        mbuf_puts(b, "INFO: =============================\n");
    } else {
        mbuf_puts(b, "INFO: =============================\n");
        mbuf_puts(b, "INFO: No matching resources found\n");
        if (!r->satisfiable) mbuf_puts(b, "INFO: Unsatisfiable request\n");
        mbuf_printf(b, "INFO: JOBID=%lld\n", (long long)r->jobid);
        mbuf_puts(b, "INFO: =============================\n");
    }
}

void m_result_free(mresult *r)
{
    free(r->R);
    free(r->info);
    free(r->text);
    free(r->msgs);
    r->R = r->info = r->text = r->msgs = NULL;
}

/* Fluxion's select for satisfiability: at the far end of the planners'
 * time (base + duration - the job's - 1), where no job reaches; failing
 * there for want of room means never (dfu_traverser_t::is_satisfiable and
 * schedule's fallbacks turn EBUSY and ERANGE into ENODEV). */
static int sat_select(matcher *m, const cres *R, int nR, bool x)
{
    int saved = m->alloc_type;
    int64_t at = m->at;
    m->alloc_type = AT_SAT;
    m->at = INT64_MAX - m->duration - 1;
    int rc = select_at(m, R, nR, x);
    if (rc < 0 && (m->fx_errno == EBUSY || m->fx_errno == ERANGE)) m->fx_errno = ENODEV;
    m->alloc_type = saved;
    m->at = at;
    return rc;
}

/* ----------------------------------------------------- reservation times */

/* Fluxion's search for a reservation's start (schedule's
 * planner_multi_avail_time_first / _next on the root's filter): the
 * points where the root's spans start or end, earliest first, at which
 * its first planner has room for the request all along [t, t + d) (the
 * planner's own candidates), then the other planners too.  Each call
 * leaves errno as the planners do: ERANGE (more than there is at all),
 * EBUSY (one of the others busy at a candidate), ENOENT (no more). */
typedef struct tsearch {
    matcher *m;
    int order[8], k;         /* the root's planners (pruning indexes), in Fluxion's order */
    int *ord;
    int64_t req[8], *rq;
    int64_t *pts;
    size_t npts, next;
    int64_t d;
} tsearch;

/* Fluxion interns the built-in resource types first, in this order, then
 * the graph's as its JGF names them: sets of types follow that order */
static int type_rank(const matcher *m, int32_t t)
{
    static const char *const builtin[] = {"cluster", "rack", "node", "socket", "slot", "core", "gpu", "ssd"};
    static const int rank[] = {0, 5, 4, 2, 6, 1, 3, 8};
    const char *name = mg_type_name(m->g, t);
    for (int i = 0; i < 8; i++)
        if (!strcmp(name, builtin[i])) return rank[i];
    if (!strcmp(name, "xor_slot")) return 7;
    if (!strcmp(name, "storage_node")) return 9;
    return 100 + t;
}

static int cmp_i64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return x < y ? -1 : x > y;
}

static int ts_init(tsearch *ts, matcher *m, int64_t d)
{
    memset(ts, 0, sizeof *ts);
    ts->m = m;
    ts->d = d;
    uint32_t root = (uint32_t)m->g->root;
    int32_t rt = m->g->v[root].type;
    ts->ord = m->npt <= 8 ? ts->order : malloc((size_t)m->npt * sizeof *ts->ord);
    ts->rq = m->npt <= 8 ? ts->req : malloc((size_t)m->npt * sizeof *ts->rq);
    if (!ts->ord || !ts->rq) return -1;
    /* a cluster's own leaf types (by interning order), then cores and
     * nodes, never the root's own type */
    if (rt == m->cluster_type) {
        for (int i = 2; i < m->npt; i++) ts->ord[ts->k++] = i;
        for (int i = 1; i < ts->k; i++)
            for (int j = i; j > 0 && type_rank(m, m->pt[ts->ord[j]]) < type_rank(m, m->pt[ts->ord[j - 1]]); j--) {
                int t = ts->ord[j];
                ts->ord[j] = ts->ord[j - 1];
                ts->ord[j - 1] = t;
            }
    }
    for (int i = 0; i < 2; i++)
        if (m->pt[i] != rt) ts->ord[ts->k++] = i;
    for (int i = 0; i < ts->k; i++) ts->rq[i] = m->dfv[ts->ord[i]];
    const vstate *st = &m->st[root];
    size_t w = 3 + (size_t)m->npt;
    ts->pts = malloc((2 * (size_t)st->nagg + 1) * sizeof *ts->pts);
    if (!ts->pts) return -1;
    ts->pts[ts->npts++] = 0; /* the planner's base */
    for (uint32_t a = 0; a < st->nagg; a++) {
        ts->pts[ts->npts++] = st->agg[a * w + 1];
        ts->pts[ts->npts++] = st->agg[a * w + 2];
    }
    qsort(ts->pts, ts->npts, sizeof *ts->pts, cmp_i64);
    size_t n = 0;
    for (size_t i = 0; i < ts->npts; i++)
        if (!n || ts->pts[i] != ts->pts[n - 1]) ts->pts[n++] = ts->pts[i];
    ts->npts = n;
    return 0;
}

static void ts_free(tsearch *ts)
{
    if (ts->ord != ts->order) free(ts->ord);
    if (ts->rq != ts->req) free(ts->rq);
    free(ts->pts);
}

/* room for planner i's request all along [t, t + d) */
static bool ts_room(const tsearch *ts, int i, int64_t t)
{
    const matcher *m = ts->m;
    uint32_t root = (uint32_t)m->g->root;
    int p = ts->ord[i];
    int64_t tot = m->tot[(size_t)root * (size_t)m->npt + (size_t)p];
    return agg_peak(m, root, p, t, ts->d) <= tot - ts->rq[i];
}

/* the next candidate from ts->next on; -1 with errno ENOENT when none */
static int64_t ts_scan(tsearch *ts)
{
    matcher *m = ts->m;
    uint32_t root = (uint32_t)m->g->root;
    while (ts->next < ts->npts) {
        int64_t t = ts->pts[ts->next++];
        if (t < 1) continue; /* on or after the first try's time + 1 */
        /* the first planner's candidates: room at t and all along */
        if (!ts_room(ts, 0, t)) continue;
        bool met = true;
        for (int i = 1; i < ts->k && met; i++) {
            int64_t tot = m->tot[(size_t)root * (size_t)m->npt + (size_t)ts->ord[i]];
            if (ts->rq[i] > tot) {
                m->fx_errno = ERANGE;
                met = false;
            } else if (!ts_room(ts, i, t)) {
                m->fx_errno = EBUSY;
                met = false;
            }
        }
        if (met) return t;
    }
    m->fx_errno = ENOENT;
    return -1;
}

static int64_t ts_first(tsearch *ts)
{
    const matcher *m = ts->m;
    uint32_t root = (uint32_t)m->g->root;
    if (ts->k == 0 || ts->rq[0] > m->tot[(size_t)root * (size_t)m->npt + (size_t)ts->ord[0]]) {
        ts->m->fx_errno = ERANGE;
        return -1;
    }
    return ts_scan(ts);
}

/* ------------------------------------------------------------------ match */

/* The resource types Fluxion knows: those it has built in, and the
 * graph's (its type names are interned and closed once the graph is
 * read). */
static bool known_type(void *ctx, const char *type)
{
    const matcher *m = ctx;
    static const char *const builtin[] = {"cluster", "rack", "node",     "socket", "slot",
                                          "core",    "gpu",  "xor_slot", "ssd",    "storage_node", "*"};
    for (size_t b = 0; b < sizeof builtin / sizeof builtin[0]; b++)
        if (!strcmp(type, builtin[b])) return true;
    int32_t t = mg_type_id(m->g, type, false);
    return t >= 0 && t < m->nknown && m->known[t];
}

/* ------------------------------------------------- one request per type */

/* allocate: now or not at all (EBUSY) */
static int allocate(matcher *m, const cres *R, int nR, bool x)
{
    int rc = select_at(m, R, nR, x);
    if (rc != 0) m->fx_errno = EBUSY;
    return rc;
}

/* allocate_with_satisfiability: now, else a second selection at the end of
 * time decides only errno: busy now (EBUSY) or never (ENODEV) */
static int allocate_w_sat(matcher *m, const cres *R, int nR, bool x)
{
    int rc = select_at(m, R, nR, x);
    if (rc != 0) {
        m->fx_errno = EBUSY;
        sat_select(m, R, nR, x);
    }
    return rc;
}

/* allocate_orelse_reserve: now, else reserved at the earliest time the
 * root's planners have room (schedule's loop over the candidate times),
 * else never when even that search finds none */
static int allocate_orelse_reserve(matcher *m, const cres *R, int nR, bool x)
{
    int rc = select_at(m, R, nR, x);
    if (rc == 0) return 0;
    m->alloc_type = AT_RESERVE;
    tsearch ts;
    if (ts_init(&ts, m, m->duration) < 0) {
        ts_free(&ts);
        m->fx_errno = ENOMEM;
        return -1;
    }
    /* schedule's for loop: the next candidate is sought after every try,
     * the one that succeeds too */
    for (int64_t t = ts_first(&ts); t != -1 && rc; t = ts_scan(&ts)) {
        m->at = t;
        rc = select_at(m, R, nR, x);
    }
    ts_free(&ts);
    if (rc < 0 && (m->fx_errno == ENOENT || m->fx_errno == ERANGE)) {
        m->at = 0;
        m->fx_errno = EBUSY;
        sat_select(m, R, nR, x);
    }
    return rc;
}

/* dfu_traverser_t::run's update: the selection made a job at m->at; the
 * walk along its marks allocates and emits into out.  0, or -1 with errno
 * in m->fx_errno (none when the marks lead nowhere). */
static int update(matcher *m, emit *out)
{
    if (m->at == GRAPH_END) {
        m->fx_errno = EBUSY;
        return -1;
    }
    if (m->at < 0 || m->at > GRAPH_END) {
        m->fx_errno = EINVAL;
        return -1;
    }
    if (m->at + m->duration > GRAPH_END) m->duration = GRAPH_END - m->at;
    if (m->njobs == m->jobcap) {
        size_t nc = m->jobcap ? m->jobcap * 2 : 16;
        job *p = realloc(m->jobs, nc * sizeof *p);
        if (!p) {
            m->fx_errno = ENOMEM;
            return -1;
        }
        m->jobs = p;
        m->jobcap = nc;
    }
    job *j = &m->jobs[m->njobs++];
    memset(j, 0, sizeof *j);
    j->id = m->counter;
    j->at = m->at;
    j->duration = m->duration;
    j->state = m->at == 0 ? 0 : 1;
    m->epoch++; /* the update walk has colors of its own */
    int64_t stack_acc[8], *acc = m->npt <= 8 ? stack_acc : calloc((size_t)m->npt, sizeof *acc);
    bool acc_set = false;
    if (acc) {
        memset(acc, 0, (size_t)m->npt * sizeof *acc);
        upd_dfv(m, j, out, (uint32_t)m->g->root, m->root_needs, m->root_excl, false, acc, &acc_set);
        if (acc != stack_acc) free(acc);
    } else {
        out->e.oom = 1;
    }
    if (out->e.n == 0) {
        /* The selection succeeded and its marks lead nowhere (a slot that
         * matched below a level the request names: node > slot > core on
         * node > socket > core).  Fluxion's update then fails and sets no
         * errno: what the match left there decides. */
        free(j->verts);
        m->njobs--;
        return -1;
    }
    return 0;
}

/* dfu_traverser_t::run (and schedule): 0 with a job allocated or
 * reserved (satisfiability: satisfiable), -1 otherwise, errno and the
 * error text left in m->fx_errno and m->fx_msg.  out: what the update
 * walk emitted. */
static int traverse(matcher *m, int op, const mjobspec *js, emit *out)
{
    cres *R = NULL;
    int nR = js->nres, rc = -1;
    /* the types held exclusively for this match (the jobspec's exclusive
     * ones) join those of before, which are restored afterwards */
    int nx = m->nxtypes;
    m->slot_type = mg_type_id(m->g, "slot", true);
    if (nR == 0) {
        m->fx_errno = EINVAL; /* no resources: refused before anything */
        return -1;
    }
    m->labels = false;
    if (compile(m, js->res, nR, &R) < 0) {
        m->fx_errno = ENOMEM;
        goto done;
    }
    memset(m->dfv, 0, (size_t)m->npt * sizeof *m->dfv);
    aggregate(m, R, nR, m->dfv);
    m->constraint = js->constraint;
    /* jobmeta_t::build: a duration of 0 is the graph's; NaN, negative or
     * beyond the graph's is refused -- and then dfu_traverser_t::run
     * returns before restoring the exclusive types: this jobspec's stay
     * exclusive for every later match */
    double d = js->duration;
    if (!(d >= 0) || d > (double)GRAPH_END) {
        m->fx_errno = EINVAL;
        nx = m->nxtypes;
        goto done;
    }
    m->duration = d == 0 ? GRAPH_END : (int64_t)ceil(d);
    m->at = 0;
    uint32_t root = (uint32_t)m->g->root;
    bool x = false;
    for (int i = 0; i < nR; i++)
        if (R[i].type == m->g->v[root].type && R[i].excl == MJ_X_TRUE) x = true;
    if (op == MOP_SATISFIABILITY) {
        rc = sat_select(m, R, nR, x);
        goto done;
    }
    m->alloc_type = AT_ALLOC;
    int feas = request_feasible(m, op, R, nR);
    if (feas < 0) {
        m->fx_errno = feas == -1 ? EBUSY : ENODEV;
        goto done;
    }
    switch (op) {
    case MOP_ALLOCATE_W_SAT: rc = allocate_w_sat(m, R, nR, x); break;
    case MOP_ALLOCATE_ORELSE_RESERVE: rc = allocate_orelse_reserve(m, R, nR, x); break;
    default: rc = allocate(m, R, nR, x); break;
    }
    if (rc == 0) rc = update(m, out);
done:
    m->nxtypes = nx;
    cres_free(R, nR);
    free(R);
    arena_free(&m->arena);
    return rc;
}

/* ------------------------------------------------------- the match command */

/* mresult.msgs: what resource-query prints on stderr for the match */
static void set_msgs(mresult *r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void set_msgs(mresult *r, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    char *t = NULL;
    if (vasprintf(&t, fmt, ap) < 0) t = NULL;
    va_end(ap);
    free(r->msgs);
    r->msgs = t;
}

/* writers->emit, reached only when the traversal succeeded or gave a
 * verdict; its failure is the command's error, and the id stays unused.
 * Returns rc, -1 when the writer failed (*e its errno). */
static int emit_result(matcher *m, int op, int rc, emit *out, int *e, mresult *r)
{
    char *doc = NULL;
    int we = 0;
    if (m->writer_broken) {
        /* once Fluxion's rlite writer has failed (a node of negative rank)
         * it keeps what it gathered and fails every emit; the allocation
         * the command made stays */
        we = EINVAL;
    } else if (rc == 0 && op != MOP_SATISFIABILITY && m->format != MFMT_SIMPLE) {
        doc = out->e.oom ? NULL : mw_write(m->g, &out->e, m->format, m->at, m->at + m->duration, &m->pending);
        if (!doc) {
            we = out->e.oom ? ENOMEM : errno ? errno : EINVAL;
            if (we == EINVAL) m->writer_broken = true;
        }
    }
    if (we) {
        if (rc == 0 && op != MOP_SATISFIABILITY) m->jobs[m->njobs - 1].ghost = true;
        snprintf(r->err, sizeof r->err, "match writer emit: %s", strerror(we));
        set_msgs(r, "%smatch_allocate: ERROR: %s\n", r->msgs ? r->msgs : "", r->err);
        *e = we;
        return -1;
    }
    if (op != MOP_SATISFIABILITY) {
        r->counted = true;
        m->counter++;
    }
    if (rc == 0 && op != MOP_SATISFIABILITY) {
        r->matched = true;
        r->reserved = m->at != 0;
        r->at = m->at;
        const char *R = m->format == MFMT_SIMPLE ? out->simple.d : doc;
        r->R = strdup(R ? R : "");
    }
    free(doc);
    return rc;
}

/* Runs the traversal on a jobspec Fluxion accepted; the answer's error
 * lines as run_match prints them.  Returns rc, *e the errno it ends with. */
static int run_jobspec(matcher *m, int op, const mjobspec *js, emit *out, int *e, mresult *r)
{
    int rc = traverse(m, op, js, out);
    *e = m->fx_errno;
    bool verdict = *e == EBUSY || *e == ENODEV;
    if (rc < 0 && m->fx_msg.n) {
        set_msgs(r, "match_allocate: ERROR: %s\n", m->fx_msg.d);
        if (!verdict) snprintf(r->err, sizeof r->err, "%.*s", (int)strcspn(m->fx_msg.d, "\n"), m->fx_msg.d);
    } else if (rc < 0 && !verdict) {
        snprintf(r->err, sizeof r->err, "traverser: %s", strerror(*e));
        set_msgs(r, "match_allocate: ERROR: %s\n", r->err);
    }
    if (m->fx_msg.oom) snprintf(r->err, sizeof r->err, "out of memory");
    if (rc == 0 || verdict) rc = emit_result(m, op, rc, out, e, r);
    return rc;
}

void m_match(matcher *m, int op, const char *text, size_t len, mresult *r)
{
    memset(r, 0, sizeof *r);
    r->jobid = m->counter;
    r->satisfiable = true;
    m->fx_errno = ENOTTY;
    free(m->fx_msg.d);
    memset(&m->fx_msg, 0, sizeof m->fx_msg);
    emit out;
    memset(&out, 0, sizeof out);
    char perr[256];
    mjobspec *js = mj_parse_fluxion(text, len, known_type, m, perr, sizeof perr);
    int rc = -1, e = EINVAL;
    if (!js) {
        /* reapi_cli_t::match_allocate: the jobspec refused, nothing run */
        snprintf(r->err, sizeof r->err, "Jobspec error for %lld: %.200s", (long long)m->counter, perr);
        set_msgs(r, "match_allocate: ERROR: Jobspec error for %lld: %s\n", (long long)m->counter, perr);
    } else {
        rc = run_jobspec(m, op, js, &out, &e, r);
        mj_free(js);
    }
    /* run_match: a failed match is unsatisfiable when errno says never */
    r->satisfiable = rc == 0 || !(e == ENODEV || e == ENOENT);
    mbuf info = {0}, text_out = {0};
    info_block(&info, r, op);
    if (r->R) mbuf_puts(&text_out, r->R);
    mbuf_add(&text_out, info.d ? info.d : "", info.n);
    if (!r->R) r->R = strdup("");
    r->info = info.d;
    r->text = text_out.d;
    if (!r->msgs) r->msgs = strdup("");
    if (out.simple.oom || out.e.oom || info.oom || text_out.oom || !r->R || !r->msgs || !r->text)
        snprintf(r->err, sizeof r->err, "out of memory");
    emit_free(&out);
}

/* The walk of Fluxion's cancel (dfu_impl_t::mod_dfv): from the root down
 * through the vertices the job holds, each visited once; one it does not
 * hold is visited and left at once.  held: 1 what the job holds, made 2
 * where the walk frees it. */
static void cancel_walk(matcher *m, uint32_t u, uint8_t *held, unsigned visits[2])
{
    visits[0]++;
    m->st[u].color = 2 * m->epoch;
    if (!held[u]) return;
    held[u] = 2;
    const mg_vertex *x = &m->g->v[u];
    for (uint32_t k = 0; k < x->nchild; k++) {
        uint32_t c = m->g->children[x->child0 + k];
        if (!visited(m, c)) cancel_walk(m, c, held, visits);
    }
    m->st[u].color = 2 * m->epoch + 1;
    visits[1]++;
}

/* Frees what j holds at its vertices for which keep[v] says so (all when
 * keep is NULL): its spans there. */
static void release(matcher *m, job *j, const uint8_t *keep)
{
    size_t w = 3 + (size_t)m->npt;
    for (uint32_t i = 0; i < j->nverts; i++) {
        if (keep && keep[j->verts[i]] != 2) continue;
        vstate *st = &m->st[j->verts[i]];
        uint32_t k = 0;
        for (uint32_t s = 0; s < st->n; s++)
            if (st->s[s].jobid != j->id) st->s[k++] = st->s[s];
        st->n = k;
        k = 0;
        for (uint32_t a = 0; a < st->nagg; a++)
            if (st->agg[a * w] != j->id) memmove(&st->agg[k++ * w], &st->agg[a * w], w * sizeof *st->agg);
        st->nagg = k;
    }
    /* as in Fluxion, cancel leaves the out-edge weights (first policy) alone */
    j->state = 2;
    free(j->verts);
    j->verts = NULL;
    j->nverts = j->cap = 0;
}

/* Fluxion's cancel frees only what its walk reaches: below a vertex the job
 * should have held but could not (upd_dfv), what it holds stays held. */
int m_cancel(matcher *m, int64_t jobid, unsigned visits[2])
{
    job *j = find_job(m, jobid);
    if (!j || j->state == 2) return -1;
    unsigned v[2] = {0, 0};
    uint8_t *held = calloc((size_t)m->g->nv + 1, 1);
    if (held) {
        for (uint32_t i = 0; i < j->nverts; i++) held[j->verts[i]] = 1;
        m->epoch++;
        cancel_walk(m, (uint32_t)m->g->root, held, v);
    }
    release(m, j, held);
    free(held);
    if (visits) {
        visits[0] = v[0];
        visits[1] = v[1];
    }
    return 0;
}

void m_rewind(matcher *m, int64_t jobid)
{
    for (size_t i = 0; i < m->njobs; i++)
        if (m->jobs[i].id >= jobid && m->jobs[i].state != 2) release(m, &m->jobs[i], NULL);
    /* forget them: a rewound id is used again */
    size_t k = 0;
    for (size_t i = 0; i < m->njobs; i++)
        if (m->jobs[i].id < jobid) m->jobs[k++] = m->jobs[i];
        else free(m->jobs[i].verts);
    m->njobs = k;
    if (jobid < m->counter) m->counter = jobid;
}

int m_info(const matcher *m, int64_t jobid, const char **state, int64_t *at, bool *reserved)
{
    for (size_t i = 0; i < m->njobs; i++)
        if (m->jobs[i].id == jobid && !m->jobs[i].ghost) {
            const job *j = &m->jobs[i];
            *state = j->state == 0 ? "ALLOCATED" : j->state == 1 ? "RESERVED" : "CANCELED";
            *at = j->at;
            *reserved = j->state == 1;
            return 0;
        }
    return -1;
}
