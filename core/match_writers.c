/* The match writers of resource-query v0.54 other than "simple": jgf, rv1
 * and rv1_nosched, byte for byte.  The documents are built and printed with
 * jansson (json_dumps with JSON_INDENT(0): ", " and ": " separators), the
 * library Fluxion itself prints them with, so key order, escaping and number
 * formatting agree by construction.
 *
 *   jgf          {"graph": {"nodes": [...], "edges": [...]}}: the emitted
 *                vertices in post-order; metadata keeps only what differs
 *                from the defaults (basename when not the type, name when
 *                not basename+id, exclusive when true, size when not 1) and
 *                never the unit (v0.54 does not write it);
 *                one edge per edge followed, without metadata.
 *   rv1_nosched  {"version": 1, "execution": {"R_lite": [...], "nodelist":
 *                [...], "properties"?: {...}, "starttime", "expiration"}}
 *   rv1          the same plus "scheduling": the jgf document.
 *
 * R_lite follows Fluxion's rlite writer: core and gpu ids seen since the
 * last node are that node's children; nodes with the same children string
 * share one entry; entries come in the order of that string (a std::map);
 * nodes without cores or gpus are left out, and a match without any such
 * node writes no rv1 at all.  The nodelist is flux-core's hostlist of the
 * node names sorted by rank (std::sort, reproduced for equal ranks). */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <jansson.h>
#include "mbuf.h"
#include "match_sort.h"
#include "match_writers.h"

/* ------------------------------------------------------------ small utils */

static const char *const format_names[] = {"simple", "rv1", "rv1_nosched", "jgf"};

int mw_format(const char *name)
{
    for (int i = 0; i < 4; i++)
        if (name && !strcmp(name, format_names[i])) return i;
    return -1;
}

const char *mw_format_name(int format)
{
    return format >= MFMT_SIMPLE && format <= MFMT_JGF ? format_names[format] : NULL;
}

static int cmp_ll(const void *a, const void *b)
{
    long long x = *(const long long *)a, y = *(const long long *)b;
    return x < y ? -1 : x > y;
}

/* Fluxion's compress_ids: "1-3,5" from ascending ids (duplicates kept). */
static void compress_ids(mbuf *o, const long long *ids, size_t n)
{
    long long base = LLONG_MIN, runlen = 0;
    for (size_t i = 0; i < n; i++) {
        long long id = ids[i];
        if (base != LLONG_MIN && id == base + runlen + 1) {
            runlen++;
        } else {
            if (runlen != 0) {
                mbuf_add(o, "-", 1);
                mbuf_printf(o, "%lld", (long long)(base + runlen));
                mbuf_add(o, ",", 1);
            } else if (base != LLONG_MIN) {
                mbuf_add(o, ",", 1);
            }
            mbuf_printf(o, "%lld", (long long)(id));
            base = id;
            runlen = 0;
        }
    }
    if (runlen) {
        mbuf_add(o, "-", 1);
        mbuf_printf(o, "%lld", (long long)(base + runlen));
    }
}

static json_t *ids_string(long long *ids, size_t n)
{
    qsort(ids, n, sizeof *ids, cmp_ll);
    mbuf s = {0};
    compress_ids(&s, ids, n);
    json_t *j = s.oom ? NULL : json_string(s.d ? s.d : "");
    free(s.d);
    return j;
}

/* ------------------------------------------------------------- hostlists */

/* flux-core libhostlist, the parts hostlist_append + hostlist_encode use. */
typedef struct hrange {
    const char *prefix;
    size_t plen;
    unsigned long lo, hi;
    int width;
    bool single;
} hrange;

static int zero_padded(unsigned long num, int width)
{
    int n = 1;
    while (num /= 10UL) n++;
    return width > n ? width - n : 0;
}

static bool width_equiv(unsigned long n, int *wn, unsigned long m, int *wm)
{
    if (wn == wm) return true;
    int npad = zero_padded(n, *wn), nmpad = zero_padded(n, *wm);
    int mpad = zero_padded(m, *wm), mnpad = zero_padded(m, *wn);
    if (npad != nmpad && mpad != mnpad) return false;
    if (npad != nmpad) {
        *wm = *wn;
        return true;
    }
    *wn = *wm;
    return true;
}

static int prefix_cmp(const hrange *a, const hrange *b)
{
    size_t n = a->plen < b->plen ? a->plen : b->plen;
    int r = memcmp(a->prefix, b->prefix, n);
    if (r) return r;
    if (a->plen != b->plen) return a->plen < b->plen ? -1 : 1;
    return (int)b->single - (int)a->single;
}

static bool within_range(const hrange *a, const hrange *b)
{
    return prefix_cmp(a, b) == 0 && !a->single && !b->single;
}

/* flux-core's hostlist encoding of names in order ("node[0-3,7],login1"). */
static char *mw_hostlist(const char *const *names, size_t n)
{
    hrange *hr = malloc((n ? n : 1) * sizeof *hr);
    if (!hr) return NULL;
    size_t nr = 0;
    for (size_t i = 0; i < n; i++) {
        const char *s = names[i];
        size_t len = strlen(s);
        if (!len) continue;
        size_t k = len;
        while (k > 0 && s[k - 1] >= '0' && s[k - 1] <= '9') k--;
        hrange h = {s, len, 0, 0, 0, true};
        if (k < len && len - k < 20) {
            h.plen = k;
            h.lo = h.hi = strtoul(s + k, NULL, 10);
            h.width = (int)(len - k);
            h.single = false;
        }
        if (nr > 0) {
            hrange *t = &hr[nr - 1];
            if (prefix_cmp(t, &h) == 0 && t->hi == h.lo - 1 && width_equiv(t->lo, &t->width, h.lo, &h.width)) {
                t->hi = h.hi;
                continue;
            }
        }
        hr[nr++] = h;
    }
    mbuf o = {0};
    mbuf_add(&o, "", 0);
    for (size_t i = 0; i < nr;) {
        bool bracket = hr[i].hi > hr[i].lo || (i + 1 < nr && within_range(&hr[i], &hr[i + 1]));
        mbuf_add(&o, hr[i].prefix, hr[i].plen);
        if (bracket) mbuf_add(&o, "[", 1);
        for (;;) {
            if (!hr[i].single) {
                char t[64];
                int m = snprintf(t, sizeof t, "%0*lu", hr[i].width, hr[i].lo);
                mbuf_add(&o, t, (size_t)m);
                if (hr[i].lo < hr[i].hi) {
                    m = snprintf(t, sizeof t, "-%0*lu", hr[i].width, hr[i].hi);
                    mbuf_add(&o, t, (size_t)m);
                }
            }
            if (++i >= nr || !within_range(&hr[i], &hr[i - 1])) break;
            if (bracket) mbuf_add(&o, ",", 1);
        }
        if (bracket) mbuf_add(&o, "]", 1);
        if (i < nr) mbuf_add(&o, ",", 1);
    }
    free(hr);
    if (o.oom) {
        free(o.d);
        errno = ENOMEM;
        return NULL;
    }
    return o.d;
}

/* ------------------------------------------------------------------- jgf */

static int cmp_prop(const void *a, const void *b, void *g)
{
    const mgraph *gr = g;
    const uint32_t *x = a, *y = b;
    return strcmp(mg_str(gr, gr->props[2 * *x]), mg_str(gr, gr->props[2 * *y]));
}

static const mgraph *prop_graph;
static int cmp_prop_q(const void *a, const void *b)
{
    return cmp_prop(a, b, (void *)prop_graph);
}

/* properties as a std::map<string,string> would hold them: sorted by key,
 * the last of equal keys wins */
static json_t *props_json(const mgraph *g, const mg_vertex *x)
{
    json_t *p = json_object();
    if (!p) return NULL;
    uint32_t *ord = malloc(x->nprop * sizeof *ord);
    if (!ord) {
        json_decref(p);
        return NULL;
    }
    for (uint32_t i = 0; i < x->nprop; i++) ord[i] = x->prop0 + i;
    prop_graph = g;
    qsort(ord, x->nprop, sizeof *ord, cmp_prop_q);
    for (uint32_t i = 0; i < x->nprop; i++)
        if (json_object_set_new(p, mg_str(g, g->props[2 * ord[i]]), json_string(mg_str(g, g->props[2 * ord[i] + 1])))) {
            free(ord);
            json_decref(p);
            return NULL;
        }
    free(ord);
    return p;
}

static json_t *jgf_vertex(const mgraph *g, uint32_t v, unsigned needs, bool excl, const char *label)
{
    const mg_vertex *x = &g->v[v];
    const char *type = mg_type_name(g, x->type), *basename = mg_str(g, x->basename), *name = mg_str(g, x->name);
    char def[512];
    snprintf(def, sizeof def, "%s%lld", basename, (long long)x->id);
    json_t *m = json_object();
    if (!m) return NULL;
    int bad = json_object_set_new(m, "type", json_string(type));
    if (strcmp(basename, type)) bad |= json_object_set_new(m, "basename", json_string(basename));
    if (strcmp(name, def)) bad |= json_object_set_new(m, "name", json_string(name));
    bad |= json_object_set_new(m, "id", json_integer(x->id));
    bad |= json_object_set_new(m, "rank", json_integer((int)x->rank)); /* an int, as json_pack "s:i" */
    if (x->nprop) {
        json_t *p = props_json(g, x);
        bad |= !p || json_object_set_new(m, "properties", p);
    }
    if (excl) bad |= json_object_set_new(m, "exclusive", json_true());
    if (needs != 1) bad |= json_object_set_new(m, "size", json_integer((json_int_t)needs));
    if (*mg_str(g, x->path))
        bad |= json_object_set_new(m, "paths", json_pack("{s:s}", "containment", mg_str(g, x->path)));
    /* the jobspec label a match gave the vertex, as Fluxion's writer finds
     * it in the vertex's ephemeral store */
    if (label) bad |= json_object_set_new(m, "ephemeral", json_pack("{s:s}", "label", label));
    char id[32];
    snprintf(id, sizeof id, "%lld", (long long)x->uniq_id);
    if (bad) {
        json_decref(m);
        return NULL;
    }
    return json_pack("{s:s s:o}", "id", id, "metadata", m); /* steals m */
}

/* {"graph": {...}}; NULL + ENOENT when there are vertices but no edges
 * (Fluxion's check_array_sizes), NULL + 0 when nothing was emitted. */
static json_t *jgf_doc(const mgraph *g, const memit *e)
{
    errno = 0;
    if (e->n == 0 && e->ne == 0) return NULL;
    if (e->n == 0 || e->ne == 0) {
        errno = ENOENT;
        return NULL;
    }
    json_t *nodes = json_array(), *edges = json_array();
    if (!nodes || !edges) goto oom;
    for (uint32_t i = 0; i < e->n; i++)
        if (json_array_append_new(nodes, jgf_vertex(g, e->verts[i], e->needs[i], e->excl[i],
                                                    e->label ? e->label[i] : NULL)))
            goto oom;
    for (uint32_t i = 0; i < e->ne; i++) {
        char s[32], t[32];
        snprintf(s, sizeof s, "%lld", (long long)g->v[e->esrc[i]].uniq_id);
        snprintf(t, sizeof t, "%lld", (long long)g->v[e->etgt[i]].uniq_id);
        if (json_array_append_new(edges, json_pack("{s:s s:s}", "source", s, "target", t))) goto oom;
    }
    json_t *doc = json_pack("{s:{s:o s:o}}", "graph", "nodes", nodes, "edges", edges);
    if (doc) return doc;
    nodes = edges = NULL;
oom:
    json_decref(nodes);
    json_decref(edges);
    errno = ENOMEM;
    return NULL;
}

/* ----------------------------------------------------------------- R_lite */

typedef struct rankhost {
    long long rank;
    const char *name;
} rankhost;

typedef struct group {
    char *key;               /* the children object, printed */
    rankhost *rh;
    size_t n, cap;
} group;

typedef struct lite {
    group *gr;
    size_t ng, gcap;
    group *pr;               /* properties: key -> ranks (rh.name unused) */
    size_t np, pcap;
    int oom;
} lite;

static group *group_get(group **arr, size_t *n, size_t *cap, const char *key, int *oom)
{
    for (size_t i = 0; i < *n; i++)
        if (!strcmp((*arr)[i].key, key)) return &(*arr)[i];
    if (*n == *cap) {
        size_t nc = *cap ? *cap * 2 : 8;
        group *p = realloc(*arr, nc * sizeof *p);
        if (!p) {
            *oom = 1;
            return NULL;
        }
        *arr = p;
        *cap = nc;
    }
    group *g = &(*arr)[*n];
    memset(g, 0, sizeof *g);
    if (!(g->key = strdup(key))) {
        *oom = 1;
        return NULL;
    }
    (*n)++;
    return g;
}

static void group_push(group *g, long long rank, const char *name, int *oom)
{
    if (!g) return;
    if (g->n == g->cap) {
        size_t nc = g->cap ? g->cap * 2 : 8;
        rankhost *p = realloc(g->rh, nc * sizeof *p);
        if (!p) {
            *oom = 1;
            return;
        }
        g->rh = p;
        g->cap = nc;
    }
    g->rh[g->n].rank = rank;
    g->rh[g->n].name = name;
    g->n++;
}

static int cmp_group(const void *a, const void *b)
{
    return strcmp(((const group *)a)->key, ((const group *)b)->key);
}

/* std::sort of rank/host pairs by rank: libstdc++'s permutation */
static int sort_rankhosts(rankhost *rh, size_t n)
{
    if (n < 2) return 0;
    int64_t *keys = malloc(n * sizeof *keys);
    uint32_t *idx = malloc(n * sizeof *idx);
    rankhost *tmp = malloc(n * sizeof *tmp);
    int rc = -1;
    if (keys && idx && tmp) {
        for (size_t i = 0; i < n; i++) {
            keys[i] = rh[i].rank;
            idx[i] = (uint32_t)i;
        }
        if (msort_pairs(keys, idx, (uint32_t)n, false) == 0) {
            memcpy(tmp, rh, n * sizeof *tmp);
            for (size_t i = 0; i < n; i++) rh[i] = tmp[idx[i]];
            rc = 0;
        }
    }
    free(keys);
    free(idx);
    free(tmp);
    return rc;
}

static void lite_free(lite *l)
{
    for (size_t i = 0; i < l->ng; i++) free(l->gr[i].key), free(l->gr[i].rh);
    for (size_t i = 0; i < l->np; i++) free(l->pr[i].key), free(l->pr[i].rh);
    free(l->gr);
    free(l->pr);
}

/* Gathers nodes as Fluxion's rlite writer does; returns 0 or -1 (ENOMEM). */
static int lite_gather(const mgraph *g, const memit *e, lite *l)
{
    long long *ids[2] = {malloc((e->n + 1) * sizeof(long long)), malloc((e->n + 1) * sizeof(long long))};
    size_t nid[2] = {0, 0};
    static const char *const kind[2] = {"core", "gpu"};
    if (!ids[0] || !ids[1]) l->oom = 1;
    for (uint32_t i = 0; i < e->n && !l->oom; i++) {
        const mg_vertex *x = &g->v[e->verts[i]];
        const char *type = mg_type_name(g, x->type);
        if (!strcmp(type, "core") || !strcmp(type, "gpu")) {
            int k = type[0] == 'g';
            ids[k][nid[k]++] = x->id;
            continue;
        }
        if (x->type != g->node_type || (nid[0] == 0 && nid[1] == 0)) continue;
        json_t *co = json_object();
        for (int k = 0; k < 2 && co; k++)
            if (nid[k] && json_object_set_new(co, kind[k], ids_string(ids[k], nid[k]))) {
                json_decref(co);
                co = NULL;
            }
        char *key = co ? json_dumps(co, JSON_INDENT(0)) : NULL;
        json_decref(co);
        nid[0] = nid[1] = 0;
        if (!key) {
            l->oom = 1;
            break;
        }
        group_push(group_get(&l->gr, &l->ng, &l->gcap, key, &l->oom), x->rank, mg_str(g, x->name), &l->oom);
        free(key);
        for (uint32_t p = 0; p < x->nprop && !l->oom; p++) {
            const char *k = mg_str(g, g->props[2 * (x->prop0 + p)]), *v = mg_str(g, g->props[2 * (x->prop0 + p) + 1]);
            mbuf s = {0};
            mbuf_add(&s, k, strlen(k));
            if (*v) {
                mbuf_add(&s, "=", 1);
                mbuf_add(&s, v, strlen(v));
            }
            if (s.oom) l->oom = 1;
            else group_push(group_get(&l->pr, &l->np, &l->pcap, s.d, &l->oom), x->rank, NULL, &l->oom);
            free(s.d);
        }
    }
    free(ids[0]);
    free(ids[1]);
    if (l->oom) return -1;
    if (l->ng > 1) qsort(l->gr, l->ng, sizeof *l->gr, cmp_group);
    if (l->np > 1) qsort(l->pr, l->np, sizeof *l->pr, cmp_group);
    return 0;
}

static json_t *ranks_string(rankhost *rh, size_t n)
{
    long long *r = malloc((n + 1) * sizeof *r);
    if (!r) return NULL;
    for (size_t i = 0; i < n; i++) r[i] = rh[i].rank;
    json_t *j = ids_string(r, n);
    free(r);
    return j;
}

/* execution: {"R_lite", "nodelist", "properties"?, "starttime", "expiration"} */
static json_t *execution(const lite *l, int64_t start, int64_t end)
{
    json_t *rl = json_array(), *ex = NULL;
    rankhost *all = NULL;
    char *hl = NULL;
    const char **names = NULL;
    size_t nall = 0;
    for (size_t i = 0; i < l->ng; i++) nall += l->gr[i].n;
    all = malloc((nall + 1) * sizeof *all);
    names = malloc((nall + 1) * sizeof *names);
    if (!rl || !all || !names) goto out;
    nall = 0;
    for (size_t i = 0; i < l->ng; i++) {
        group *gr = &l->gr[i];
        if (sort_rankhosts(gr->rh, gr->n) < 0) goto out;
        json_t *children = json_loads(gr->key, 0, NULL);
        if (json_array_append_new(rl, json_pack("{s:o s:o}", "rank", ranks_string(gr->rh, gr->n), "children", children)))
            goto out;
        memcpy(all + nall, gr->rh, gr->n * sizeof *all);
        nall += gr->n;
    }
    if (sort_rankhosts(all, nall) < 0) goto out;
    for (size_t i = 0; i < nall; i++) names[i] = all[i].name;
    if (!(hl = mw_hostlist(names, nall))) goto out;
    ex = json_pack("{s:o s:[s]}", "R_lite", rl, "nodelist", hl);
    rl = NULL;
    if (!ex) goto out;
    if (l->np) {
        json_t *props = json_object();
        for (size_t i = 0; i < l->np && props; i++)
            if (json_object_set_new(props, l->pr[i].key, ranks_string(l->pr[i].rh, l->pr[i].n))) {
                json_decref(props);
                props = NULL;
            }
        if (!props || json_object_set_new(ex, "properties", props)) {
            json_decref(ex);
            ex = NULL;
            goto out;
        }
    }
    if (json_object_set_new(ex, "starttime", json_integer(start)) ||
        json_object_set_new(ex, "expiration", json_integer(end))) {
        json_decref(ex);
        ex = NULL;
    }
out:
    json_decref(rl);
    free(all);
    free(names);
    free(hl);
    return ex;
}

/* ------------------------------------------------------------------ entry */

static char *dump(json_t *doc)
{
    char *s = json_dumps(doc, JSON_INDENT(0));
    json_decref(doc);
    if (!s) {
        errno = ENOMEM;
        return NULL;
    }
    size_t n = strlen(s);
    char *t = realloc(s, n + 2);
    if (!t) {
        free(s);
        errno = ENOMEM;
        return NULL;
    }
    t[n] = '\n';
    t[n + 1] = 0;
    return t;
}

/* Room for n vertices and ne edges in e; -1 when out of memory. */
static int memit_reserve(memit *e, uint32_t n, uint32_t ne)
{
    if (n > e->cap) {
        uint32_t nc = e->cap ? e->cap : 64;
        while (nc < n) nc *= 2;
        uint32_t *v = realloc(e->verts, nc * sizeof *v);
        if (v) e->verts = v;
        unsigned *k = realloc(e->needs, nc * sizeof *k);
        if (k) e->needs = k;
        uint8_t *x = realloc(e->excl, nc * sizeof *x);
        if (x) e->excl = x;
        if (!v || !k || !x) return -1;
        e->cap = nc;
    }
    if (ne > e->ecap) {
        uint32_t nc = e->ecap ? e->ecap : 64;
        while (nc < ne) nc *= 2;
        uint32_t *a = realloc(e->esrc, nc * sizeof *a);
        if (a) e->esrc = a;
        uint32_t *b = realloc(e->etgt, nc * sizeof *b);
        if (b) e->etgt = b;
        if (!a || !b) return -1;
        e->ecap = nc;
    }
    return 0;
}

/* gives emitted vertex i a label (copied); -1 when out of memory */
static int memit_label(memit *e, uint32_t i, const char *label)
{
    if (!e->label) {
        e->label = calloc(e->cap ? e->cap : 1, sizeof *e->label);
        e->lcap = e->cap ? e->cap : 1;
        if (!e->label) return -1;
    }
    if (e->lcap < e->cap) {
        char **p = realloc(e->label, e->cap * sizeof *p);
        if (!p) return -1;
        memset(p + e->lcap, 0, (e->cap - e->lcap) * sizeof *p);
        e->label = p;
        e->lcap = e->cap;
    }
    if (i >= e->lcap) return -1;
    free(e->label[i]);
    return (e->label[i] = strdup(label)) ? 0 : -1;
}

void mw_vertex(memit *e, uint32_t v, unsigned needs, bool excl, const char *label)
{
    if (e->oom || memit_reserve(e, e->n + 1, e->ne) < 0) {
        e->oom = 1;
        return;
    }
    e->verts[e->n] = v;
    e->needs[e->n] = needs;
    e->excl[e->n] = excl;
    e->n++;
    if (label && memit_label(e, e->n - 1, label) < 0) e->oom = 1;
}

void mw_edge(memit *e, uint32_t src, uint32_t tgt)
{
    if (e->oom || memit_reserve(e, e->n, e->ne + 1) < 0) {
        e->oom = 1;
        return;
    }
    e->esrc[e->ne] = src;
    e->etgt[e->ne] = tgt;
    e->ne++;
}

/* Appends what b emitted to a (the vertices and edges alike). */
static int memit_append(memit *a, const memit *b)
{
    uint32_t n0 = a->n, n = a->n + b->n, ne = a->ne + b->ne;
    if (memit_reserve(a, n, ne) < 0) return -1;
    if (b->n) {
        memcpy(a->verts + a->n, b->verts, b->n * sizeof *b->verts);
        memcpy(a->needs + a->n, b->needs, b->n * sizeof *b->needs);
        memcpy(a->excl + a->n, b->excl, b->n * sizeof *b->excl);
    }
    if (b->ne) {
        memcpy(a->esrc + a->ne, b->esrc, b->ne * sizeof *b->esrc);
        memcpy(a->etgt + a->ne, b->etgt, b->ne * sizeof *b->etgt);
    }
    a->n = n;
    a->ne = ne;
    for (uint32_t i = 0; b->label && i < b->n; i++)
        if (b->label[i] && memit_label(a, n0 + i, b->label[i]) < 0) return -1;
    return 0;
}

void mw_pending_free(memit *p)
{
    free(p->verts);
    free(p->needs);
    free(p->excl);
    free(p->esrc);
    free(p->etgt);
    for (uint32_t i = 0; p->label && i < p->lcap; i++) free(p->label[i]);
    free(p->label);
    memset(p, 0, sizeof *p);
}

char *mw_write(const mgraph *g, const memit *e, int format, int64_t starttime, int64_t expiration, memit *pending)
{
    if (format == MFMT_JGF) {
        json_t *doc = jgf_doc(g, e);
        if (!doc) return errno ? NULL : strdup("");
        return dump(doc);
    }
    lite l;
    memset(&l, 0, sizeof l);
    if (lite_gather(g, e, &l) < 0) {
        lite_free(&l);
        errno = ENOMEM;
        return NULL;
    }
    if (l.ng == 0) {
        /* Fluxion's rv1 writer writes nothing then, and its jgf half keeps
         * what it was given: those vertices open the next rv1 it writes */
        lite_free(&l);
        if (format == MFMT_RV1 && pending && memit_append(pending, e) < 0) {
            errno = ENOMEM;
            return NULL;
        }
        return strdup("");
    }
    /* Fluxion v0.54 keeps ranks in an idset, which has no room for a
     * negative rank: the writer fails (and, see m_run, stays failed) */
    for (size_t i = 0; i < l.ng; i++)
        for (size_t k = 0; k < l.gr[i].n; k++)
            if (l.gr[i].rh[k].rank < 0) {
                lite_free(&l);
                errno = EINVAL;
                return NULL;
            }
    json_t *sched = NULL;
    if (format == MFMT_RV1) {
        if (pending && pending->n) {
            if (memit_append(pending, e) < 0) {
                lite_free(&l);
                errno = ENOMEM;
                return NULL;
            }
            sched = jgf_doc(g, pending);
            mw_pending_free(pending);
        } else {
            sched = jgf_doc(g, e);
        }
        if (!sched) {
            int err = errno;
            lite_free(&l);
            if (!err) return strdup("");
            errno = err;
            return NULL;
        }
    }
    json_t *ex = execution(&l, starttime, expiration);
    lite_free(&l);
    if (!ex) {
        json_decref(sched);
        errno = ENOMEM;
        return NULL;
    }
    json_t *doc = sched ? json_pack("{s:i s:o s:o}", "version", 1, "execution", ex, "scheduling", sched)
                        : json_pack("{s:i s:o}", "version", 1, "execution", ex);
    if (!doc) {
        errno = ENOMEM;
        return NULL;
    }
    return dump(doc);
}

/* ------------------------------------------------------------ whole graph */

char *mw_graph_jgf(const mgraph *g)
{
    json_t *nodes = json_array(), *edges = json_array();
    if (!nodes || !edges) goto oom;
    for (uint32_t v = 0; v < g->nv; v++) {
        const mg_vertex *x = &g->v[v];
        char id[32];
        snprintf(id, sizeof id, "%lld", (long long)x->uniq_id);
        json_t *m = json_pack("{s:s s:s s:s s:I s:I s:I s:b s:s s:I}", "type", mg_type_name(g, x->type), "basename",
                              mg_str(g, x->basename), "name", mg_str(g, x->name), "id", (json_int_t)x->id, "uniq_id",
                              (json_int_t)x->uniq_id, "rank", (json_int_t)x->rank, "exclusive", (int)x->exclusive,
                              "unit", mg_str(g, x->unit), "size", (json_int_t)x->size);
        if (!m) goto oom;
        if (x->status && json_object_set_new(m, "status", json_integer(x->status))) goto oom_m;
        if (x->nprop) {
            json_t *p = props_json(g, x);
            if (!p || json_object_set_new(m, "properties", p)) goto oom_m;
        }
        if (json_object_set_new(m, "paths", json_pack("{s:s}", "containment", mg_str(g, x->path)))) goto oom_m;
        if (json_array_append_new(nodes, json_pack("{s:s s:o}", "id", id, "metadata", m))) goto oom;
        for (uint32_t k = 0; k < x->nchild; k++) {
            char t[32];
            snprintf(t, sizeof t, "%lld", (long long)g->v[g->children[x->child0 + k]].uniq_id);
            if (json_array_append_new(edges, json_pack("{s:s s:s s:{s:{s:s}}}", "source", id, "target", t, "metadata",
                                                       "name", "containment", "contains")))
                goto oom;
        }
        continue;
    oom_m:
        json_decref(m);
        goto oom;
    }
    json_t *doc = json_pack("{s:{s:o s:o}}", "graph", "nodes", nodes, "edges", edges);
    if (!doc) return NULL;
    char *s = json_dumps(doc, JSON_COMPACT);
    json_decref(doc);
    return s;
oom:
    json_decref(nodes);
    json_decref(edges);
    errno = ENOMEM;
    return NULL;
}
