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
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#include "escape.h"
#include "match_graph.h"

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

int32_t mg_type_id(mgraph *g, const char *s, bool add)
{
    for (int i = 0; i < g->ntypes; i++)
        if (strcmp(g->str + g->types[i], s) == 0) return i;
    if (!add) return -1;
    if (g->ntypes == g->typecap) {
        int nc = g->typecap ? g->typecap * 2 : 16;
        uint32_t *t = realloc(g->types, (size_t)nc * sizeof *t);
        if (!t) return -1;
        g->types = t;
        g->typecap = nc;
    }
    uint32_t off = mg_intern(g, s, strlen(s));
    if (off == (uint32_t)-1) return -1;
    g->types[g->ntypes] = off;
    int32_t id = g->ntypes++;
    if (strcmp(s, "node") == 0) g->node_type = id;
    if (strcmp(s, "core") == 0) g->core_type = id;
    if (strcmp(s, "gpu") == 0) g->gpu_type = id;
    return id;
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

/* -------------------------------------------------------------- JSON scan */

typedef struct scan {
    const char *p, *end, *start;
    char *buf;               /* decoded string scratch */
    size_t blen, bcap;
    char *err;
    size_t errlen;
    int failed;
    const char *released;    /* mmap'd input: pages before this are dropped */
} scan;

static void sfail(scan *s, const char *msg)
{
    if (s->failed) return;
    s->failed = 1;
    int line = 1, col = 1;
    for (const char *q = s->start; q < s->p && q < s->end; q++) {
        if (*q == '\n') line++, col = 1;
        else col++;
    }
    snprintf(s->err, s->errlen, "%d:%d: %s", line, col, msg);
}

static void ws(scan *s)
{
    while (s->p < s->end && (*s->p == ' ' || *s->p == '\n' || *s->p == '\t' || *s->p == '\r')) s->p++;
}

static int expect(scan *s, char c)
{
    ws(s);
    if (s->p < s->end && *s->p == c) {
        s->p++;
        return 0;
    }
    char m[64];
    snprintf(m, sizeof m, "expected '%c'", c);
    sfail(s, m);
    return -1;
}

static int bput(scan *s, char c)
{
    if (s->blen + 2 > s->bcap) {
        size_t nc = s->bcap ? s->bcap * 2 : 256;
        char *p = realloc(s->buf, nc);
        if (!p) {
            sfail(s, "out of memory");
            return -1;
        }
        s->buf = p;
        s->bcap = nc;
    }
    s->buf[s->blen++] = c;
    return 0;
}

static int hexval(char c)
{
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

/* Reads a string into s->buf (NUL-terminated, length s->blen). */
static int jstring(scan *s)
{
    ws(s);
    if (s->p >= s->end || *s->p != '"') {
        sfail(s, "expected a string");
        return -1;
    }
    s->p++;
    s->blen = 0;
    for (;;) {
        const char *q = s->p;
        while (q < s->end && *q != '"' && *q != '\\' && (unsigned char)*q >= 0x20) q++;
        size_t n = (size_t)(q - s->p);
        if (s->blen + n + 8 > s->bcap) {
            size_t nc = s->bcap ? s->bcap : 256;
            while (s->blen + n + 8 > nc) nc *= 2;
            char *p = realloc(s->buf, nc);
            if (!p) {
                sfail(s, "out of memory");
                return -1;
            }
            s->buf = p;
            s->bcap = nc;
        }
        memcpy(s->buf + s->blen, s->p, n);
        s->blen += n;
        s->p = q;
        if (q >= s->end) {
            sfail(s, "unterminated string");
            return -1;
        }
        if (*q == '"') {
            s->p++;
            s->buf[s->blen] = 0;
            return 0;
        }
        if ((unsigned char)*q < 0x20) {
            sfail(s, "control character in string");
            return -1;
        }
        /* escape */
        if (q + 1 >= s->end) {
            sfail(s, "bad escape");
            return -1;
        }
        char e = q[1];
        s->p = q + 2;
        char c;
        switch (e) {
        case '"': c = '"'; break;
        case '\\': c = '\\'; break;
        case '/': c = '/'; break;
        case 'b': c = '\b'; break;
        case 'f': c = '\f'; break;
        case 'n': c = '\n'; break;
        case 'r': c = '\r'; break;
        case 't': c = '\t'; break;
        case 'u': {
            if (s->p + 4 > s->end) {
                sfail(s, "bad \\u escape");
                return -1;
            }
            unsigned cp = 0;
            for (int i = 0; i < 4; i++) {
                int h = hexval(s->p[i]);
                if (h < 0) {
                    sfail(s, "bad \\u escape");
                    return -1;
                }
                cp = cp * 16 + (unsigned)h;
            }
            s->p += 4;
            if (cp >= 0xd800 && cp < 0xdc00 && s->p + 6 <= s->end && s->p[0] == '\\' && s->p[1] == 'u') {
                unsigned lo = 0;
                int ok = 1;
                for (int i = 0; i < 4; i++) {
                    int h = hexval(s->p[2 + i]);
                    if (h < 0) ok = 0;
                    else lo = lo * 16 + (unsigned)h;
                }
                if (ok && lo >= 0xdc00 && lo < 0xe000) {
                    cp = 0x10000 + ((cp - 0xd800) << 10) + (lo - 0xdc00);
                    s->p += 6;
                }
            }
            if (cp < 0x80) bput(s, (char)cp);
            else if (cp < 0x800) {
                bput(s, (char)(0xc0 | (cp >> 6)));
                bput(s, (char)(0x80 | (cp & 0x3f)));
            } else if (cp < 0x10000) {
                bput(s, (char)(0xe0 | (cp >> 12)));
                bput(s, (char)(0x80 | ((cp >> 6) & 0x3f)));
                bput(s, (char)(0x80 | (cp & 0x3f)));
            } else {
                bput(s, (char)(0xf0 | (cp >> 18)));
                bput(s, (char)(0x80 | ((cp >> 12) & 0x3f)));
                bput(s, (char)(0x80 | ((cp >> 6) & 0x3f)));
                bput(s, (char)(0x80 | (cp & 0x3f)));
            }
            continue;
        }
        default:
            sfail(s, "bad escape");
            return -1;
        }
        if (bput(s, c) < 0) return -1;
    }
}

static int skip_value(scan *s, int depth);

static int skip_literal(scan *s, const char *lit)
{
    size_t n = strlen(lit);
    if ((size_t)(s->end - s->p) >= n && memcmp(s->p, lit, n) == 0) {
        s->p += n;
        return 0;
    }
    sfail(s, "invalid value");
    return -1;
}

/* Number: returns 0 after a valid JSON number.  *isint says it is an
 * integer (no fraction or exponent) within int64_t, whose value is *iv: the
 * only numbers the loader keeps (see read_int). */
static int jnumber(scan *s, int64_t *iv, int *isint)
{
    ws(s);
    const char *q = s->p;
    if (q < s->end && (*q == '-' || *q == '+')) q++;
    while (q < s->end && ((*q >= '0' && *q <= '9') || *q == '.' || *q == 'e' || *q == 'E' || *q == '-' || *q == '+')) q++;
    if (q == s->p) {
        sfail(s, "expected a number");
        return -1;
    }
    char tmp[64];
    size_t n = (size_t)(q - s->p);
    if (n >= sizeof tmp) n = sizeof tmp - 1;
    memcpy(tmp, s->p, n);
    tmp[n] = 0;
    s->p = q;
    char *e;
    if (strpbrk(tmp, ".eE")) {
        (void)strtod(tmp, &e);
        *isint = 0;
    } else {
        errno = 0;
        *iv = strtoll(tmp, &e, 10);
        *isint = errno != ERANGE;
    }
    if (*e) {
        sfail(s, "bad number");
        return -1;
    }
    return 0;
}

static int skip_value(scan *s, int depth)
{
    ws(s);
    if (s->p >= s->end) {
        sfail(s, "unexpected end of input");
        return -1;
    }
    if (depth > 200) {
        sfail(s, "nesting too deep");
        return -1;
    }
    char c = *s->p;
    if (c == '"') return jstring(s);
    if (c == '{') {
        s->p++;
        ws(s);
        if (s->p < s->end && *s->p == '}') {
            s->p++;
            return 0;
        }
        for (;;) {
            if (jstring(s) < 0 || expect(s, ':') < 0 || skip_value(s, depth + 1) < 0) return -1;
            ws(s);
            if (s->p < s->end && *s->p == ',') {
                s->p++;
                continue;
            }
            return expect(s, '}');
        }
    }
    if (c == '[') {
        s->p++;
        ws(s);
        if (s->p < s->end && *s->p == ']') {
            s->p++;
            return 0;
        }
        for (;;) {
            if (skip_value(s, depth + 1) < 0) return -1;
            ws(s);
            if (s->p < s->end && *s->p == ',') {
                s->p++;
                continue;
            }
            return expect(s, ']');
        }
    }
    if (c == 't') return skip_literal(s, "true");
    if (c == 'f') return skip_literal(s, "false");
    if (c == 'n') return skip_literal(s, "null");
    int64_t i;
    int isint;
    return jnumber(s, &i, &isint);
}

/* Iterates an object: call first with *first = 1; returns 1 with the key in
 * s->buf, 0 at the end, -1 on error. */
static int obj_next(scan *s, int *first)
{
    ws(s);
    if (*first) {
        *first = 0;
        if (expect(s, '{') < 0) return -1;
        ws(s);
        if (s->p < s->end && *s->p == '}') {
            s->p++;
            return 0;
        }
    } else {
        ws(s);
        if (s->p < s->end && *s->p == ',') s->p++;
        else return expect(s, '}') < 0 ? -1 : 0;
    }
    if (jstring(s) < 0 || expect(s, ':') < 0) return -1;
    return 1;
}

/* With an mmap'd input, hand the pages already parsed back to the kernel so
 * the peak memory is the graph, not the text. */
static void release_parsed(scan *s)
{
    if (!s->released) return;
    const size_t chunk = (size_t)8 << 20;
    if ((size_t)(s->p - s->released) < 2 * chunk) return;
    long pg = sysconf(_SC_PAGESIZE);
    uintptr_t a = ((uintptr_t)s->released + (uintptr_t)pg - 1) & ~((uintptr_t)pg - 1);
    uintptr_t b = ((uintptr_t)s->p - chunk) & ~((uintptr_t)pg - 1);
    if (b > a) madvise((void *)a, b - a, MADV_DONTNEED);
    s->released = (const char *)b;
}

static int arr_next(scan *s, int *first)
{
    release_parsed(s);
    ws(s);
    if (*first) {
        *first = 0;
        if (expect(s, '[') < 0) return -1;
        ws(s);
        if (s->p < s->end && *s->p == ']') {
            s->p++;
            return 0;
        }
        return 1;
    }
    if (s->p < s->end && *s->p == ',') {
        s->p++;
        return 1;
    }
    return expect(s, ']') < 0 ? -1 : 0;
}

static bool peek(scan *s, char c)
{
    ws(s);
    return s->p < s->end && *s->p == c;
}

/* ----------------------------------------------------------------- loader */

typedef struct jedge {
    uint32_t src, tgt;
    bool back;               /* metadata.name.containment "in": child -> parent */
    bool other;              /* not containment, or a loop: kept by Fluxion, never a child */
} jedge;

typedef struct loadctx {
    mgraph *g;
    scan s;
    /* JGF id -> vertex */
    uint32_t *idh;
    size_t idcap;
    jedge *edges;
    size_t nedges, ecap;
} loadctx;

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
static int read_int(scan *s, int64_t *out, const char *what)
{
    int isint = 0;
    ws(s);
    const char *at = s->p;
    int number = peek(s, '-') || (s->p < s->end && *s->p >= '0' && *s->p <= '9');
    if (number && jnumber(s, out, &isint) < 0) return -1;
    if (!isint) {
        char m[96];
        snprintf(m, sizeof m, "%s must be an integer", what);
        s->p = at;
        sfail(s, m);
        return -1;
    }
    return 0;
}

static int parse_node(loadctx *c)
{
    scan *s = &c->s;
    mgraph *g = c->g;
    mg_vertex *x = new_vertex(g);
    if (!x) {
        sfail(s, "out of memory");
        return -1;
    }
    uint32_t vi = g->nv - 1;
    ws(s);
    const char *node_start = s->p;
    int64_t id = -2, uniq = -1, rank = -1, size = 1;
    int have_id_str = 0, have_meta = 0;
    uint32_t type = 0, basename = 0, name = 0;
    int have_type = 0, have_basename = 0, have_name = 0;
    x->status = 0;
    int first = 1, r;
    while ((r = obj_next(s, &first)) == 1) {
        if (strcmp(s->buf, "id") == 0) {
            if (jstring(s) < 0) return -1;
            x = &g->v[vi];
            x->jgf_id = pool_add(g, s->buf, s->blen);
            have_id_str = 1;
        } else if (strcmp(s->buf, "metadata") == 0) {
            have_meta = 1;
            int f2 = 1, r2;
            while ((r2 = obj_next(s, &f2)) == 1) {
                x = &g->v[vi];
                const char *k = s->buf;
                if (strcmp(k, "type") == 0) {
                    if (jstring(s) < 0) return -1;
                    int32_t t = mg_type_id(g, s->buf, true);
                    g->v[vi].type = t;
                    type = 1;
                    have_type = 1;
                } else if (strcmp(k, "basename") == 0) {
                    if (jstring(s) < 0) return -1;
                    basename = mg_intern(g, s->buf, s->blen);
                    have_basename = 1;
                } else if (strcmp(k, "name") == 0) {
                    if (jstring(s) < 0) return -1;
                    name = mg_intern(g, s->buf, s->blen);
                    have_name = 1;
                } else if (strcmp(k, "unit") == 0) {
                    if (jstring(s) < 0) return -1;
                    uint32_t u = mg_intern(g, s->buf, s->blen);
                    g->v[vi].unit = u;
                } else if (strcmp(k, "id") == 0) {
                    if (read_int(s, &id, "metadata.id") < 0) return -1;
                } else if (strcmp(k, "uniq_id") == 0) {
                    if (read_int(s, &uniq, "metadata.uniq_id") < 0) return -1;
                } else if (strcmp(k, "rank") == 0) {
                    if (read_int(s, &rank, "metadata.rank") < 0) return -1;
                } else if (strcmp(k, "size") == 0) {
                    if (read_int(s, &size, "metadata.size") < 0) return -1;
                } else if (strcmp(k, "status") == 0) {
                    int64_t st;
                    if (read_int(s, &st, "metadata.status") < 0) return -1;
                    g->v[vi].status = st ? 1 : 0;
                } else if (strcmp(k, "exclusive") == 0) {
                    ws(s);
                    if (s->p < s->end && *s->p == 't') {
                        if (skip_literal(s, "true") < 0) return -1;
                        g->v[vi].exclusive = 1;
                    } else if (s->p < s->end && *s->p == 'f') {
                        if (skip_literal(s, "false") < 0) return -1;
                    } else {
                        sfail(s, "metadata.exclusive must be a boolean");
                        return -1;
                    }
                } else if (strcmp(k, "paths") == 0) {
                    if (peek(s, 'n')) {
                        if (skip_literal(s, "null") < 0) return -1;
                        continue;
                    }
                    int f3 = 1, r3;
                    while ((r3 = obj_next(s, &f3)) == 1) {
                        int is_c = strcmp(s->buf, "containment") == 0;
                        if (jstring(s) < 0) return -1;
                        if (is_c) {
                            uint32_t po = pool_add(g, s->buf, s->blen);
                            if (po == (uint32_t)-1) {
                                sfail(s, "out of memory");
                                return -1;
                            }
                            g->v[vi].path = po;
                        }
                    }
                    if (r3 < 0) return -1;
                } else if (strcmp(k, "properties") == 0) {
                    if (peek(s, 'n')) {
                        if (skip_literal(s, "null") < 0) return -1;
                        continue;
                    }
                    int f3 = 1, r3;
                    while ((r3 = obj_next(s, &f3)) == 1) {
                        size_t kn = s->blen;
                        char *key = malloc(kn + 1);
                        if (!key) {
                            sfail(s, "out of memory");
                            return -1;
                        }
                        memcpy(key, s->buf, kn + 1);
                        int rc = 0;
                        if (peek(s, '"')) {
                            if (jstring(s) < 0) rc = -1;
                            else rc = add_prop(g, &g->v[vi], key, kn, s->buf, s->blen);
                        } else {
                            /* Fluxion aborts on such a value (std::logic_error) */
                            char m[160];
                            snprintf(m, sizeof m, "metadata.properties.%.100s must be a string", key);
                            free(key);
                            sfail(s, m);
                            return -1;
                        }
                        free(key);
                        if (rc < 0) {
                            sfail(s, "bad property");
                            return -1;
                        }
                    }
                    if (r3 < 0) return -1;
                } else {
                    if (skip_value(s, 0) < 0) return -1;
                }
            }
            if (r2 < 0) return -1;
        } else {
            if (skip_value(s, 0) < 0) return -1;
        }
    }
    if (r < 0) return -1;
    x = &g->v[vi];
    const char *node_end = s->p;
    s->p = node_start; /* node-level problems point at the node */
    if (!have_id_str) {
        sfail(s, "JGF vertex id key is not found in a node");
        return -1;
    }
    if (!have_meta || !have_type) {
        char m[160];
        snprintf(m, sizeof m, "node %s: metadata.type is required", g->str + x->jgf_id);
        sfail(s, m);
        return -1;
    }
    if (!*(g->str + x->path)) {
        /* Fluxion refuses such a node ("malformed metadata"), so do we */
        char m[200];
        snprintf(m, sizeof m, "node %s: metadata.paths.containment is required", g->str + x->jgf_id);
        sfail(s, m);
        return -1;
    }
    if (size < -1) {
        char m[200];
        snprintf(m, sizeof m, "node %s: metadata.size must not be negative", g->str + x->jgf_id);
        sfail(s, m);
        return -1;
    }
    (void)type;
    if (uniq == -1) {
        char *e;
        const char *sid = g->str + x->jgf_id;
        long long u = strtoll(sid, &e, 10);
        if (*sid == 0 || *e) {
            char m[200];
            snprintf(m, sizeof m, "node %s: uniq_id could not be inferred from the id", sid);
            sfail(s, m);
            return -1;
        }
        uniq = u;
    }
    if (!have_basename) basename = g->types[x->type];
    if (id == -2) {
        id = uniq;
        if (x->type == g->node_type && have_name) {
            const char *nm = g->str + name;
            size_t n = strlen(nm), k = n;
            while (k > 0 && nm[k - 1] >= '0' && nm[k - 1] <= '9') k--;
            if (k < n) id = strtoll(nm + k, NULL, 10);
        }
    }
    if (!have_name) {
        char tmp[512];
        snprintf(tmp, sizeof tmp, "%s%lld", g->str + basename, (long long)id);
        name = mg_intern(g, tmp, strlen(tmp));
    }
    x = &g->v[vi];
    x->basename = basename;
    x->name = name;
    x->id = id;
    x->uniq_id = uniq;
    x->rank = rank;
    x->size = size;
    int d = idmap_put(c, x->jgf_id, vi);
    if (d != 0) {
        char m[200];
        snprintf(m, sizeof m, d > 0 ? "found duplicate JGF node id %s" : "out of memory", g->str + x->jgf_id);
        sfail(s, m);
        return -1;
    }
    s->p = node_end;
    return 0;
}

static int parse_edge(loadctx *c)
{
    scan *s = &c->s;
    char *src = NULL, *tgt = NULL;
    int containment = 1, back = 0, r, first = 1, rc = -1;
    ws(s);
    const char *edge_start = s->p;
    while ((r = obj_next(s, &first)) == 1) {
        if (strcmp(s->buf, "source") == 0 || strcmp(s->buf, "target") == 0) {
            int is_src = s->buf[0] == 's';
            if (jstring(s) < 0) goto out;
            char *d = strdup(s->buf);
            if (!d) goto out;
            if (is_src) free(src), src = d;
            else free(tgt), tgt = d;
        } else if (strcmp(s->buf, "metadata") == 0) {
            if (peek(s, 'n')) {
                if (skip_literal(s, "null") < 0) goto out;
                continue;
            }
            int f2 = 1, r2;
            while ((r2 = obj_next(s, &f2)) == 1) {
                if (strcmp(s->buf, "subsystem") == 0) {
                    if (jstring(s) < 0) goto out;
                    containment = strcmp(s->buf, "containment") == 0;
                } else if (strcmp(s->buf, "name") == 0 && peek(s, '{')) {
                    /* Fluence writes {"name": {"containment": "in"}} on the
                     * reverse of every edge */
                    int f3 = 1, r3;
                    while ((r3 = obj_next(s, &f3)) == 1) {
                        if (strcmp(s->buf, "containment") == 0 && peek(s, '"')) {
                            if (jstring(s) < 0) goto out;
                            back = strcmp(s->buf, "in") == 0;
                        } else if (skip_value(s, 0) < 0) goto out;
                    }
                    if (r3 < 0) goto out;
                } else if (skip_value(s, 0) < 0) goto out;
            }
            if (r2 < 0) goto out;
        } else if (skip_value(s, 0) < 0) goto out;
    }
    if (r < 0) goto out;
    const char *edge_end = s->p;
    s->p = edge_start;
    if (!src || !tgt) {
        sfail(s, "encountered a malformed edge");
        goto out;
    }
    int64_t a = idmap_get(c, src), b = idmap_get(c, tgt);
    if (a < 0 || b < 0) {
        char m[300];
        snprintf(m, sizeof m, "source and/or target vertex not found: %s -> %s", src, tgt);
        sfail(s, m);
        goto out;
    }
    s->p = edge_end;
    rc = 0;
    if (c->nedges == c->ecap) {
        size_t nc = c->ecap ? c->ecap * 2 : 1024;
        jedge *e = realloc(c->edges, nc * sizeof *e);
        if (!e) {
            sfail(s, "out of memory");
            rc = -1;
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

static mgraph *load_jgf(const char *text, size_t len, bool mapped, char *err, size_t errlen)
{
    loadctx c;
    memset(&c, 0, sizeof c);
    if (mapped) c.s.released = text;
    c.g = mg_new();
    if (!c.g) {
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    mg_type_id(c.g, "node", true);
    mg_type_id(c.g, "core", true);
    c.s.p = c.s.start = text;
    c.s.end = text + len;
    c.s.err = err;
    c.s.errlen = errlen;
    int have_graph = 0, have_nodes = 0, have_edges = 0;
    int first = 1, r;
    while ((r = obj_next(&c.s, &first)) == 1) {
        if (strcmp(c.s.buf, "graph") != 0) {
            if (skip_value(&c.s, 0) < 0) goto fail;
            continue;
        }
        have_graph = 1;
        int f2 = 1, r2;
        while ((r2 = obj_next(&c.s, &f2)) == 1) {
            if (strcmp(c.s.buf, "nodes") == 0) {
                have_nodes = 1;
                int f3 = 1, r3;
                while ((r3 = arr_next(&c.s, &f3)) == 1)
                    if (parse_node(&c) < 0) goto fail;
                if (r3 < 0) goto fail;
            } else if (strcmp(c.s.buf, "edges") == 0) {
                have_edges = 1;
                if (!have_nodes) {
                    sfail(&c.s, "JGF edges must follow nodes");
                    goto fail;
                }
                int f3 = 1, r3;
                while ((r3 = arr_next(&c.s, &f3)) == 1)
                    if (parse_edge(&c) < 0) goto fail;
                if (r3 < 0) goto fail;
            } else if (skip_value(&c.s, 0) < 0) goto fail;
        }
        if (r2 < 0) goto fail;
    }
    if (r < 0) goto fail;
    ws(&c.s);
    if (c.s.p != c.s.end) {
        sfail(&c.s, "trailing characters after the JSON document");
        goto fail;
    }
    if (!have_graph || !have_nodes || !have_edges) {
        snprintf(err, errlen, " JGF does not contain a required key (%s)",
                 !have_graph ? "graph" : !have_nodes ? "nodes" : "edges");
        goto fail2;
    }
    if (c.g->nv == 0) {
        snprintf(err, errlen, " JGF has no nodes");
        goto fail2;
    }
    if (link_edges(c.g, c.edges, c.nedges, err, errlen) < 0) goto fail2;
    free(c.s.buf);
    free(c.idh);
    free(c.edges);
    return c.g;
fail:
fail2:
    free(c.s.buf);
    free(c.idh);
    free(c.edges);
    mg_free(c.g);
    return NULL;
}

mgraph *mg_load_jgf(const char *text, size_t len, char *err, size_t errlen)
{
    return load_jgf(text, len, false, err, errlen);
}

mgraph *mg_load_jgf_file(const char *path, char *err, size_t errlen)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        snprintf(err, errlen, " %s", strerror(errno));
        return NULL;
    }
    struct stat st;
    if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) || st.st_size == 0) {
        close(fd);
        return NULL; /* caller falls back to reading */
    }
    void *p = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
    close(fd);
    if (p == MAP_FAILED) return NULL;
    madvise(p, (size_t)st.st_size, MADV_SEQUENTIAL);
    mgraph *g = load_jgf(p, (size_t)st.st_size, true, err, errlen);
    if (!g && !err[0]) snprintf(err, errlen, " failed to load");
    munmap(p, (size_t)st.st_size);
    if (!g && !err[0]) snprintf(err, errlen, " failed");
    return g;
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
