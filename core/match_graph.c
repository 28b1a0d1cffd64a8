/* Resource graphs for the matcher: a compact containment tree loaded from
 * JGF with a hand-written JSON scanner (no DOM: 100,000 vertices load in a
 * fraction of a second and take a few megabytes).
 *
 * Layout: an array of fixed-size vertices, an interned string pool (names,
 * types, property keys and values repeat a lot), children as ranges of one
 * index array in JGF edge order (the order Fluxion visits them).  Only the
 * containment subsystem is kept, and of each edge only the parent -> child
 * direction (Fluence lists every edge both ways): an edge counts when the
 * target's containment path is the source's path plus one component. */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <stdint.h>
#include <string.h>
#include <unistd.h>
#include "escape.h"
#include "jscan.h"
#include "match_graph.h"
#include "readfile.h"

/* ------------------------------------------------------------ string pool */

static uint32_t pool_add(mgraph *g, const char *s, size_t n)
{
    if (g->strlen + n + 1 > g->strcap) {
        size_t nc = g->strcap ? g->strcap : 4096;
        while (g->strlen + n + 1 > nc) nc *= 2;
        char *p = realloc(g->str, nc);
        if (!p) return (uint32_t)-1;
        g->str = p;
        g->strcap = nc;
    }
    uint32_t off = (uint32_t)g->strlen;
    memcpy(g->str + off, s, n);
    g->str[off + n] = 0;
    g->strlen += n + 1;
    return off;
}

static uint64_t hash_bytes(const char *s, size_t n)
{
    uint64_t h = 1469598103934665603ULL;
    for (size_t i = 0; i < n; i++) h = (h ^ (unsigned char)s[i]) * 1099511628211ULL;
    return h;
}

static int ihash_grow(mgraph *g)
{
    size_t nc = g->ihcap ? g->ihcap * 2 : 1024;
    uint32_t *t = malloc(nc * sizeof *t);
    if (!t) return -1;
    for (size_t i = 0; i < nc; i++) t[i] = (uint32_t)-1;
    for (size_t i = 0; i < g->ihcap; i++) {
        uint32_t off = g->ihash[i];
        if (off == (uint32_t)-1) continue;
        const char *s = g->str + off;
        size_t j = hash_bytes(s, strlen(s)) & (nc - 1);
        while (t[j] != (uint32_t)-1) j = (j + 1) & (nc - 1);
        t[j] = off;
    }
    free(g->ihash);
    g->ihash = t;
    g->ihcap = nc;
    return 0;
}

uint32_t mg_intern(mgraph *g, const char *s, size_t n)
{
    if ((g->ihn + 1) * 2 > g->ihcap && ihash_grow(g) < 0) return (uint32_t)-1;
    size_t j = hash_bytes(s, n) & (g->ihcap - 1);
    while (g->ihash[j] != (uint32_t)-1) {
        const char *t = g->str + g->ihash[j];
        if (strncmp(t, s, n) == 0 && t[n] == 0) return g->ihash[j];
        j = (j + 1) & (g->ihcap - 1);
    }
    uint32_t off = pool_add(g, s, n);
    if (off == (uint32_t)-1) return off;
    g->ihash[j] = off;
    g->ihn++;
    return off;
}

const char *mg_str(const mgraph *g, uint32_t off)
{
    return g->str + off;
}

/* The type named by s's n bytes (up to a NUL in them, as a C string ends) */
static int32_t type_id(mgraph *g, const char *s, size_t n, bool add)
{
    n = strnlen(s, n);
    for (int i = 0; i < g->ntypes; i++) {
        const char *t = g->str + g->types[i];
        if (strncmp(t, s, n) == 0 && t[n] == 0) return i;
    }
    if (!add) return -1;
    if (g->ntypes == g->typecap) {
        int nc = g->typecap ? g->typecap * 2 : 16;
        uint32_t *t = realloc(g->types, (size_t)nc * sizeof *t);
        if (!t) return -1;
        g->types = t;
        g->typecap = nc;
    }
    uint32_t off = mg_intern(g, s, n);
    if (off == (uint32_t)-1) return -1;
    g->types[g->ntypes] = off;
    int32_t id = g->ntypes++;
    const char *name = g->str + off;
    if (strcmp(name, "node") == 0) g->node_type = id;
    if (strcmp(name, "core") == 0) g->core_type = id;
    if (strcmp(name, "gpu") == 0) g->gpu_type = id;
    return id;
}

int32_t mg_type_id(mgraph *g, const char *s, bool add)
{
    return type_id(g, s, strlen(s), add);
}

const char *mg_type_name(const mgraph *g, int32_t t)
{
    return (t >= 0 && t < g->ntypes) ? g->str + g->types[t] : "";
}

mgraph *mg_new(void)
{
    mgraph *g = calloc(1, sizeof *g);
    if (!g) return NULL;
    g->root = -1;
    g->node_type = g->core_type = g->gpu_type = -1;
    mg_intern(g, "", 0); /* offset 0 is the empty string */
    return g;
}

void mg_free(mgraph *g)
{
    if (!g) return;
    free(g->v);
    free(g->children);
    free(g->backs);
    free(g->props);
    free(g->str);
    free(g->ihash);
    free(g->types);
    free(g);
}

bool mg_has_prop(const mgraph *g, uint32_t v, const char *key)
{
    const mg_vertex *x = &g->v[v];
    for (uint32_t i = 0; i < x->nprop; i++)
        if (strcmp(g->str + g->props[2 * (x->prop0 + i)], key) == 0) return true;
    return false;
}

static mg_vertex *new_vertex(mgraph *g)
{
    if (g->nv == g->cap) {
        uint32_t nc = g->cap ? g->cap * 2 : 256;
        mg_vertex *p = realloc(g->v, (size_t)nc * sizeof *p);
        if (!p) return NULL;
        g->v = p;
        g->cap = nc;
    }
    mg_vertex *x = &g->v[g->nv++];
    memset(x, 0, sizeof *x);
    x->parent = -1;
    return x;
}

static int add_prop(mgraph *g, mg_vertex *x, const char *k, size_t kn, const char *val, size_t vn)
{
    if (g->nprops == g->propcap) {
        uint32_t nc = g->propcap ? g->propcap * 2 : 256;
        uint32_t *p = realloc(g->props, (size_t)nc * 2 * sizeof *p);
        if (!p) return -1;
        g->props = p;
        g->propcap = nc;
    }
    if (x->nprop == 0) x->prop0 = g->nprops;
    uint32_t ko = mg_intern(g, k, kn), vo = mg_intern(g, val, vn);
    if (ko == (uint32_t)-1 || vo == (uint32_t)-1) return -1;
    g->props[2 * g->nprops] = ko;
    g->props[2 * g->nprops + 1] = vo;
    g->nprops++;
    x->nprop++;
    return 0;
}

/* ----------------------------------------------------------------- loader */

typedef struct jedge {
    uint32_t src, tgt;
    bool back;               /* metadata.name.containment "in": child -> parent */
    bool other;              /* not containment, or a loop: kept by Fluxion, never a child */
} jedge;

typedef struct loadctx {
    mgraph *g;
    struct jscan s;          /* the one JSON scanner (jscan.h) */
    char *err;               /* the message: "LINE:COL: problem" */
    size_t errlen;
    const char *released;    /* mmap'd input: pages before this are dropped */
    /* JGF id -> vertex */
    uint32_t *idh;
    size_t idcap;
    jedge *edges;
    size_t nedges, ecap;
} loadctx;

/* A problem of the graph's at at (the first problem only): -1. */
static int gfail(loadctx *c, const char *at, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static int gfail(loadctx *c, const char *at, const char *fmt, ...)
{
    if (c->err[0] || c->s.err) return -1;
    int line, col;
    jscan_line_col(&c->s, (size_t)(at - c->s.start), &line, &col);
    int n = snprintf(c->err, c->errlen, "%d:%d: ", line, col);
    if (n < 0 || (size_t)n >= c->errlen) return -1;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(c->err + n, c->errlen - (size_t)n, fmt, ap);
    va_end(ap);
    return -1;
}

/* The scanner's failure worded as the graph's are. */
static void scan_error(loadctx *c)
{
    if (c->err[0] || !c->s.err) return;
    int line, col;
    jscan_line_col(&c->s, c->s.errat, &line, &col);
    snprintf(c->err, c->errlen, "%d:%d: %s", line, col, c->s.err);
}

/* A string from the file as a message shows it: escaped (escape.h), so a
 * newline in a JGF id cannot forge a line of its own. */
static const char *shown(char *buf, size_t cap, const char *s)
{
    fluence_escape_into(buf, cap, s, strlen(s), 0);
    return buf;
}

/* With an mmap'd input, hand the pages already parsed back to the kernel so
 * the peak memory is the graph, not the text. */
static void release_parsed(loadctx *c)
{
    if (!c->released) return;
    const size_t chunk = (size_t)8 << 20;
    const char *p = c->s.p;
    if ((size_t)(p - c->released) < 2 * chunk) return;
    fluence_release(c->released, p - chunk);
    c->released = p - chunk;
}

static int idmap_put(loadctx *c, uint32_t off, uint32_t v)
{
    mgraph *g = c->g;
    if ((size_t)g->nv * 2 > c->idcap) {
        size_t nc = c->idcap ? c->idcap * 2 : 1024;
        uint32_t *t = malloc(nc * sizeof *t);
        if (!t) return -1;
        for (size_t i = 0; i < nc; i++) t[i] = (uint32_t)-1;
        for (size_t i = 0; i < c->idcap; i++) {
            uint32_t x = c->idh[i];
            if (x == (uint32_t)-1) continue;
            const char *k = g->str + g->v[x].jgf_id;
            size_t j = hash_bytes(k, strlen(k)) & (nc - 1);
            while (t[j] != (uint32_t)-1) j = (j + 1) & (nc - 1);
            t[j] = x;
        }
        free(c->idh);
        c->idh = t;
        c->idcap = nc;
    }
    const char *k = g->str + off;
    size_t j = hash_bytes(k, strlen(k)) & (c->idcap - 1);
    while (c->idh[j] != (uint32_t)-1) {
        if (strcmp(g->str + g->v[c->idh[j]].jgf_id, k) == 0) return 1; /* duplicate */
        j = (j + 1) & (c->idcap - 1);
    }
    c->idh[j] = v;
    return 0;
}

static int64_t idmap_get(loadctx *c, const char *k)
{
    if (!c->idcap) return -1;
    size_t j = hash_bytes(k, strlen(k)) & (c->idcap - 1);
    while (c->idh[j] != (uint32_t)-1) {
        if (strcmp(c->g->str + c->g->v[c->idh[j]].jgf_id, k) == 0) return c->idh[j];
        j = (j + 1) & (c->idcap - 1);
    }
    return -1;
}

/* Fluxion reads id, uniq_id, rank, size and status with jansson's "I",
 * which takes JSON integers only: 2.0 and 3e32 are rejected there, so they
 * are here (3e32 was once cast to int64_t, undefined behaviour found by make
 * fuzz), and so is an integer beyond int64_t, which jansson will not parse. */
static int read_int(loadctx *c, int64_t *out, const char *what)
{
    struct jscan *s = &c->s;
    int ch = jscan_peek(s);
    const char *at = s->p;
    if (ch == '-' || (ch >= '0' && ch <= '9')) {
        struct jstr t;
        if (jscan_number(s, &t) < 0) return -1;
        char tmp[32];
        if (t.n < sizeof tmp && !memchr(t.p, '.', t.n) && !memchr(t.p, 'e', t.n) && !memchr(t.p, 'E', t.n)) {
            memcpy(tmp, t.p, t.n);
            tmp[t.n] = 0;
            errno = 0;
            long long v = strtoll(tmp, NULL, 10);
            if (errno != ERANGE) {
                *out = v;
                return 0;
            }
        }
    }
    return gfail(c, at, "%s must be an integer", what);
}

/* A string value (NUL-terminated for the loader's C strings, in the
 * scanner's scratch or a copy): into *out, to free. */
static int read_cstr(loadctx *c, char **out)
{
    struct jstr t;
    if (jscan_string(&c->s, &t) < 0) return -1;
    if (!(*out = strndup(t.p, t.n))) return gfail(c, c->s.p, "out of memory");
    return 0;
}

/* metadata.paths: the containment path, kept */
static int read_paths(loadctx *c, uint32_t vi)
{
    struct jscan *s = &c->s;
    if (jscan_peek(s) == 'n') return jscan_literal(s, "null");
    int st = 0, r;
    struct jstr k, v;
    while ((r = jscan_next_member(s, &st, &k)) == 1) {
        int is_c = jstr_is(k, "containment");
        if (jscan_string(s, &v) < 0) return -1;
        if (is_c) {
            uint32_t po = pool_add(c->g, v.p, v.n);
            if (po == (uint32_t)-1) return gfail(c, s->p, "out of memory");
            c->g->v[vi].path = po;
        }
    }
    return r;
}

/* metadata.properties: string values only (Fluxion aborts on others) */
static int read_properties(loadctx *c, uint32_t vi)
{
    struct jscan *s = &c->s;
    mgraph *g = c->g;
    if (jscan_peek(s) == 'n') return jscan_literal(s, "null");
    int st = 0, r;
    struct jstr k, v;
    while ((r = jscan_next_member(s, &st, &k)) == 1) {
        /* the key first: reading the value may reuse the scanner's scratch */
        uint32_t ko = mg_intern(g, k.p, k.n);
        if (ko == (uint32_t)-1) return gfail(c, s->p, "out of memory");
        if (jscan_peek(s) != '"') {
            char key[128];
            return gfail(c, s->p, "metadata.properties.%s must be a string", shown(key, sizeof key, g->str + ko));
        }
        if (jscan_string(s, &v) < 0) return -1;
        if (add_prop(g, &g->v[vi], g->str + ko, strlen(g->str + ko), v.p, v.n) < 0)
            return gfail(c, s->p, "bad property");
    }
    return r;
}

/* A node's fields as the scan found them */
struct jnode {
    int64_t id, uniq, rank, size;
    uint32_t basename, name;
    bool have_id, have_meta, have_type, have_basename, have_name;
};

static int read_metadata(loadctx *c, uint32_t vi, struct jnode *n)
{
    struct jscan *s = &c->s;
    mgraph *g = c->g;
    int st = 0, r;
    struct jstr k, v;
    n->have_meta = true;
    while ((r = jscan_next_member(s, &st, &k)) == 1) {
        if (jstr_is(k, "type")) {
            if (jscan_string(s, &v) < 0) return -1;
            g->v[vi].type = type_id(g, v.p, v.n, true);
            n->have_type = true;
        } else if (jstr_is(k, "basename") || jstr_is(k, "name") || jstr_is(k, "unit")) {
            char which = k.p[0] == 'b' ? 'b' : k.p[0] == 'n' ? 'n' : 'u';
            if (jscan_string(s, &v) < 0) return -1;
            uint32_t o = mg_intern(g, v.p, v.n);
            if (which == 'b') n->basename = o, n->have_basename = true;
            else if (which == 'n') n->name = o, n->have_name = true;
            else g->v[vi].unit = o;
        } else if (jstr_is(k, "id")) {
            if (read_int(c, &n->id, "metadata.id") < 0) return -1;
        } else if (jstr_is(k, "uniq_id")) {
            if (read_int(c, &n->uniq, "metadata.uniq_id") < 0) return -1;
        } else if (jstr_is(k, "rank")) {
            if (read_int(c, &n->rank, "metadata.rank") < 0) return -1;
        } else if (jstr_is(k, "size")) {
            if (read_int(c, &n->size, "metadata.size") < 0) return -1;
        } else if (jstr_is(k, "status")) {
            int64_t status;
            if (read_int(c, &status, "metadata.status") < 0) return -1;
            g->v[vi].status = status ? 1 : 0;
        } else if (jstr_is(k, "exclusive")) {
            int ch = jscan_peek(s);
            if (ch == 't') {
                if (jscan_literal(s, "true") < 0) return -1;
                g->v[vi].exclusive = 1;
            } else if (ch == 'f') {
                if (jscan_literal(s, "false") < 0) return -1;
            } else {
                return gfail(c, s->p, "metadata.exclusive must be a boolean");
            }
        } else if (jstr_is(k, "paths")) {
            if (read_paths(c, vi) < 0) return -1;
        } else if (jstr_is(k, "properties")) {
            if (read_properties(c, vi) < 0) return -1;
        } else if (jscan_skip(s) < 0) {
            return -1;
        }
    }
    return r;
}

static int parse_node(loadctx *c)
{
    struct jscan *s = &c->s;
    mgraph *g = c->g;
    mg_vertex *x = new_vertex(g);
    if (!x) return gfail(c, s->p, "out of memory");
    uint32_t vi = g->nv - 1;
    jscan_ws(s);
    const char *node_start = s->p;
    struct jnode n = { .id = -2, .uniq = -1, .rank = -1, .size = 1 };
    int st = 0, r;
    struct jstr k, v;
    while ((r = jscan_next_member(s, &st, &k)) == 1) {
        if (jstr_is(k, "id")) {
            if (jscan_string(s, &v) < 0) return -1;
            g->v[vi].jgf_id = pool_add(g, v.p, v.n);
            n.have_id = true;
        } else if (jstr_is(k, "metadata")) {
            if (read_metadata(c, vi, &n) < 0) return -1;
        } else if (jscan_skip(s) < 0) {
            return -1;
        }
    }
    if (r < 0) return -1;
    x = &g->v[vi];
    /* node-level problems point at the node */
    char id[128];
    shown(id, sizeof id, g->str + x->jgf_id);
    if (!n.have_id) return gfail(c, node_start, "JGF vertex id key is not found in a node");
    if (!n.have_meta || !n.have_type) return gfail(c, node_start, "node %s: metadata.type is required", id);
    /* Fluxion refuses a node without a path ("malformed metadata"), so do we */
    if (!*(g->str + x->path)) return gfail(c, node_start, "node %s: metadata.paths.containment is required", id);
    if (n.size < -1) return gfail(c, node_start, "node %s: metadata.size must not be negative", id);
    if (n.uniq == -1) {
        char *e;
        const char *sid = g->str + x->jgf_id;
        long long u = strtoll(sid, &e, 10);
        if (*sid == 0 || *e) return gfail(c, node_start, "node %s: uniq_id could not be inferred from the id", id);
        n.uniq = u;
    }
    if (!n.have_basename) n.basename = g->types[x->type];
    if (n.id == -2) {
        n.id = n.uniq;
        if (x->type == g->node_type && n.have_name) {
            const char *nm = g->str + n.name;
            size_t len = strlen(nm), i = len;
            while (i > 0 && nm[i - 1] >= '0' && nm[i - 1] <= '9') i--;
            if (i < len) n.id = strtoll(nm + i, NULL, 10);
        }
    }
    if (!n.have_name) {
        char tmp[512];
        snprintf(tmp, sizeof tmp, "%s%lld", g->str + n.basename, (long long)n.id);
        n.name = mg_intern(g, tmp, strlen(tmp));
    }
    x = &g->v[vi];
    x->basename = n.basename;
    x->name = n.name;
    x->id = n.id;
    x->uniq_id = n.uniq;
    x->rank = n.rank;
    x->size = n.size;
    int d = idmap_put(c, x->jgf_id, vi);
    if (d > 0) return gfail(c, node_start, "found duplicate JGF node id %s", id);
    if (d < 0) return gfail(c, node_start, "out of memory");
    return 0;
}

/* An edge's metadata: its subsystem, and whether Fluence marked it as the
 * reverse of another ({"name": {"containment": "in"}}) */
static int read_edge_metadata(loadctx *c, int *containment, int *back)
{
    struct jscan *s = &c->s;
    if (jscan_peek(s) == 'n') return jscan_literal(s, "null");
    int st = 0, r;
    struct jstr k, v;
    while ((r = jscan_next_member(s, &st, &k)) == 1) {
        if (jstr_is(k, "subsystem")) {
            if (jscan_string(s, &v) < 0) return -1;
            *containment = jstr_is(v, "containment");
        } else if (jstr_is(k, "name") && jscan_peek(s) == '{') {
            int st2 = 0, r2;
            while ((r2 = jscan_next_member(s, &st2, &k)) == 1) {
                if (jstr_is(k, "containment") && jscan_peek(s) == '"') {
                    if (jscan_string(s, &v) < 0) return -1;
                    *back = jstr_is(v, "in");
                } else if (jscan_skip(s) < 0) {
                    return -1;
                }
            }
            if (r2 < 0) return -1;
        } else if (jscan_skip(s) < 0) {
            return -1;
        }
    }
    return r;
}

static int parse_edge(loadctx *c)
{
    struct jscan *s = &c->s;
    char *src = NULL, *tgt = NULL;
    int containment = 1, back = 0, r, st = 0, rc = -1;
    jscan_ws(s);
    const char *edge_start = s->p;
    struct jstr k;
    while ((r = jscan_next_member(s, &st, &k)) == 1) {
        if (jstr_is(k, "source") || jstr_is(k, "target")) {
            char **to = k.p[0] == 's' ? &src : &tgt;
            free(*to);
            *to = NULL;
            if (read_cstr(c, to) < 0) goto out;
        } else if (jstr_is(k, "metadata")) {
            if (read_edge_metadata(c, &containment, &back) < 0) goto out;
        } else if (jscan_skip(s) < 0) {
            goto out;
        }
    }
    if (r < 0) goto out;
    if (!src || !tgt) {
        gfail(c, edge_start, "encountered a malformed edge");
        goto out;
    }
    int64_t a = idmap_get(c, src), b = idmap_get(c, tgt);
    if (a < 0 || b < 0) {
        char s1[128], s2[128];
        gfail(c, edge_start, "source and/or target vertex not found: %s -> %s", shown(s1, sizeof s1, src),
              shown(s2, sizeof s2, tgt));
        goto out;
    }
    if (c->nedges == c->ecap) {
        size_t nc = c->ecap ? c->ecap * 2 : 1024;
        jedge *e = realloc(c->edges, nc * sizeof *e);
        if (!e) {
            gfail(c, s->p, "out of memory");
            goto out;
        }
        c->edges = e;
        c->ecap = nc;
    }
    c->edges[c->nedges].src = (uint32_t)a;
    c->edges[c->nedges].tgt = (uint32_t)b;
    c->edges[c->nedges].back = back;
    c->edges[c->nedges].other = !containment || a == b;
    c->nedges++;
    rc = 0;
out:
    free(src);
    free(tgt);
    return rc;
}

/* Is a's containment path a proper prefix of b's (a an ancestor of b)? */
static bool path_ancestor(const mgraph *g, uint32_t a, uint32_t b)
{
    const char *pa = g->str + g->v[a].path, *pb = g->str + g->v[b].path;
    size_t n = strlen(pa);
    return n && strncmp(pa, pb, n) == 0 && pb[n] == '/';
}

/* Is b's path a's path plus one component? */
static bool path_child(const mgraph *g, uint32_t a, uint32_t b)
{
    const char *pa = g->str + g->v[a].path, *pb = g->str + g->v[b].path;
    return path_ancestor(g, a, b) && !strchr(pb + strlen(pa) + 1, '/');
}

/* Vertex v's name as a message shows it: a name from the file, its control
 * characters escaped (escape.h), so one message stays one line. */
static const char *vname(char *buf, size_t cap, const mgraph *g, uint32_t v)
{
    const char *s = g->str + g->v[v].name;
    fluence_escape_into(buf, cap, s, strlen(s), 0);
    return buf;
}

/* Fluxion keeps a vertex's out-edges in a map keyed by the target's uniq_id:
 * a second containment edge from one vertex to the same uniq_id (the same
 * edge twice, or two children sharing a uniq_id) fails to load there. */
static int check_outedges(const mgraph *g, const jedge *edges, size_t nedges, char *err, size_t errlen)
{
    size_t cap = 16;
    while (cap < nedges * 2) cap *= 2;
    uint32_t *slot = malloc(cap * sizeof *slot);
    if (!slot) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    memset(slot, 0xff, cap * sizeof *slot);
    int rc = 0;
    for (size_t i = 0; i < nedges && rc == 0; i++) {
        uint32_t a = edges[i].src;
        int64_t u = g->v[edges[i].tgt].uniq_id;
        uint64_t h = ((uint64_t)a * 0x9E3779B97F4A7C15ULL) ^ ((uint64_t)u * 0xC2B2AE3D27D4EB4FULL);
        size_t j = (size_t)(h ^ (h >> 29)) & (cap - 1);
        while (slot[j] != (uint32_t)-1) {
            const jedge *o = &edges[slot[j]];
            if (o->src == a && g->v[o->tgt].uniq_id == u) {
                char n1[128], n2[128];
                snprintf(err, errlen, " error inserting an edge to outedge metadata map: %s -> %s",
                         vname(n1, sizeof n1, g, a), vname(n2, sizeof n2, g, edges[i].tgt));
                rc = -1;
                break;
            }
            j = (j + 1) & (cap - 1);
        }
        slot[j] = (uint32_t)i;
    }
    free(slot);
    return rc;
}

static int link_edges(mgraph *g, jedge *edges, size_t nedges, char *err, size_t errlen)
{
    if (check_outedges(g, edges, nedges, err, errlen) < 0) return -1;
    uint32_t *cnt = calloc((size_t)g->nv + 1, sizeof *cnt);
    if (!cnt) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    /* Every containment edge counts, in JGF order, except the reverse ones
     * (to an ancestor, or marked "in"): a graph may be a DAG, a storage
     * unit contained by its rack and by a global unit alike.  A vertex's
     * parent is the one its path names, else its first.  The others are
     * kept aside (backs): Fluxion has them as out-edges too, which makes a
     * vertex no leaf and counts in its slot matching. */
    size_t kept = 0, nback = 0;
    uint32_t *bcnt = calloc((size_t)g->nv + 1, sizeof *bcnt);
    if (!bcnt) {
        free(cnt);
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    /* Fluxion walks up from a vertex by its first containment in-edge in
     * JGF order (find_parent_edge): the edge from its parent, usually; for
     * a vertex whose children's reverse edges come first (the root, in a
     * JGF that lists every edge both ways), a child's reverse edge.
     * fin_edge is that edge's index in children once laid out. */
    size_t *first = malloc(((size_t)g->nv + 1) * sizeof *first);
    if (!first) {
        free(cnt);
        free(bcnt);
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    for (uint32_t v = 0; v < g->nv; v++) {
        g->v[v].fin_src = g->v[v].fin_edge = UINT32_MAX;
        first[v] = SIZE_MAX;
    }
    for (size_t i = 0; i < nedges; i++) {
        mg_vertex *t = &g->v[edges[i].tgt];
        if (edges[i].other || t->fin_src != UINT32_MAX) continue;
        t->fin_src = edges[i].src;
        first[edges[i].tgt] = i;
    }
    for (size_t i = 0; i < nedges; i++) {
        uint32_t a = edges[i].src, b = edges[i].tgt;
        if (edges[i].back || edges[i].other || path_ancestor(g, b, a)) {
            bcnt[a]++;
            nback++;
            edges[i].back = true;
            continue;
        }
        cnt[a]++;
        kept++;
    }
    free(g->backs);
    g->backs = malloc((nback ? nback : 1) * sizeof *g->backs);
    if (!g->backs) {
        free(cnt);
        free(bcnt);
        free(first);
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    uint32_t boff = 0;
    for (uint32_t v = 0; v < g->nv; v++) {
        g->v[v].back0 = boff;
        g->v[v].nback = 0;
        boff += bcnt[v];
    }
    free(bcnt);
    for (size_t i = 0; i < nedges; i++) {
        if (!edges[i].back) continue;
        mg_vertex *x = &g->v[edges[i].src];
        g->backs[x->back0 + x->nback++] = edges[i].tgt;
        edges[i].src = (uint32_t)-1;
    }
    for (int pass = 0; pass < 2; pass++)
        for (size_t i = 0; i < nedges; i++) {
            uint32_t a = edges[i].src, b = edges[i].tgt;
            if (a == (uint32_t)-1 || g->v[b].parent != -1) continue;
            if (pass == 1 || path_child(g, a, b)) g->v[b].parent = (int32_t)a;
        }
    free(g->children);
    g->children = malloc((kept ? kept : 1) * sizeof *g->children);
    if (!g->children) {
        free(cnt);
        free(first);
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    uint32_t off = 0;
    for (uint32_t v = 0; v < g->nv; v++) {
        g->v[v].child0 = off;
        g->v[v].nchild = 0;
        off += cnt[v];
    }
    for (size_t i = 0; i < nedges; i++) {
        if (edges[i].src == (uint32_t)-1) continue; /* a reverse edge: fin_edge stays UINT32_MAX */
        mg_vertex *x = &g->v[edges[i].src];
        if (first[edges[i].tgt] == i) g->v[edges[i].tgt].fin_edge = x->child0 + x->nchild;
        g->children[x->child0 + x->nchild++] = edges[i].tgt;
    }
    free(cnt);
    free(first);
    /* the root: a containment path with exactly one '/', else the first
     * vertex without a parent */
    g->root = -1;
    for (uint32_t v = 0; v < g->nv; v++) {
        const char *p = g->str + g->v[v].path;
        if (*p == '/' && !strchr(p + 1, '/')) {
            if (g->root >= 0) {
                snprintf(err, errlen, " duplicate root in the containment subsystem");
                return -1;
            }
            g->root = (int32_t)v;
        }
    }
    if (g->root < 0)
        for (uint32_t v = 0; v < g->nv; v++)
            if (g->v[v].parent == -1) {
                g->root = (int32_t)v;
                break;
            }
    if (g->root < 0 || g->v[g->root].parent != -1) {
        snprintf(err, errlen, " no root in the containment subsystem");
        return -1;
    }
    /* The traversals recurse: refuse cycles and absurd depths up front
     * (an iterative depth-first walk with colors).  Every vertex is walked
     * from, not only the root: a cycle among vertices the root does not
     * reach is refused too (Fluxion loads such a graph and never visits
     * them; a graph with a cycle is not a containment tree, whoever made it). */
    uint32_t *stack = malloc(((size_t)g->nv + 1) * sizeof *stack), *next = calloc((size_t)g->nv + 1, sizeof *next);
    uint8_t *color = calloc((size_t)g->nv + 1, 1);
    if (!stack || !next || !color) {
        free(stack), free(next), free(color);
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    int rc = 0;
    /* the root first (its errors are about the tree), then what it missed */
    for (int64_t k = -1; rc == 0 && k < (int64_t)g->nv; k++) {
        uint32_t start = k < 0 ? (uint32_t)g->root : (uint32_t)k;
        if (k >= 0 && color[start]) continue;
        size_t sp = 0;
        stack[sp++] = start;
        color[start] = 1;
        while (sp && rc == 0) {
            uint32_t v = stack[sp - 1];
            const mg_vertex *x = &g->v[v];
            if (next[v] == x->nchild) {
                color[v] = 2;
                sp--;
                continue;
            }
            uint32_t c = g->children[x->child0 + next[v]++];
            if (color[c] == 1) {
                char n1[128], n2[128];
                vname(n1, sizeof n1, g, v);
                vname(n2, sizeof n2, g, c);
                snprintf(err, errlen, " containment cycle: %s -> %s, but %s contains %s", n1, n2, n2, n1);
                rc = -1;
            } else if (color[c] == 0) {
                if (sp >= 4096) {
                    snprintf(err, errlen, " containment tree deeper than 4096 levels");
                    rc = -1;
                } else {
                    color[c] = 1;
                    stack[sp++] = c;
                }
            }
        }
    }
    free(stack);
    free(next);
    free(color);
    return rc;
}

/* graph.nodes and graph.edges, in that order */
static int read_graph(loadctx *c, bool *have_nodes, bool *have_edges)
{
    struct jscan *s = &c->s;
    int st = 0, r;
    struct jstr k;
    while ((r = jscan_next_member(s, &st, &k)) == 1) {
        bool nodes = jstr_is(k, "nodes"), edges = jstr_is(k, "edges");
        if (!nodes && !edges) {
            if (jscan_skip(s) < 0) return -1;
            continue;
        }
        if (edges && !*have_nodes) return gfail(c, s->p, "JGF edges must follow nodes");
        *(nodes ? have_nodes : have_edges) = true;
        int st2 = 0, r2;
        while (release_parsed(c), (r2 = jscan_next_element(s, &st2)) == 1)
            if ((nodes ? parse_node(c) : parse_edge(c)) < 0) return -1;
        if (r2 < 0) return -1;
    }
    return r;
}

static mgraph *load_jgf(const char *text, size_t len, bool mapped, char *err, size_t errlen)
{
    loadctx c;
    memset(&c, 0, sizeof c);
    err[0] = 0;
    c.err = err;
    c.errlen = errlen;
    if (mapped) c.released = text;
    /* JGF's own levels are few; what it carries besides (skipped) is bounded */
    jscan_init(&c.s, text, len, 200);
    c.g = mg_new();
    if (!c.g) {
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    mg_type_id(c.g, "node", true);
    mg_type_id(c.g, "core", true);
    bool have_graph = false, have_nodes = false, have_edges = false;
    int st = 0, r;
    struct jstr k;
    while ((r = jscan_next_member(&c.s, &st, &k)) == 1) {
        if (!jstr_is(k, "graph")) {
            if (jscan_skip(&c.s) < 0) goto fail;
            continue;
        }
        have_graph = true;
        if (read_graph(&c, &have_nodes, &have_edges) < 0) goto fail;
    }
    if (r < 0) goto fail;
    if (jscan_peek(&c.s) != -1) {
        gfail(&c, c.s.p, "trailing characters after the JSON document");
        goto fail;
    }
    if (!have_graph || !have_nodes || !have_edges) {
        snprintf(err, errlen, " JGF does not contain a required key (%s)",
                 !have_graph ? "graph" : !have_nodes ? "nodes" : "edges");
        goto fail;
    }
    if (c.g->nv == 0) {
        snprintf(err, errlen, " JGF has no nodes");
        goto fail;
    }
    if (link_edges(c.g, c.edges, c.nedges, err, errlen) < 0) goto fail;
    jscan_free(&c.s);
    free(c.idh);
    free(c.edges);
    return c.g;
fail:
    scan_error(&c);
    jscan_free(&c.s);
    free(c.idh);
    free(c.edges);
    mg_free(c.g);
    return NULL;
}

mgraph *mg_load_jgf(const char *text, size_t len, bool mapped, char *err, size_t errlen)
{
    return load_jgf(text, len, mapped, err, errlen);
}

/* -------------------------------------------------------------- building */

int32_t mg_add_vertex(mgraph *g, int32_t parent, const char *type, const char *basename,
                      const char *name, int64_t id, int64_t size, int64_t rank,
                      const char **props, int nprops)
{
    int32_t t = mg_type_id(g, type, true);
    if (t < 0) return -1;
    mg_vertex *x = new_vertex(g);
    if (!x) return -1;
    int32_t vi = (int32_t)(g->nv - 1);
    x->type = t;
    x->parent = parent;
    x->basename = mg_intern(g, basename ? basename : type, strlen(basename ? basename : type));
    char tmp[512];
    if (!name) {
        snprintf(tmp, sizeof tmp, "%s%lld", basename ? basename : type, (long long)id);
        name = tmp;
    }
    uint32_t no = mg_intern(g, name, strlen(name));
    snprintf(tmp, sizeof tmp, "%d", vi);
    uint32_t jo = mg_intern(g, tmp, strlen(tmp));
    x = &g->v[vi];
    x->name = no;
    x->jgf_id = jo;
    x->id = id;
    x->uniq_id = vi;
    x->size = size;
    x->rank = rank;
    for (int i = 0; i < nprops; i++)
        if (add_prop(g, &g->v[vi], props[2 * i], strlen(props[2 * i]), props[2 * i + 1],
                     strlen(props[2 * i + 1])) < 0)
            return -1;
    return vi;
}

int mg_finish(mgraph *g, char *err, size_t errlen)
{
    /* paths, top-down (parents are always added before children) */
    for (uint32_t v = 0; v < g->nv; v++) {
        mg_vertex *x = &g->v[v];
        const char *pp = x->parent >= 0 ? g->str + g->v[x->parent].path : "";
        size_t n = strlen(pp) + strlen(g->str + x->name) + 2;
        char *tmp = malloc(n);
        if (!tmp) {
            snprintf(err, errlen, "out of memory");
            return -1;
        }
        snprintf(tmp, n, "%s/%s", pp, g->str + g->v[v].name);
        uint32_t po = pool_add(g, tmp, strlen(tmp));
        free(tmp);
        if (po == (uint32_t)-1) {
            snprintf(err, errlen, "out of memory");
            return -1;
        }
        g->v[v].path = po;
    }
    jedge *edges = malloc(((size_t)g->nv + 1) * sizeof *edges);
    if (!edges) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    size_t ne = 0;
    for (uint32_t v = 0; v < g->nv; v++) {
        if (g->v[v].parent >= 0) {
            edges[ne].src = (uint32_t)g->v[v].parent;
            edges[ne].tgt = v;
            edges[ne].back = false;
            edges[ne].other = false;
            ne++;
        }
        g->v[v].parent = -1;
    }
    int rc = link_edges(g, edges, ne, err, errlen);
    free(edges);
    return rc;
}
