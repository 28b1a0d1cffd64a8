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
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "match.h"

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

/* ------------------------------------------------------------ scoring api */

typedef struct evedge {
    uint32_t edge;           /* index into mgraph.children; ROOT_EDGE for the root */
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
    int nt, cap, hint;
    int64_t overall;
    unsigned avail;
    bool hier;
} scoring;

static void sc_init(scoring *s)
{
    memset(s, 0, sizeof *s);
    s->overall = -1;
}

static void sc_free(scoring *s)
{
    for (int i = 0; i < s->nt; i++) free(s->t[i].g);
    free(s->t);
    s->t = NULL;
    s->nt = s->cap = 0;
}

static evals *sc_find(scoring *s, int32_t type)
{
    /* the type asked for last, first: callers iterate one type at a time */
    if (s->hint < s->nt && s->t[s->hint].type == type) return &s->t[s->hint];
    for (int i = 0; i < s->nt; i++)
        if (s->t[i].type == type) {
            s->hint = i;
            return &s->t[i];
        }
    return NULL;
}

static evals *sc_get_new(scoring *s, int32_t type);

/* the type's evals, created when missing (as std::map's operator[]) */
static inline evals *sc_get(scoring *s, int32_t type)
{
    if (s->hint < s->nt && s->t[s->hint].type == type) return &s->t[s->hint];
    return sc_get_new(s, type);
}

static evals *sc_get_new(scoring *s, int32_t type)
{
    evals *e = sc_find(s, type);
    if (e) return e;
    if (s->nt == s->cap) {
        int nc = s->cap ? s->cap * 2 : 4;
        evals *t = realloc(s->t, (size_t)nc * sizeof *t);
        if (!t) return NULL;
        s->t = t;
        s->cap = nc;
    }
    e = &s->t[s->nt++];
    memset(e, 0, sizeof *e);
    e->type = type;
    e->iter_reset = true;
    return e;
}

static uint32_t cap_hint = 4; /* set by explore: the number of children */

static int ev_grow(evals *e)
{
    uint32_t nc = e->cap ? e->cap * 2 : cap_hint;
    egroup *p = realloc(e->g, (size_t)nc * sizeof *p);
    if (!p) return -1;
    e->g = p;
    e->cap = nc;
    return 0;
}

static inline int ev_push(evals *e, const egroup *g)
{
    if (e->n == e->cap && ev_grow(e) < 0) return -1;
    e->g[e->n++] = *g;
    return 0;
}

/* inline: once per candidate of every match */
static inline int sc_add(scoring *s, int32_t type, const egroup *g)
{
    evals *e = sc_get(s, type);
    if (!e) return -1;
    e->total += g->count;
    if (g->score > 0) e->qual += g->count; /* cutline 0: every matched vertex (MATCH_MET and up) */
    return ev_push(e, g);
}

static unsigned sc_qual(scoring *s, int32_t type)
{
    evals *e = sc_get(s, type); /* like std::map operator[]: creates */
    return e ? e->qual : 0;
}

static unsigned sc_total(scoring *s, int32_t type)
{
    evals *e = sc_get(s, type);
    return e ? e->total : 0;
}

/* Appends o's candidates to s (o is emptied). */
static int sc_merge(scoring *s, scoring *o)
{
    for (int i = 0; i < o->nt; i++) {
        evals *src = &o->t[i];
        evals *dst = sc_get(s, src->type);
        if (!dst) return -1;
        dst->qual += src->qual;
        dst->total += src->total;
        if (dst->n == 0 && dst->cap < src->cap) {
            free(dst->g);
            dst->g = src->g;
            dst->n = src->n;
            dst->cap = src->cap;
            src->g = NULL;
            src->n = src->cap = 0;
            continue;
        }
        if (dst->n + src->n > dst->cap) {
            uint32_t nc = dst->cap ? dst->cap : 4;
            while (nc < dst->n + src->n) nc *= 2;
            egroup *p = realloc(dst->g, (size_t)nc * sizeof *p);
            if (!p) return -1;
            dst->g = p;
            dst->cap = nc;
        }
        if (src->n) memcpy(dst->g + dst->n, src->g, (size_t)src->n * sizeof *src->g);
        dst->n += src->n;
    }
    return 0;
}

/* std::sort (libstdc++ introsort) reproduced, so that candidates of equal
 * score come out in the same order as in Fluxion.  It sorts (score, index)
 * pairs: the comparisons, hence the result, are those of sorting the
 * candidates themselves, with 16-byte moves instead of 48. */
typedef struct skey {
    int64_t score;
    uint32_t idx;
} skey;

#define LESS(a, b) (hi ? (a)->score > (b)->score : (a)->score < (b)->score)

static void sk_swap(skey *a, skey *b)
{
    skey t = *a;
    *a = *b;
    *b = t;
}

static void move_median_to_first(skey *result, skey *a, skey *b, skey *c, bool hi)
{
    if (LESS(a, b)) {
        if (LESS(b, c)) sk_swap(result, b);
        else if (LESS(a, c)) sk_swap(result, c);
        else sk_swap(result, a);
    } else if (LESS(a, c)) sk_swap(result, a);
    else if (LESS(b, c)) sk_swap(result, c);
    else sk_swap(result, b);
}

static skey *unguarded_partition(skey *first, skey *last, skey *pivot, bool hi)
{
    for (;;) {
        while (LESS(first, pivot)) ++first;
        --last;
        while (LESS(pivot, last)) --last;
        if (!(first < last)) return first;
        sk_swap(first, last);
        ++first;
    }
}

static void adjust_heap(skey *first, ptrdiff_t hole, ptrdiff_t len, skey value, bool hi)
{
    ptrdiff_t top = hole, second = hole;
    while (second < (len - 1) / 2) {
        second = 2 * (second + 1);
        if (LESS(&first[second], &first[second - 1])) second--;
        first[hole] = first[second];
        hole = second;
    }
    if ((len & 1) == 0 && second == (len - 2) / 2) {
        second = 2 * (second + 1);
        first[hole] = first[second - 1];
        hole = second - 1;
    }
    ptrdiff_t parent = (hole - 1) / 2;
    while (hole > top && LESS(&first[parent], &value)) {
        first[hole] = first[parent];
        hole = parent;
        parent = (hole - 1) / 2;
    }
    first[hole] = value;
}

static void heap_sort_all(skey *first, skey *last, bool hi)
{
    ptrdiff_t len = last - first;
    if (len >= 2) {
        ptrdiff_t parent = (len - 2) / 2;
        for (;;) {
            skey v = first[parent];
            adjust_heap(first, parent, len, v, hi);
            if (parent == 0) break;
            parent--;
        }
    }
    while (last - first > 1) {
        --last;
        skey v = *last;
        *last = *first;
        adjust_heap(first, 0, last - first, v, hi);
    }
}

static void introsort_loop(skey *first, skey *last, int depth, bool hi)
{
    while (last - first > 16) {
        if (depth == 0) {
            heap_sort_all(first, last, hi);
            return;
        }
        --depth;
        skey *mid = first + (last - first) / 2;
        move_median_to_first(first, first + 1, mid, last - 1, hi);
        skey *cut = unguarded_partition(first + 1, last, first, hi);
        introsort_loop(cut, last, depth, hi);
        last = cut;
    }
}

static void unguarded_linear_insert(skey *last, bool hi)
{
    skey val = *last;
    skey *next = last - 1;
    while (LESS(&val, next)) {
        *last = *next;
        last = next;
        --next;
    }
    *last = val;
}

static void insertion_sort(skey *first, skey *last, bool hi)
{
    if (first == last) return;
    for (skey *i = first + 1; i != last; ++i) {
        if (LESS(i, first)) {
            skey val = *i;
            memmove(first + 1, first, (size_t)(i - first) * sizeof *i);
            *first = val;
        } else {
            unguarded_linear_insert(i, hi);
        }
    }
}

/* Keys already in strict order (1), or in strict reverse order (-1), else 0:
 * children are visited by id and most are scored by id, and then the one
 * order any sort gives is found in one pass (no equal keys, so std::sort's
 * instability cannot show). */
static int monotone(const skey *first, ptrdiff_t n, bool hi)
{
    bool up = true, down = true;
    for (ptrdiff_t i = 1; i < n && (up || down); i++) {
        if (!LESS(&first[i - 1], &first[i])) up = false;
        if (!LESS(&first[i], &first[i - 1])) down = false;
    }
    return up ? 1 : down ? -1 : 0;
}

/* std::sort proper (keys neither in order nor reversed, or not looked at) */
static void introsort_keys(skey *first, skey *last, bool hi)
{
    ptrdiff_t n = last - first;
    int lg = 0;
    for (ptrdiff_t k = n; k > 1; k >>= 1) lg++;
    introsort_loop(first, last, 2 * lg, hi);
    if (n > 16) {
        insertion_sort(first, first + 16, hi);
        for (skey *i = first + 16; i != last; ++i) unguarded_linear_insert(i, hi);
    } else {
        insertion_sort(first, last, hi);
    }
}

static void sort_keys(skey *first, skey *last, bool hi)
{
    ptrdiff_t n = last - first;
    if (n < 2) return;
    int mono = monotone(first, n, hi);
    if (mono > 0) return;
    if (mono < 0) {
        for (skey *a = first, *b = last - 1; a < b; a++, b--) sk_swap(a, b);
        return;
    }
    introsort_keys(first, last, hi);
}

#undef LESS

/* keys: the sort key of each candidate (NULL: its score) */
static int std_sort(egroup *g, const int64_t *sortkey, uint32_t n, bool hi)
{
    if (n < 2) return 0;
    skey stack_keys[64];
    skey *keys = n <= 64 ? stack_keys : malloc((size_t)n * sizeof *keys);
    if (!keys) return -1;
    for (uint32_t i = 0; i < n; i++) {
        keys[i].score = sortkey ? sortkey[i] : g[i].score;
        keys[i].idx = i;
    }
    /* in order already, or reversed (a node's leaves): moved in place */
    int mono = monotone(keys, n, hi);
    int rc = 0;
    if (mono < 0) {
        for (egroup *a = g, *b = g + n - 1; a < b; a++, b--) {
            egroup t = *a;
            *a = *b;
            *b = t;
        }
    } else if (mono == 0) {
        egroup stack_tmp[64];
        egroup *tmp = n <= 64 ? stack_tmp : malloc((size_t)n * sizeof *tmp);
        if (!tmp) {
            rc = -1;
        } else {
            introsort_keys(keys, keys + n, hi);
            memcpy(tmp, g, (size_t)n * sizeof *tmp);
            for (uint32_t i = 0; i < n; i++) g[i] = tmp[keys[i].idx];
            if (tmp != stack_tmp) free(tmp);
        }
    }
    if (keys != stack_keys) free(keys);
    return rc;
}

int m_std_sort(int64_t *keys, uint32_t *idx, uint32_t n, bool descending)
{
    if (n < 2) return 0;
    skey *k = malloc((size_t)n * sizeof *k);
    if (!k) return -1;
    for (uint32_t i = 0; i < n; i++) {
        k[i].score = keys[i];
        k[i].idx = idx[i];
    }
    sort_keys(k, k + n, descending);
    for (uint32_t i = 0; i < n; i++) {
        keys[i] = k[i].score;
        idx[i] = k[i].idx;
    }
    free(k);
    return 0;
}

static int cmp_score(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return x < y ? -1 : x > y;
}

/* The locality policy's order (Fluxion's fold::interval_greater): the
 * scores fall into runs of consecutive integers (a boost::icl interval
 * set); a candidate ranks by the lower end of its run, higher runs first,
 * candidates of one run being equal. */
static int64_t *interval_keys(const egroup *g, uint32_t n)
{
    int64_t *sorted = malloc((size_t)n * sizeof *sorted), *keys = malloc((size_t)n * sizeof *keys);
    if (!sorted || !keys) {
        free(sorted);
        free(keys);
        return NULL;
    }
    for (uint32_t i = 0; i < n; i++) sorted[i] = g[i].score;
    qsort(sorted, n, sizeof *sorted, cmp_score);
    for (uint32_t i = 0; i < n; i++) {
        /* the run holding g[i].score: walk down from its position */
        uint32_t lo = 0, hi = n;
        while (lo < hi) {
            uint32_t mid = lo + (hi - lo) / 2;
            if (sorted[mid] < g[i].score) lo = mid + 1;
            else hi = mid;
        }
        while (lo > 0 && (sorted[lo - 1] == sorted[lo] || sorted[lo - 1] == sorted[lo] - 1)) lo--;
        keys[i] = sorted[lo];
    }
    free(sorted);
    return keys;
}

static int choose_best_k_by(scoring *s, int32_t type, unsigned k, bool hi, bool intervals)
{
    evals *e = sc_get(s, type);
    if (!e || k == 0 || k > e->qual) return -1;
    int64_t *keys = NULL;
    if (intervals && e->n > 1 && !(keys = interval_keys(e->g, e->n))) return -1;
    int rc = std_sort(e->g, keys, e->n, hi);
    free(keys);
    if (rc < 0) return -1;
    unsigned i = 0;
    long tbs = (long)k;
    while (tbs > 0 && i < e->n) {
        e->g[i].needs = tbs <= (long)e->g[i].count ? (unsigned)tbs : e->g[i].count;
        tbs -= (long)e->g[i].count;
        i++;
    }
    e->best_k = k;
    e->best_i = i;
    s->hier = true;
    return 0;
}

static int choose_best_k(scoring *s, int32_t type, unsigned k, bool hi)
{
    return choose_best_k_by(s, type, k, hi, false);
}

/* The next candidate of e's iteration (Fluxion's evals iterator). */
static inline egroup *ev_next(evals *e)
{
    if (e->iter_reset) {
        e->iter = 0;
        e->iter_reset = false;
    } else if (e->iter < e->n) {
        e->iter++;
    }
    return e->iter < e->n ? &e->g[e->iter] : NULL;
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
    int64_t at, duration;
    uint32_t *verts;
    uint32_t nverts, cap;
} job;

struct matcher {
    mgraph *g;
    vstate *st;
    estate *es;              /* per edge */
    uint32_t *inedge;        /* per vertex: the edge from its first parent (ROOT_EDGE: none) */
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
    char errmsg[256];
    unsigned preorder;
    /* what a leaf of one type under one request list is (dom_dfv): the
     * siblings of a node's leaves are mostly of its type */
    struct leafmemo {
        const void *R;
        int nR, sm;
        int32_t type;
        uint64_t seq;
        bool pristine, excl, valid, x_in, takes_with;
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

int m_format(const char *name)
{
    static const char *const names[] = {"simple", "rv1", "rv1_nosched", "jgf"};
    for (int i = 0; i < 4; i++)
        if (name && !strcmp(name, names[i])) return i;
    return -1;
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
    m->inedge = malloc((g->nv ? g->nv : 1) * sizeof *m->inedge);
    if (!m->es || !m->inedge) {
        free(m->es);
        free(m->inedge);
        free(m->st);
        free(m);
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    for (uint32_t e = 0; e < nedges; e++) m->es[e].weight = UINT64_MAX; /* untouched edges first */
    for (uint32_t v = 0; v < g->nv; v++) m->inedge[v] = ROOT_EDGE;
    for (uint32_t v = 0; v < g->nv; v++)
        for (uint32_t k = 0; k < g->v[v].nchild; k++) {
            uint32_t c = g->children[g->v[v].child0 + k];
            if (m->inedge[c] == ROOT_EDGE && g->v[c].parent == (int32_t)v) m->inedge[c] = g->v[v].child0 + k;
        }
    m->nknown = g->ntypes;
    m->known = calloc((size_t)g->ntypes + 1, 1);
    if (!m->known) {
        free(m->es);
        free(m->inedge);
        free(m->st);
        free(m);
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    for (uint32_t v = 0; v < g->nv; v++) m->known[g->v[v].type] = 1;
    m->counter = 1;
    return m;
}

void m_free(matcher *m)
{
    if (!m) return;
    for (uint32_t v = 0; v < m->g->nv; v++) free(m->st[v].s);
    free(m->st);
    free(m->es);
    free(m->inedge);
    for (size_t i = 0; i < m->njobs; i++) free(m->jobs[i].verts);
    free(m->jobs);
    free(m->xtypes);
    free(m->known);
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

/* avail: u's available amount, as plan_avail gives it (for the caller, which
 * needs it again for a leaf) */
static int prune(matcher *m, bool x_in, uint32_t u, const cres *R, int nR, int64_t *avail)
{
    const mg_vertex *x = &m->g->v[u];
    if (m->alloc_type != AT_SAT && x->status != 0) return -1;
    if (m->constraint && x->type == m->g->node_type && !cons_match(m, m->constraint, u)) return -1;
    if (m->st[u].n == 0) {
        /* never allocated, reserved or held exclusively (most vertices):
         * all of it is free, and nothing below can be busy */
        if ((*avail = x->size > 0 ? x->size : 0) == 0) return -1;
        for (int i = 0; i < nR; i++)
            if (x->type == R[i].type && !R[i].slot && x_in && R[i].excl == MJ_X_FALSE) {
                snprintf(m->errmsg, sizeof m->errmsg, "by_excl: exclusivity conflicts at jobspec= : vertex=%s",
                         mg_str(m->g, x->name));
                return -1;
            }
        return 0;
    }
    if ((*avail = plan_avail(m, u, m->at, m->duration)) == 0) return -1;
    for (int i = 0; i < nR; i++) {
        const cres *r = &R[i];
        if (x->type != r->type || r->slot) continue;
        if (x_in && r->excl == MJ_X_FALSE) {
            snprintf(m->errmsg, sizeof m->errmsg, "by_excl: exclusivity conflicts at jobspec= : vertex=%s",
                     mg_str(m->g, x->name));
            return -1;
        }
        if (x_in || r->excl == MJ_X_TRUE) {
            if (m->alloc_type == AT_ALLOC && has_allocation(m, u)) return -1;
            if (x_busy(m, u, m->at, m->duration)) return -1;
        }
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
        bool ok = true;
        const mg_vertex *x = &m->g->v[u];
        for (int j = 0; j < slot_res->nwith && ok; j++) {
            bool found = false;
            for (uint32_t k = 0; k < x->nchild; k++)
                if (m->g->v[m->g->children[x->child0 + k]].type == slot_res->with[j].type) {
                    found = true;
                    break;
                }
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
    snprintf(m->errmsg, sizeof m->errmsg, "test: siblings in jobspec request same resource type : %s.",
             mg_type_name(m->g, t));
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
    if (!m->stop_on_1) {
        for (uint32_t k = 0; k < x->nchild; k++) {
            cap_hint = x->nchild < 4 ? 4 : x->nchild > 1024 ? 1024 : x->nchild;
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
                if (!unconstrained || ed->edge == ROOT_EDGE) continue;
                int32_t v = m->g->v[m->g->children[ed->edge]].parent;
                while (v >= 0 && m->g->v[v].parent >= 0) {
                    uint32_t in = m->inedge[v];
                    if (in != ROOT_EDGE && m->es[in].seq == m->seq) break;
                    uint32_t tgt = (uint32_t)v;
                    v = m->g->v[v].parent;
                    evals *te = sc_find(dfu, m->g->v[tgt].type);
                    bool constrained = !(te && te->best_k == 0);
                    if (constrained) continue;
                    mark_edge(m, m->inedge[tgt], (unsigned)m->g->v[tgt].size, 0);
                }
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
        choose_best_k(&ds, t, ds.t[i].qual, m->kind == POL_VARIATION ? true : m->high);
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
            while ((g = ev_next(ev[i]))) {
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
                egroup *g = ev_next(ev[i]);
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
            choose_best_k(dfu, c->type, count, m->high);
        }
    }
    if (m->node_centric && x->type == m->g->node_type) m->ml_scores -= m->last_factor;
    dfu->overall = score == MATCH_MET ? score + vertex_score(m, u) : score;
    return score == MATCH_MET ? 0 : -1;
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
    if (!(lm->valid && lm->R == R && lm->nR == nR && lm->type == x->type && lm->pristine == pristine &&
          lm->excl == *excl && lm->seq == m->seq)) {
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
        *lm = (struct leafmemo){R, nR, sm, x->type, m->seq, pristine, *excl, sm != SM_NONE, x_in, with};
        if (sm == SM_NONE) {
            m->preorder++;
            return -1;
        }
    }
    m->preorder++;
    int64_t lavail;
    if (prune(m, lm->x_in, u, R, nR, &lavail) < 0) return -1;
    m->st[u].color = 2 * m->epoch + 1; /* gray, then black at once */
    if (lm->takes_with) return -1;
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
    if (sm == SM_NONE) return -1;
    int64_t lavail;
    if (prune(m, x_in, u, R, nR, &lavail) < 0) return -1;
    m->st[u].color = 2 * m->epoch; /* gray: explored from here on */
    if (x->nchild == 0 && !(m->node_centric && x->type == m->g->node_type)) {
        m->st[u].color = 2 * m->epoch + 1;
        /* a leaf: what the general path computes, without the scoring
         * machinery (nothing below to choose from) */
        for (int i = 0; i < nR; i++)
            if (R[i].type == x->type && R[i].nwith > 0) return -1;
        /* plan_avail again would give prune's: nothing changed in between */
        *excl = x_in;
        to_parent->avail = (unsigned)lavail;
        to_parent->overall = MATCH_MET + vertex_score(m, u);
        return 0;
    }
    if (m->node_centric && x->type == m->g->node_type) {
        int64_t base = x->id + 1 + 1, tie = x->uniq_id % 10000 - 1;
        if (tie < 0) tie = -tie;
        m->last_factor = base * 10000 + tie;
        m->ml_scores += m->last_factor;
    }
    scoring dfu;
    sc_init(&dfu);
    if (sm == SM_SLOT) dom_slot(m, u, next, nnext, nslots, pres, label, &dfu);
    else explore(m, u, next, nnext, pres, &x_inout, &dfu, 1);
    m->st[u].color = 2 * m->epoch + 1; /* black */
    *excl = x_in;
    int64_t avail = plan_avail(m, u, m->at, m->duration);
    int rc = -1;
    if (avail == 0) goto out;
    if (finish_vtx(m, u, R, nR, &dfu) != 0) goto out;
    if (resolve(m, &dfu, to_parent) != 0) goto out;
    to_parent->avail = (unsigned)avail;
    to_parent->overall = dfu.overall;
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
            choose_best_k_by(&dfu, R[i].type, count, m->high, m->kind == POL_LOCALITY);
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

static void emit_vertex(emit *out, uint32_t u, unsigned needs, bool excl)
{
    memit *e = &out->e;
    if (e->n == e->cap) {
        uint32_t nc = e->cap ? e->cap * 2 : 64;
        uint32_t *a = realloc(e->verts, nc * sizeof *a);
        if (a) e->verts = a;
        unsigned *b = realloc(e->needs, nc * sizeof *b);
        if (b) e->needs = b;
        uint8_t *c = realloc(e->excl, nc * sizeof *c);
        if (c) e->excl = c;
        if (!a || !b || !c) {
            e->oom = 1;
            return;
        }
        e->cap = nc;
    }
    e->verts[e->n] = u;
    e->needs[e->n] = needs;
    e->excl[e->n] = excl;
    e->n++;
}

static void emit_edge(emit *out, uint32_t src, uint32_t tgt)
{
    memit *e = &out->e;
    if (e->ne == e->ecap) {
        uint32_t nc = e->ecap ? e->ecap * 2 : 64;
        uint32_t *a = realloc(e->esrc, nc * sizeof *a);
        if (a) e->esrc = a;
        uint32_t *b = realloc(e->etgt, nc * sizeof *b);
        if (b) e->etgt = b;
        if (!a || !b) {
            e->oom = 1;
            return;
        }
        e->ecap = nc;
    }
    e->esrc[e->ne] = src;
    e->etgt[e->ne] = tgt;
    e->ne++;
}

static void emit_free(emit *out)
{
    free(out->simple.d);
    free(out->e.verts);
    free(out->e.needs);
    free(out->e.excl);
    free(out->e.esrc);
    free(out->e.etgt);
}

static job *find_job(matcher *m, int64_t id)
{
    for (size_t i = 0; i < m->njobs; i++)
        if (m->jobs[i].id == id) return &m->jobs[i];
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

static int32_t last_prune_type(const matcher *m, int32_t t)
{
    /* Pruning filters ALL:core,ALL:node; a vertex tracks them except its own type. */
    if (t == m->g->node_type) return m->g->core_type;
    return m->g->node_type;
}

static void subtree_avail(const matcher *m, uint32_t u, int32_t t, int64_t now, int64_t *sum)
{
    const mg_vertex *x = &m->g->v[u];
    for (uint32_t k = 0; k < x->nchild; k++) {
        uint32_t c = m->g->children[x->child0 + k];
        if (m->g->v[c].type == t) *sum += plan_avail(m, c, now, 1); /* nodes hold no nodes */
        else subtree_avail(m, c, t, now, sum);
    }
}

static void update_weight(matcher *m, uint32_t edge)
{
    uint32_t c = m->g->children[edge];
    const mg_vertex *x = &m->g->v[c];
    if (x->nchild == 0) return;
    int32_t t = last_prune_type(m, x->type);
    if (t < 0) return;
    int64_t sum = 0;
    subtree_avail(m, c, t, 0, &sum);
    m->es[edge].weight = (uint64_t)(sum < 0 ? 0 : sum);
}

static int upd_dfv(matcher *m, job *j, emit *out, uint32_t u, unsigned needs, bool excl, bool shadow, int level)
{
    const mg_vertex *x = &m->g->v[u];
    bool mod = shadow || is_xtype(m, x->type);
    excl = excl || mod;
    level++;
    int n = 0;
    m->st[u].color = 2 * m->epoch;
    for (uint32_t k = 0; k < x->nchild; k++) {
        uint32_t e = x->child0 + k, c = m->g->children[e];
        const estate *es = &m->es[e];
        if (visited(m, c)) continue;
        if (es->seq != m->seq && !mod) continue;
        bool cx = (es->seq == m->seq && es->excl) || mod;
        unsigned cn = mod ? (unsigned)m->g->v[c].size : es->needs;
        int sub = upd_dfv(m, j, out, c, cn, cx, mod, level);
        if (sub > 0) {
            n += sub;
            if (m->format != MFMT_SIMPLE) emit_edge(out, u, c);
            if (m->stop_on_1 && m->alloc_type != AT_SAT) update_weight(m, e);
        }
    }
    m->st[u].color = 2 * m->epoch + 1;
    if (excl) n++;
    if (n > 0) {
        if (j) {
            if (excl && add_span(m, u, j->id, m->at, m->duration, needs,
                                 m->alloc_type == AT_ALLOC ? SP_ALLOC : SP_RESERVE) < 0)
                out->e.oom = 1;
            if (add_span(m, u, j->id, m->at, m->duration, 1, SP_X) < 0) out->e.oom = 1;
            if (job_touch(j, u) < 0) out->e.oom = 1;
        }
        if (m->format == MFMT_SIMPLE) {
            for (int i = 0; i < level; i++) mbuf_puts(&out->simple, i ? "---" : "      ---");
            mbuf_printf(&out->simple, "%s[%u:%s]\n", mg_str(m->g, x->name), needs, excl ? "x" : "s");
        }
        emit_vertex(out, u, needs, excl);
    }
    return n;
}

/* --------------------------------------------------------------------- run */

static void cres_free(cres *r, int n)
{
    if (!r) return;
    for (int i = 0; i < n; i++) {
        cres_free(r[i].with, r[i].nwith);
        free(r[i].with);
    }
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
        if (in[i].exclusive == MJ_X_TRUE && !r[i].slot) {
            int32_t *p = realloc(m->xtypes, (size_t)(m->nxtypes + 1) * sizeof *p);
            if (!p) return -1;
            m->xtypes = p;
            m->xtypes[m->nxtypes++] = r[i].type;
        }
        if (r[i].type < 0) return -1;
        r[i].nwith = in[i].nwith; /* set first: cres_free walks partial trees */
        if (in[i].nwith && compile(m, in[i].with, in[i].nwith, &r[i].with) < 0) return -1;
    }
    return 0;
}

/* The minimum number of nodes a request needs (Fluxion's prime_jobspec
 * aggregate for the node type). */
static unsigned min_nodes(const matcher *m, const cres *R, int nR)
{
    unsigned n = 0;
    for (int i = 0; i < nR; i++) {
        unsigned below = min_nodes(m, R[i].with, R[i].nwith);
        if (R[i].type == m->g->node_type) n += R[i].min;
        n += R[i].min * below;
    }
    return n;
}

/* Fluxion's request_feasible: a quick count of the nodes that could serve
 * (constraint, status, free at the target time).  0 go on; -1 not now
 * (EBUSY); -2 never (ENODEV). */
static int request_feasible(matcher *m, int op, const cres *R, int nR)
{
    const mgraph *g = m->g;
    if (g->node_type < 0) return 0;
    unsigned target = min_nodes(m, R, nR), up = 0;
    bool sat_op = op == MOP_ALLOCATE_W_SAT || op == MOP_SATISFIABILITY;
    for (uint32_t v = 0; v < g->nv; v++)
        if (g->v[v].type == g->node_type && g->v[v].status == 0) up++;
    if (!m->constraint && target <= up) return 0;
    if (target > up) return sat_op ? -2 : -1;
    int64_t when = op == MOP_ALLOCATE ? m->at : GRAPH_END - 1;
    unsigned feasible = 0;
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

static int cmp_times(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return x < y ? -1 : x > y;
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
    r->R = r->info = r->text = NULL;
}

/* R, the INFO block and their concatenation; R may be NULL (nothing) */
static void set_texts(mresult *r, int op, const char *R, size_t rlen)
{
    mbuf info = {0}, text = {0};
    info_block(&info, r, op);
    if (R) mbuf_add(&text, R, rlen);
    mbuf_add(&text, info.d ? info.d : "", info.n);
    r->R = R ? strndup(R, rlen) : strdup("");
    r->info = info.d;
    r->text = text.d;
}

static int sat_check(matcher *m, const cres *R, int nR, bool x)
{
    int saved = m->alloc_type;
    int64_t sat_at = m->at, sat_d = m->duration;
    m->alloc_type = AT_SAT;
    m->at = INT64_MAX - m->duration - 1;
    int rc = select_at(m, R, nR, x);
    m->alloc_type = saved;
    m->at = sat_at;
    m->duration = sat_d;
    return rc;
}

/* Fluxion only takes resource types it has interned: a few built in, and
 * those of the graph.  NULL when every type is known, else the first other. */
static const char *unknown_type(const matcher *m, const mj_res *res, int n)
{
    static const char *const builtin[] = {"cluster", "rack", "node", "socket", "slot", "core", "gpu", "ssd"};
    for (int i = 0; i < n; i++) {
        bool ok = false;
        for (size_t b = 0; b < sizeof builtin / sizeof builtin[0] && !ok; b++) ok = !strcmp(res[i].type, builtin[b]);
        if (!ok) {
            int32_t t = mg_type_id(m->g, res[i].type, false);
            ok = t >= 0 && t < m->nknown && m->known[t];
        }
        if (!ok) return res[i].type;
        const char *w = unknown_type(m, res[i].with, res[i].nwith);
        if (w) return w;
    }
    return NULL;
}

void m_run(matcher *m, int op, const mjobspec *js, mresult *r)
{
    memset(r, 0, sizeof *r);
    r->jobid = m->counter;
    r->satisfiable = true;
    m->errmsg[0] = 0;
    if (!js) {
        /* a jobspec that fails to parse: a failed match, the id is not used */
        r->satisfiable = true; /* resource-query: errno EINVAL, never "Unsatisfiable" */
        set_texts(r, op, NULL, 0);
        return;
    }
    const char *unknown = unknown_type(m, js->res, js->nres);
    if (unknown) {
        /* a jobspec error: a failed match that uses no id, as a parse error */
        snprintf(r->err, sizeof r->err, "resource type %.64s is not in the graph "
                 "(Fluxion: Value of \"type\" must be a resource type known to fluxion)", unknown);
        set_texts(r, op, NULL, 0);
        return;
    }
    cres *R = NULL;
    free(m->xtypes);
    m->xtypes = NULL;
    m->nxtypes = 0;
    m->slot_type = mg_type_id(m->g, "slot", true);
    if (compile(m, js->res, js->nres, &R) < 0) {
        snprintf(r->err, sizeof r->err, "out of memory");
        set_texts(r, op, NULL, 0);
        cres_free(R, js->nres);
        free(R);
        return;
    }
    int nR = js->nres;
    m->constraint = js->constraint;
    int64_t dur;
    bool bad_duration = false;
    if (js->duration == 0) dur = GRAPH_END;
    else if (js->duration > (double)GRAPH_END) {
        bad_duration = true;
        dur = GRAPH_END;
    } else dur = (int64_t)ceil(js->duration);
    m->duration = dur;
    m->at = 0;
    uint32_t root = (uint32_t)m->g->root;
    bool x = false;
    for (int i = 0; i < nR; i++)
        if (R[i].type == m->g->v[root].type && R[i].excl == MJ_X_TRUE) x = true;
    int rc = -1;
    bool sat = true;
    if (bad_duration) {
        rc = -1;
    } else if (op == MOP_SATISFIABILITY) {
        rc = sat_check(m, R, nR, x);
        sat = rc == 0;
    } else {
        m->alloc_type = AT_ALLOC;
        int feas = request_feasible(m, op, R, nR);
        if (feas < 0) {
            rc = -1;
            sat = feas == -1; /* -2: never */
        } else {
            rc = select_at(m, R, nR, x);
        }
        if (feas >= 0 && rc != 0) {
            if (op == MOP_ALLOCATE_W_SAT) {
                sat = sat_check(m, R, nR, x) == 0;
            } else if (op == MOP_ALLOCATE_ORELSE_RESERVE) {
                /* earliest end time of existing jobs at which it fits */
                size_t nt = 0;
                int64_t *times = malloc((m->njobs + 1) * sizeof *times);
                if (times) {
                    for (size_t i = 0; i < m->njobs; i++)
                        if (m->jobs[i].state != 2) times[nt++] = m->jobs[i].at + m->jobs[i].duration;
                    qsort(times, nt, sizeof *times, cmp_times);
                    m->alloc_type = AT_RESERVE;
                    for (size_t i = 0; i < nt && rc != 0; i++) {
                        if (times[i] < 1 || (i && times[i] == times[i - 1])) continue;
                        m->at = times[i];
                        rc = select_at(m, R, nR, x);
                    }
                    free(times);
                }
                if (rc != 0) {
                    m->at = 0;
                    sat = sat_check(m, R, nR, x) == 0;
                }
            }
        }
        if (rc == 0) {
            if (m->at >= GRAPH_END) rc = -1;
            else if (m->at + m->duration > GRAPH_END) m->duration = GRAPH_END - m->at;
        }
    }
    /* a traverser error (a jobspec the traversal cannot take, e.g. two
     * siblings of one type) only fails the vertices where it is found:
     * resource-query prints it on stderr and reports the match as usual */
    if (m->errmsg[0]) snprintf(r->err, sizeof r->err, "%s", m->errmsg);
    r->satisfiable = sat;
    emit out;
    memset(&out, 0, sizeof out);
    if (rc == 0 && op != MOP_SATISFIABILITY) {
        if (m->njobs == m->jobcap) {
            size_t nc = m->jobcap ? m->jobcap * 2 : 16;
            job *p = realloc(m->jobs, nc * sizeof *p);
            if (p) {
                m->jobs = p;
                m->jobcap = nc;
            }
        }
        if (m->njobs < m->jobcap) {
            job *j = &m->jobs[m->njobs++];
            memset(j, 0, sizeof *j);
            j->id = m->counter;
            j->at = m->at;
            j->duration = m->duration;
            j->state = m->at == 0 ? 0 : 1;
            m->epoch++; /* the update walk has colors of its own */
            upd_dfv(m, j, &out, root, m->root_needs, m->root_excl, false, 0);
            r->matched = out.e.n > 0;
            r->reserved = m->at != 0;
            r->at = m->at;
            if (!r->matched) {
                /* The selection succeeded but its marks lead nowhere (a slot
                 * that matched below a level the request names, e.g.
                 * node > slot > core on node > socket > core).  Fluxion's
                 * update fails there without setting errno: resource-query
                 * prints "traverser: " and the errno left by earlier calls
                 * (ENOTTY; ENOENT after a search for a reservation time,
                 * which reads as unsatisfiable) and uses no id. */
                free(j->verts);
                m->njobs--;
                bool searched = op == MOP_ALLOCATE_ORELSE_RESERVE && m->at != 0;
                snprintf(r->err, sizeof r->err, "traverser: %s", strerror(searched ? ENOENT : ENOTTY));
                r->satisfiable = !searched;
                r->reserved = false;
                r->at = 0;
                set_texts(r, op, NULL, 0);
                emit_free(&out);
                cres_free(R, nR);
                free(R);
                arena_free(&m->arena);
                return;
            }
        }
    }
    if (op != MOP_SATISFIABILITY) {
        r->counted = true;
        m->counter++;
    }
    if (m->writer_broken) {
        /* Once Fluxion's rlite writer has failed (a node of negative rank),
         * what it gathered stays and every later write fails too: each
         * command still matches (allocations stay, under the same id), then
         * reports the writer error - an allocation as a failed match that
         * uses no id, satisfiability as satisfiable. */
        snprintf(r->err, sizeof r->err, "match writer emit: %s", strerror(EINVAL));
        if (r->counted) m->counter--;
        r->matched = r->reserved = r->counted = false;
        r->at = 0;
        r->satisfiable = true;
        set_texts(r, op, NULL, 0);
        emit_free(&out);
        cres_free(R, nR);
        free(R);
        arena_free(&m->arena);
        return;
    }
    if (!r->matched || m->format == MFMT_SIMPLE) {
        set_texts(r, op, r->matched ? (out.simple.d ? out.simple.d : "") : NULL, out.simple.n);
    } else {
        char *doc = out.e.oom ? NULL : mw_write(m->g, &out.e, m->format, m->at, m->at + m->duration, &m->pending);
        if (!doc) {
            /* as resource-query: the match is reported failed and its id
             * is not used (the allocation it made stays) */
            int e = out.e.oom ? ENOMEM : errno;
            snprintf(r->err, sizeof r->err, "match writer emit: %s", strerror(e));
            if (e == EINVAL) m->writer_broken = true;
            r->matched = r->reserved = false;
            r->at = 0;
            r->counted = false;
            m->counter--;
            r->satisfiable = e != ENOENT;
        }
        set_texts(r, op, doc, doc ? strlen(doc) : 0);
        free(doc);
    }
    if (out.simple.oom || out.e.oom) snprintf(r->err, sizeof r->err, "out of memory");
    emit_free(&out);
    cres_free(R, nR);
    free(R);
    arena_free(&m->arena);
}

int m_cancel(matcher *m, int64_t jobid)
{
    job *j = find_job(m, jobid);
    if (!j || j->state == 2) return -1;
    for (uint32_t i = 0; i < j->nverts; i++) {
        vstate *st = &m->st[j->verts[i]];
        uint32_t k = 0;
        for (uint32_t s = 0; s < st->n; s++)
            if (st->s[s].jobid != jobid) st->s[k++] = st->s[s];
        st->n = k;
    }
    /* as in Fluxion, cancel leaves the out-edge weights (first policy) alone */
    j->state = 2;
    free(j->verts);
    j->verts = NULL;
    j->nverts = j->cap = 0;
    return 0;
}

void m_rewind(matcher *m, int64_t jobid)
{
    for (size_t i = 0; i < m->njobs; i++)
        if (m->jobs[i].id >= jobid) m_cancel(m, m->jobs[i].id);
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
        if (m->jobs[i].id == jobid) {
            const job *j = &m->jobs[i];
            *state = j->state == 0 ? "ALLOCATED" : j->state == 1 ? "RESERVED" : "CANCELED";
            *at = j->at;
            *reserved = j->state == 1;
            return 0;
        }
    return -1;
}
