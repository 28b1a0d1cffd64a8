/* The matcher's scoring (see match_score.h): candidates kept per type,
 * merged up the tree, and the best k chosen in Fluxion's order. */
#include <stdlib.h>
#include <string.h>
#include "match_score.h"
#include "match_sort.h"

void sc_init(scoring *s)
{
    memset(s, 0, sizeof *s);
    s->overall = -1;
    s->cap_hint = 4;
}

void sc_free(scoring *s)
{
    for (int i = 0; i < s->nt; i++) free(s->t[i].g);
    free(s->t);
    s->t = NULL;
    s->nt = s->cap = 0;
}

evals *sc_find(scoring *s, int32_t type)
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

evals *sc_get_new(scoring *s, int32_t type)
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

int sc_grow(evals *e, uint32_t first_cap)
{
    uint32_t nc = e->cap ? e->cap * 2 : first_cap;
    egroup *p = realloc(e->g, (size_t)nc * sizeof *p);
    if (!p) return -1;
    e->g = p;
    e->cap = nc;
    return 0;
}

unsigned sc_qual(scoring *s, int32_t type)
{
    evals *e = sc_get(s, type); /* like std::map operator[]: creates */
    return e ? e->qual : 0;
}

unsigned sc_total(scoring *s, int32_t type)
{
    evals *e = sc_get(s, type);
    return e ? e->total : 0;
}

int sc_merge(scoring *s, scoring *o)
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

/* keys: the sort key of each candidate (NULL: its score) */
static int std_sort(egroup *g, const int64_t *sortkey, uint32_t n, bool hi)
{
    if (n < 2) return 0;
    msort_key stack_keys[64];
    msort_key *keys = n <= 64 ? stack_keys : malloc((size_t)n * sizeof *keys);
    if (!keys) return -1;
    for (uint32_t i = 0; i < n; i++) {
        keys[i].score = sortkey ? sortkey[i] : g[i].score;
        keys[i].idx = i;
    }
    /* in order already, or reversed (a node's leaves): moved in place */
    int mono = msort_monotone(keys, n, hi);
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
            msort_introsort(keys, keys + n, hi);
            memcpy(tmp, g, (size_t)n * sizeof *tmp);
            for (uint32_t i = 0; i < n; i++) g[i] = tmp[keys[i].idx];
            if (tmp != stack_tmp) free(tmp);
        }
    }
    if (keys != stack_keys) free(keys);
    return rc;
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

int sc_choose_best_k(scoring *s, int32_t type, unsigned k, bool hi, bool intervals)
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
