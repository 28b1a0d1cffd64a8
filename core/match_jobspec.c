/* Canonical jobspec v1 (RFC 14 as Fluxion reads it), YAML or JSON, parsed
 * with libyaml into a small tree and then validated into mjobspec.  Every
 * error names the offending path: "NAME: resources[0].with[1].count: ...". */
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "match_jobspec.h"
#include "match_ynode.h"

typedef struct vctx {
    const char *name;
    char *err;
    size_t errlen;
    int failed;
} vctx;

static void vfail(vctx *c, const char *path, const char *fmt, ...)
{
    if (c->failed) return;
    c->failed = 1;
    char msg[256];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    if (path && *path) snprintf(c->err, c->errlen, "%s: %s: %s", c->name, path, msg);
    else snprintf(c->err, c->errlen, "%s: %s", c->name, msg);
}

/* Unsigned integer scalar (plain).  -1 when not one. */
static int get_uint(const ynode *n, unsigned long long *out)
{
    if (!n || n->kind != YN_SCALAR || !n->plain) return -1;
    const char *s = n->val;
    if (*s == '+') s++;
    if (!*s) return -1;
    for (const char *q = s; *q; q++)
        if (*q < '0' || *q > '9') return -1;
    errno = 0;
    unsigned long long v = strtoull(s, NULL, 10);
    if (errno) return -1;
    *out = v;
    return 0;
}

static int get_int(const ynode *n, long long *out)
{
    if (!n || n->kind != YN_SCALAR || !n->plain) return -1;
    const char *s = n->val;
    char *e;
    if (!*s) return -1;
    errno = 0;
    long long v = strtoll(s, &e, 10);
    if (*e || errno) return -1;
    *out = v;
    return 0;
}

static int get_number(const ynode *n, double *out)
{
    if (!n || n->kind != YN_SCALAR || !n->plain || !*n->val) return -1;
    char *e;
    double v = strtod(n->val, &e);
    if (*e || isnan(v)) return -1;
    *out = v;
    return 0;
}

static int get_bool(const ynode *n, bool *out)
{
    if (!n || n->kind != YN_SCALAR || !n->plain) return -1;
    const char *s = n->val;
    if (!strcmp(s, "true") || !strcmp(s, "True") || !strcmp(s, "TRUE")) return *out = true, 0;
    if (!strcmp(s, "false") || !strcmp(s, "False") || !strcmp(s, "FALSE")) return *out = false, 0;
    return -1;
}

static bool is_string(const ynode *n)
{
    return n && n->kind == YN_SCALAR && !ynode_is_null(n);
}

static char *xstrdup(vctx *c, const char *s)
{
    char *d = strdup(s);
    if (!d) vfail(c, NULL, "out of memory");
    return d;
}

static void path_join(char *dst, size_t n, const char *base, const char *key)
{
    size_t bl = base ? strlen(base) : 0, kl = strlen(key), o = 0;
    if (bl && bl + 1 < n) {
        memcpy(dst, base, bl);
        dst[bl] = '.';
        o = bl + 1;
    }
    if (o + kl >= n) kl = n - o - 1;
    memcpy(dst + o, key, kl);
    dst[o + kl] = 0;
}

static void path_index(char *dst, size_t n, const char *base, int i)
{
    char num[24];
    int k = snprintf(num, sizeof num, "[%d]", i);
    size_t bl = strlen(base);
    if (bl + (size_t)k >= n) bl = n - (size_t)k - 1;
    memcpy(dst, base, bl);
    memcpy(dst + bl, num, (size_t)k + 1);
}

/* ---------------------------------------------------------------- count */

static int parse_count(vctx *c, const ynode *n, const char *path, mj_res *r)
{
    static const char *bad = "must be an unsigned integer or a {min,max,operator,operand} mapping";
    unsigned long long u;
    r->oper = '+';
    r->operand = 1;
    if (n->kind == YN_SCALAR) {
        if (get_uint(n, &u) < 0) return vfail(c, path, "%s", bad), -1;
        if (u < 1 || u > 0xffffffffULL) return vfail(c, path, "must be at least 1"), -1;
        r->min = r->max = (unsigned)u;
        return 0;
    }
    if (n->kind != YN_MAP) return vfail(c, path, "%s", bad), -1;
    char p[512];
    for (int i = 0; i + 1 < n->nkids; i += 2) {
        const char *k = n->kids[i]->val ? n->kids[i]->val : "";
        if (strcmp(k, "min") && strcmp(k, "max") && strcmp(k, "operator") && strcmp(k, "operand")) {
            path_join(p, sizeof p, path, k);
            return vfail(c, p, "unknown key (expected min, max, operator, operand)"), -1;
        }
    }
    const ynode *mn = ynode_get(n, "min"), *mx = ynode_get(n, "max"), *op = ynode_get(n, "operator"), *od = ynode_get(n, "operand");
    path_join(p, sizeof p, path, "min");
    if (!mn) return vfail(c, path, "min is required"), -1;
    if (get_uint(mn, &u) < 0 || u < 1 || u > 0xffffffffULL) return vfail(c, p, "must be an unsigned integer >= 1"), -1;
    r->min = (unsigned)u;
    r->max = 0xffffffffu;
    int have = (mx != NULL) + (op != NULL) + (od != NULL);
    if (have != 0 && have != 3) return vfail(c, path, "max, operator and operand must be given together"), -1;
    if (have == 3) {
        path_join(p, sizeof p, path, "max");
        if (get_uint(mx, &u) < 0 || u > 0xffffffffULL) return vfail(c, p, "must be an unsigned integer"), -1;
        if (u < r->min) return vfail(c, p, "must be >= min"), -1;
        r->max = (unsigned)u;
        path_join(p, sizeof p, path, "operator");
        if (!is_string(op) || strlen(op->val) != 1 || !strchr("+*^", op->val[0]))
            return vfail(c, p, "must be one of +, *, ^"), -1;
        r->oper = op->val[0];
        path_join(p, sizeof p, path, "operand");
        if (get_uint(od, &u) < 0 || u > 0x7fffffffULL) return vfail(c, p, "must be an unsigned integer"), -1;
        if (r->oper == '+' && u < 1) return vfail(c, p, "must be >= 1 for operator +"), -1;
        if (r->oper == '*' && u < 2) return vfail(c, p, "must be >= 2 for operator *"), -1;
        if (r->oper == '^' && u < 2) return vfail(c, p, "must be >= 2 for operator ^"), -1;
        if (r->oper == '^' && r->min < 2) {
            path_join(p, sizeof p, path, "min");
            return vfail(c, p, "must be >= 2 for operator ^"), -1;
        }
        r->operand = (int)u;
    }
    return 0;
}

/* -------------------------------------------------------------- resources */

static void res_free(mj_res *r)
{
    if (!r) return;
    for (int i = 0; i < r->nwith; i++) res_free(&r->with[i]);
    free(r->with);
    free(r->type);
    free(r->label);
    free(r->unit);
    free(r->id);
}

static int parse_resources(vctx *c, const ynode *n, const char *path, mj_res **out, int *nout);

static int parse_resource(vctx *c, const ynode *n, const char *path, mj_res *r)
{
    char p[512];
    memset(r, 0, sizeof *r);
    r->exclusive = MJ_X_UNSPEC;
    if (n->kind != YN_MAP) return vfail(c, path, "must be a mapping"), -1;
    static const char *known[] = {"type", "count", "unit", "exclusive", "with", "label", "id", NULL};
    for (int i = 0; i + 1 < n->nkids; i += 2) {
        const char *k = n->kids[i]->val ? n->kids[i]->val : "";
        int ok = 0;
        for (int j = 0; known[j]; j++)
            if (!strcmp(k, known[j])) ok = 1;
        if (!ok) {
            path_join(p, sizeof p, path, k);
            return vfail(c, p, "unknown key (expected type, count, unit, exclusive, with, label, id)"), -1;
        }
    }
    const ynode *t = ynode_get(n, "type");
    path_join(p, sizeof p, path, "type");
    if (!t) return vfail(c, path, "type is required"), -1;
    if (!is_string(t) || !*t->val) return vfail(c, p, "must be a non-empty string"), -1;
    if (!(r->type = xstrdup(c, t->val))) return -1;
    const ynode *cn = ynode_get(n, "count");
    path_join(p, sizeof p, path, "count");
    if (!cn) return vfail(c, path, "count is required"), -1;
    if (parse_count(c, cn, p, r) < 0) return -1;
    const ynode *u = ynode_get(n, "unit");
    if (u) {
        path_join(p, sizeof p, path, "unit");
        if (!is_string(u)) return vfail(c, p, "must be a string"), -1;
        if (!(r->unit = xstrdup(c, u->val))) return -1;
    }
    const ynode *x = ynode_get(n, "exclusive");
    if (x) {
        bool b;
        path_join(p, sizeof p, path, "exclusive");
        if (get_bool(x, &b) < 0) return vfail(c, p, "must be a boolean"), -1;
        r->exclusive = b ? MJ_X_TRUE : MJ_X_FALSE;
    }
    const ynode *l = ynode_get(n, "label");
    if (l) {
        path_join(p, sizeof p, path, "label");
        if (!is_string(l) || !*l->val) return vfail(c, p, "must be a non-empty string"), -1;
        if (!(r->label = xstrdup(c, l->val))) return -1;
    }
    const ynode *id = ynode_get(n, "id");
    if (id) {
        path_join(p, sizeof p, path, "id");
        if (!is_string(id)) return vfail(c, p, "must be a string"), -1;
        if (!(r->id = xstrdup(c, id->val))) return -1;
    }
    bool slot = !strcmp(r->type, "slot");
    if (slot && !l) return vfail(c, path, "label is required on a slot"), -1;
    const ynode *w = ynode_get(n, "with");
    if (w) {
        path_join(p, sizeof p, path, "with");
        if (parse_resources(c, w, p, &r->with, &r->nwith) < 0) return -1;
    } else if (slot) {
        return vfail(c, path, "a slot must have resources under with"), -1;
    }
    return 0;
}

static int parse_resources(vctx *c, const ynode *n, const char *path, mj_res **out, int *nout)
{
    if (n->kind != YN_SEQ) return vfail(c, path, "must be a list of resources"), -1;
    if (n->nkids == 0) return vfail(c, path, "must not be empty"), -1;
    mj_res *rs = calloc((size_t)n->nkids, sizeof *rs);
    if (!rs) return vfail(c, NULL, "out of memory"), -1;
    *out = rs;
    *nout = 0;
    char p[512];
    for (int i = 0; i < n->nkids; i++) {
        path_index(p, sizeof p, path, i);
        (*nout)++;
        if (parse_resource(c, n->kids[i], p, &rs[i]) < 0) return -1;
    }
    return 0;
}

/* ------------------------------------------------------------ constraints */

static void cons_free(mj_cons *k)
{
    if (!k) return;
    for (int i = 0; i < k->nitems; i++) free(k->items[i]);
    free(k->items);
    for (int i = 0; i < k->nkids; i++) cons_free(&k->kids[i]);
    free(k->kids);
}

static int parse_cons(vctx *c, const ynode *n, const char *path, mj_cons *k)
{
    char p[512];
    memset(k, 0, sizeof *k);
    if (n->kind != YN_MAP) return vfail(c, path, "must be a mapping (RFC 31)"), -1;
    if (n->nkids == 0) {
        k->op = MJC_TRUE;
        return 0;
    }
    k->op = MJC_AND;
    k->kids = calloc((size_t)(n->nkids / 2), sizeof *k->kids);
    if (!k->kids) return vfail(c, NULL, "out of memory"), -1;
    for (int i = 0; i + 1 < n->nkids; i += 2) {
        const char *op = n->kids[i]->val ? n->kids[i]->val : "";
        const ynode *v = n->kids[i + 1];
        mj_cons *sub = &k->kids[k->nkids++];
        path_join(p, sizeof p, path, op);
        if (v->kind != YN_SEQ) return vfail(c, p, "must be a list"), -1;
        if (!strcmp(op, "properties") || !strcmp(op, "hostlist") || !strcmp(op, "ranks")) {
            sub->op = op[0] == 'p' ? MJC_PROPS : op[0] == 'h' ? MJC_HOSTLIST : MJC_RANKS;
            sub->items = calloc((size_t)v->nkids + 1, sizeof *sub->items);
            if (!sub->items) return vfail(c, NULL, "out of memory"), -1;
            for (int j = 0; j < v->nkids; j++) {
                char q[600];
                path_index(q, sizeof q, p, j);
                if (!is_string(v->kids[j])) return vfail(c, q, "must be a string"), -1;
                const char *s = v->kids[j]->val;
                if (sub->op == MJC_PROPS) {
                    const char *nm = s[0] == '^' ? s + 1 : s;
                    if (!*nm || strpbrk(nm, "!&'\"`|()")) return vfail(c, q, "invalid property name"), -1;
                }
                if (!(sub->items[sub->nitems++] = xstrdup(c, s))) return -1;
            }
        } else if (!strcmp(op, "and") || !strcmp(op, "or") || !strcmp(op, "not")) {
            sub->op = op[0] == 'a' ? MJC_AND : op[0] == 'o' ? MJC_OR : MJC_NOT;
            sub->kids = calloc((size_t)v->nkids + 1, sizeof *sub->kids);
            if (!sub->kids) return vfail(c, NULL, "out of memory"), -1;
            for (int j = 0; j < v->nkids; j++) {
                char q[600];
                path_index(q, sizeof q, p, j);
                sub->nkids++;
                if (parse_cons(c, v->kids[j], q, &sub->kids[j]) < 0) return -1;
            }
        } else {
            return vfail(c, p, "unknown constraint operator (expected properties, hostlist, ranks, and, or, not)"), -1;
        }
    }
    return 0;
}

/* ----------------------------------------------------------------- jobspec */

void mj_cons_free(mj_cons *k)
{
    if (!k) return;
    cons_free(k);
    free(k);
}

void mj_free(mjobspec *js)
{
    if (!js) return;
    for (int i = 0; i < js->nres; i++) res_free(&js->res[i]);
    free(js->res);
    mj_cons_free(js->constraint);
    for (int i = 0; i < js->ntasks; i++) free(js->tasks[i].slot);
    free(js->tasks);
    free(js);
}

static int parse_tasks(vctx *c, const ynode *n, mjobspec *js)
{
    char p[512], q[600];
    if (n->kind != YN_SEQ) return vfail(c, "tasks", "must be a list"), -1;
    if (n->nkids == 0) return vfail(c, "tasks", "must not be empty"), -1;
    js->tasks = calloc((size_t)n->nkids, sizeof *js->tasks);
    if (!js->tasks) return vfail(c, NULL, "out of memory"), -1;
    for (int i = 0; i < n->nkids; i++) {
        const ynode *t = n->kids[i];
        mj_task *tk = &js->tasks[js->ntasks++];
        path_index(p, sizeof p, "tasks", i);
        if (t->kind != YN_MAP) return vfail(c, p, "must be a mapping"), -1;
        for (int j = 0; j + 1 < t->nkids; j += 2) {
            const char *k = t->kids[j]->val ? t->kids[j]->val : "";
            if (strcmp(k, "command") && strcmp(k, "slot") && strcmp(k, "count") && strcmp(k, "distribution") &&
                strcmp(k, "attributes")) {
                path_join(q, sizeof q, p, k);
                return vfail(c, q, "unknown key (expected command, slot, count, distribution, attributes)"), -1;
            }
        }
        const ynode *cmd = ynode_get(t, "command");
        path_join(q, sizeof q, p, "command");
        if (!cmd) return vfail(c, p, "command is required"), -1;
        if (cmd->kind != YN_SEQ || cmd->nkids == 0) return vfail(c, q, "must be a non-empty list of strings"), -1;
        for (int j = 0; j < cmd->nkids; j++)
            if (cmd->kids[j]->kind != YN_SCALAR) return vfail(c, q, "must be a non-empty list of strings"), -1;
        const ynode *sl = ynode_get(t, "slot");
        path_join(q, sizeof q, p, "slot");
        if (!sl) return vfail(c, p, "slot is required"), -1;
        if (!is_string(sl)) return vfail(c, q, "must be a string"), -1;
        if (!(tk->slot = xstrdup(c, sl->val))) return -1;
        const ynode *cn = ynode_get(t, "count");
        path_join(q, sizeof q, p, "count");
        if (!cn) return vfail(c, p, "count is required"), -1;
        if (cn->kind != YN_MAP) return vfail(c, q, "must be a mapping with per_slot or total"), -1;
        const ynode *ps = ynode_get(cn, "per_slot"), *tt = ynode_get(cn, "total");
        if ((ps != NULL) == (tt != NULL)) return vfail(c, q, "must have exactly one of per_slot or total"), -1;
        for (int j = 0; j + 1 < cn->nkids; j += 2) {
            const char *k = cn->kids[j]->val ? cn->kids[j]->val : "";
            if (strcmp(k, "per_slot") && strcmp(k, "total")) {
                char r2[700];
                path_join(r2, sizeof r2, q, k);
                return vfail(c, r2, "unknown key (expected per_slot or total)"), -1;
            }
        }
        unsigned long long u;
        char r2[700];
        path_join(r2, sizeof r2, q, ps ? "per_slot" : "total");
        if (get_uint(ps ? ps : tt, &u) < 0 || u < 1 || u > 0x7fffffff) return vfail(c, r2, "must be a positive integer"), -1;
        if (ps) tk->per_slot = (int)u;
        else tk->total = (int)u;
        const ynode *d = ynode_get(t, "distribution");
        if (d && !is_string(d)) {
            path_join(q, sizeof q, p, "distribution");
            return vfail(c, q, "must be a string"), -1;
        }
        const ynode *a = ynode_get(t, "attributes");
        if (a && a->kind != YN_MAP) {
            path_join(q, sizeof q, p, "attributes");
            return vfail(c, q, "must be a mapping"), -1;
        }
    }
    return 0;
}

static int parse_attributes(vctx *c, const ynode *n, mjobspec *js)
{
    if (n->kind != YN_MAP) return vfail(c, "attributes", "must be a mapping"), -1;
    for (int i = 0; i + 1 < n->nkids; i += 2) {
        const char *k = n->kids[i]->val ? n->kids[i]->val : "";
        char p[512];
        path_join(p, sizeof p, "attributes", k);
        if (strcmp(k, "user") && strcmp(k, "system")) return vfail(c, p, "unknown key (expected user or system)"), -1;
        if (n->kids[i + 1]->kind != YN_MAP && !ynode_is_null(n->kids[i + 1])) return vfail(c, p, "must be a mapping"), -1;
    }
    const ynode *sys = ynode_get(n, "system");
    if (!sys || sys->kind != YN_MAP) return 0;
    const ynode *d = ynode_get(sys, "duration");
    if (d) {
        double v;
        if (get_number(d, &v) < 0 || v < 0) return vfail(c, "attributes.system.duration", "must be a number of seconds >= 0"), -1;
        js->duration = v;
    }
    const ynode *k = ynode_get(sys, "constraints");
    if (k) {
        js->constraint = calloc(1, sizeof *js->constraint);
        if (!js->constraint) return vfail(c, NULL, "out of memory"), -1;
        if (parse_cons(c, k, "attributes.system.constraints", js->constraint) < 0) return -1;
    }
    return 0;
}

mjobspec *mj_parse(const char *text, size_t len, const char *name, char *err, size_t errlen)
{
    vctx c = {name ? name : "jobspec", err, errlen, 0};
    char yerr[256];
    ynode *root = ynode_parse(text, len, yerr, sizeof yerr);
    if (!root) {
        vfail(&c, NULL, "%s", yerr[0] ? yerr : "empty jobspec");
        return NULL;
    }
    mjobspec *js = calloc(1, sizeof *js);
    if (!js) {
        vfail(&c, NULL, "out of memory");
        ynode_free(root);
        return NULL;
    }
    if (root->kind != YN_MAP) {
        vfail(&c, NULL, "the top level of a jobspec must be a mapping");
        goto fail;
    }
    for (int i = 0; i + 1 < root->nkids; i += 2) {
        const char *k = root->kids[i]->val ? root->kids[i]->val : "";
        if (strcmp(k, "version") && strcmp(k, "resources") && strcmp(k, "tasks") && strcmp(k, "attributes")) {
            vfail(&c, k, "unknown key (expected version, resources, tasks, attributes)");
            goto fail;
        }
    }
    const ynode *v = ynode_get(root, "version");
    long long ver;
    if (!v) {
        vfail(&c, NULL, "version is required");
        goto fail;
    }
    if (get_int(v, &ver) < 0 || ver < 1 || ver > 9999) {
        vfail(&c, "version", "must be an integer from 1 to 9999");
        goto fail;
    }
    js->version = (int)ver;
    const ynode *r = ynode_get(root, "resources");
    if (!r) {
        vfail(&c, NULL, "resources is required");
        goto fail;
    }
    if (parse_resources(&c, r, "resources", &js->res, &js->nres) < 0) goto fail;
    const ynode *t = ynode_get(root, "tasks");
    if (!t) {
        vfail(&c, NULL, "tasks is required");
        goto fail;
    }
    if (parse_tasks(&c, t, js) < 0) goto fail;
    const ynode *a = ynode_get(root, "attributes");
    if (!a) {
        /* Fluxion: Missing key "attributes" in top level mapping */
        vfail(&c, NULL, "attributes is required");
        goto fail;
    }
    if (!ynode_is_null(a) && parse_attributes(&c, a, js) < 0) goto fail;
    ynode_free(root);
    return js;
fail:
    ynode_free(root);
    mj_free(js);
    return NULL;
}
