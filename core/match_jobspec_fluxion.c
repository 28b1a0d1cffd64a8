/* A jobspec read as Fluxion v0.54's libjobspec reads it (flux-sched
 * resource/libjobspec/jobspec.cpp: Jobspec::Jobspec, Resource::Resource,
 * parse_yaml_count, Task::Task; constraint.cpp: constraint_parser), for
 * `fluence match`, which answers as resource-query does: the same jobspecs
 * accepted (counts of 0, slots without tasks or without resources, any
 * task shape), the same refused, with the message its parse_error carries
 * and in the order it checks (attributes before resources, each resource's
 * type before its count).  yaml-cpp's conversions are reproduced where they
 * decide: integers in any base C++ streams read (0x10, 010), no minus sign
 * on an unsigned, "bad conversion" at the value's line and column.
 *
 * fluence's own reader (match_jobspec.c) is stricter and names paths; it
 * checks the jobspecs users write.  What this one cannot reproduce is
 * yaml-cpp's wording for text that is not YAML at all (libyaml's is given)
 * and YAML aliases (refused, as everywhere in fluence). */
#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "match_jobspec_fluxion.h"
#include "match_ynode.h"

typedef struct fctx {
    bool (*known)(void *, const char *);
    void *kctx;
    char *err;
    size_t errlen;
    bool failed;
} fctx;

/* parse_error (msg): only the message reaches resource-query's output */
static int fail(fctx *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int fail(fctx *c, const char *fmt, ...)
{
    if (!c->failed) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(c->err, c->errlen, fmt, ap);
        va_end(ap);
        c->failed = true;
    }
    return -1;
}

/* yaml-cpp's TypedBadConversion, at the node it was converting */
static int bad_conversion(fctx *c, const ynode *n)
{
    return fail(c, "yaml-cpp: error at line %d, column %d: bad conversion", n->line, n->col);
}

/* yaml-cpp: a null (~, null, empty) is defined but neither scalar nor map */
static bool is_scalar(const ynode *n)
{
    return n && n->kind == YN_SCALAR && !ynode_is_null(n);
}

static bool is_map(const ynode *n)
{
    return n && n->kind == YN_MAP;
}

static bool is_seq(const ynode *n)
{
    return n && n->kind == YN_SEQ;
}

static int size(const ynode *n)
{
    return n->kind == YN_MAP ? n->nkids / 2 : n->kind == YN_SEQ ? n->nkids : 0;
}

/* yaml-cpp's as<integer>: a C++ stream with no fixed base (0x1f hex, 017
 * octal), nothing left over; no '-' before an unsigned. */
static int as_integer(const ynode *n, bool is_unsigned, long long lo, unsigned long long hi, long long *out)
{
    if (!is_scalar(n)) return -1;
    const char *s = n->val;
    bool neg = false;
    if (*s == '-' && is_unsigned) return -1;
    if (*s == '+' || *s == '-') neg = *s++ == '-';
    int base = 10;
    if (s[0] == '0' && (s[1] == 'x' || s[1] == 'X')) base = 16, s += 2;
    else if (s[0] == '0' && s[1]) base = 8, s++;
    if (!*s) return -1;
    unsigned long long v = 0;
    for (; *s; s++) {
        int d = *s >= '0' && *s <= '9' ? *s - '0' : *s >= 'a' && *s <= 'f' ? *s - 'a' + 10
              : *s >= 'A' && *s <= 'F' ? *s - 'A' + 10 : 99;
        if (d >= base) {
            /* trailing blanks are read past; anything else is left over */
            while (*s == ' ' || *s == '\t') s++;
            if (*s) return -1;
            break;
        }
        if (v > (ULLONG_MAX - (unsigned)d) / (unsigned)base) return -1;
        v = v * (unsigned)base + (unsigned)d;
    }
    if (is_unsigned) {
        if (v > hi) return -1;
        *out = (long long)v;
        return 0;
    }
    if (neg ? v > (unsigned long long)LLONG_MAX + 1 || -(long double)v < lo : v > hi) return -1;
    *out = neg ? (long long)(0 - v) : (long long)v;
    return 0;
}

static int get_unsigned(fctx *c, const ynode *n, unsigned *out)
{
    long long v;
    if (as_integer(n, true, 0, UINT_MAX, &v) < 0) return bad_conversion(c, n);
    *out = (unsigned)v;
    return 0;
}

/* yaml-cpp's as<double>: the decimal forms a C++ stream reads, and YAML's
 * .inf / .nan spellings */
static int get_double(fctx *c, const ynode *n, double *out)
{
    static const char *const inf[] = {".inf", ".Inf", ".INF", "+.inf", "+.Inf", "+.INF"};
    static const char *const ninf[] = {"-.inf", "-.Inf", "-.INF"};
    static const char *const nan[] = {".nan", ".NaN", ".NAN"};
    if (!is_scalar(n)) return bad_conversion(c, n);
    for (size_t i = 0; i < 6; i++)
        if (!strcmp(n->val, inf[i])) return *out = 1.0 / 0.0, 0;
    for (size_t i = 0; i < 3; i++)
        if (!strcmp(n->val, ninf[i])) return *out = -1.0 / 0.0, 0;
    for (size_t i = 0; i < 3; i++)
        if (!strcmp(n->val, nan[i])) return *out = 0.0 / 0.0, 0;
    const char *s = n->val;
    size_t i = 0, digits = 0;
    if (s[i] == '+' || s[i] == '-') i++;
    while (s[i] >= '0' && s[i] <= '9') i++, digits++;
    if (s[i] == '.') {
        i++;
        while (s[i] >= '0' && s[i] <= '9') i++, digits++;
    }
    if (digits && (s[i] == 'e' || s[i] == 'E')) {
        i++;
        if (s[i] == '+' || s[i] == '-') i++;
        while (s[i] >= '0' && s[i] <= '9') i++;
    }
    size_t end = i;
    while (s[i] == ' ' || s[i] == '\t') i++;
    if (!digits || s[i]) return bad_conversion(c, n);
    char *stop;
    errno = 0;
    double v = strtod(s, &stop);
    /* out of range is a failed read; what strtod did not take, too */
    if ((size_t)(stop - s) != end || (errno == ERANGE && (v > 1.0 || v < -1.0))) return bad_conversion(c, n);
    *out = v;
    return 0;
}

/* as<std::string>: a scalar's text ("null" for a null), else bad conversion */
static int get_string(fctx *c, const ynode *n, const char **out)
{
    if (n->kind != YN_SCALAR) return bad_conversion(c, n);
    *out = ynode_is_null(n) ? "null" : n->val;
    return 0;
}

static char *dup(fctx *c, const char *s)
{
    char *d = strdup(s);
    if (!d) fail(c, "out of memory");
    return d;
}

/* ------------------------------------------------------------------ count */

static int parse_count(fctx *c, mj_res *r, const ynode *n)
{
    r->oper = '+';
    r->operand = 1;
    r->max = UINT_MAX;
    if (is_scalar(n)) {
        if (get_unsigned(c, n, &r->min) < 0) return -1;
        r->max = r->min;
        return 0;
    }
    if (!is_map(n)) return fail(c, "count is not a mapping");
    const ynode *mn = ynode_get(n, "min"), *mx = ynode_get(n, "max"), *op = ynode_get(n, "operator"),
                *od = ynode_get(n, "operand");
    if (!mn) return fail(c, "Key \"min\" missing from count");
    if (!is_scalar(mn)) return fail(c, "Value of \"min\" must be a scalar");
    if (mx || op || od) {
        if (!mx || !op || !od)
            return fail(c, "All or none of \"max\", \"operator\", and \"operand\" must be specified");
        if (!is_scalar(mx)) return fail(c, "Value of \"max\" must be a scalar");
        if (!is_scalar(op)) return fail(c, "Value of \"operator\" must be a scalar");
        if (!is_scalar(od)) return fail(c, "Value of \"operand\" must be a scalar");
        if (get_unsigned(c, mx, &r->max) < 0) return -1;
        /* as<char>: exactly one character */
        if (strlen(op->val) != 1) return bad_conversion(c, op);
        r->oper = op->val[0];
        long long v;
        if (as_integer(od, false, INT_MIN, INT_MAX, &v) < 0) return bad_conversion(c, od);
        r->operand = (int)v;
    }
    if (get_unsigned(c, mn, &r->min) < 0) return -1;
    if (r->min < 1) return fail(c, "\"min\" must be greater than zero");
    if (mx && r->max < r->min) return fail(c, "\"max\" must be greater than or equal to \"min\"");
    switch (r->oper) {
    case '+':
        if (r->operand < 1) return fail(c, "\"operand\" must be greater than zero for addition '+'");
        break;
    case '*':
        if (r->operand < 2) return fail(c, "\"operand\" must be greater than one for multiplication '*'");
        break;
    case '^':
        if (r->operand < 2) return fail(c, "\"operand\" must be greater than one for exponentiation '^'");
        if (r->min < 2) return fail(c, "\"min\" must be greater than one for exponentiation '^'");
        break;
    default:
        return fail(c, "Invalid count operator");
    }
    return 0;
}

/* -------------------------------------------------------------- resources */

static int parse_resources(fctx *c, const ynode *n, mj_res **out, int *nout);

static int parse_resource(fctx *c, mj_res *r, const ynode *n)
{
    r->exclusive = MJ_X_UNSPEC;
    int fields = 0;
    if (!is_map(n)) return fail(c, "resource is not a mapping");
    const ynode *t = ynode_get(n, "type");
    if (!t) return fail(c, "Key \"type\" missing from resource");
    if (!is_scalar(t)) return fail(c, "Value of \"type\" must be a scalar");
    if (!c->known(c->kctx, t->val)) return fail(c, "Value of \"type\" must be a resource type known to fluxion");
    if (!(r->type = dup(c, t->val))) return -1;
    fields++;
    const ynode *cn = ynode_get(n, "count");
    if (!cn) return fail(c, "Key \"count\" missing from resource");
    if (parse_count(c, r, cn) < 0) return -1;
    fields++;
    const ynode *u = ynode_get(n, "unit");
    if (u) {
        if (!is_scalar(u)) return fail(c, "Value of \"unit\" must be a scalar");
        fields++;
        if (!(r->unit = dup(c, u->val))) return -1;
    }
    const ynode *x = ynode_get(n, "exclusive");
    if (x) {
        if (!is_scalar(x)) return fail(c, "Value of \"exclusive\" must be a scalar");
        fields++;
        if (!strcmp(x->val, "false")) r->exclusive = MJ_X_FALSE;
        else if (!strcmp(x->val, "true")) r->exclusive = MJ_X_TRUE;
        else return fail(c, "Value of \"exclusive\" must be either \"true\" or \"false\"");
    }
    const ynode *w = ynode_get(n, "with");
    if (w) {
        fields++;
        if (parse_resources(c, w, &r->with, &r->nwith) < 0) return -1;
    }
    const ynode *l = ynode_get(n, "label");
    if (l) {
        if (!is_scalar(l)) return fail(c, "Value of \"label\" must be a scalar");
        fields++;
        if (!(r->label = dup(c, l->val))) return -1;
    } else if (!strcmp(r->type, "slot")) {
        return fail(c, "All slots must be labeled");
    }
    const ynode *id = ynode_get(n, "id");
    if (id) {
        if (!is_scalar(id)) return fail(c, "Value of \"id\" must be a scalar");
        fields++;
        if (!(r->id = dup(c, id->val))) return -1;
    }
    if (fields != size(n)) return fail(c, "Unrecognized key in resource mapping");
    if (size(n) < 2 || size(n) > 10) return fail(c, "impossible number of entries in resource mapping");
    return 0;
}

static int parse_resources(fctx *c, const ynode *n, mj_res **out, int *nout)
{
    if (!is_seq(n)) return fail(c, "\"resources\" is not a sequence");
    *out = calloc((size_t)(n->nkids ? n->nkids : 1), sizeof **out);
    if (!*out) return fail(c, "out of memory");
    for (int i = 0; i < n->nkids; i++) {
        (*nout)++; /* counted first: mj_free walks what was filled */
        if (parse_resource(c, &(*out)[i], n->kids[i]) < 0) return -1;
    }
    return 0;
}

/* ------------------------------------------------------------------ tasks */

static int parse_task(fctx *c, const ynode *n)
{
    const char *s = "";
    if (!is_map(n)) return fail(c, "task is not a mapping");
    const ynode *cmd = ynode_get(n, "command");
    if (!cmd) return fail(c, "Key \"command\" missing from task");
    if (!is_seq(cmd)) return fail(c, "\"command\" value must be a sequence");
    for (int i = 0; i < cmd->nkids; i++)
        if (get_string(c, cmd->kids[i], &s) < 0) return -1;
    const ynode *slot = ynode_get(n, "slot");
    if (!slot) return fail(c, "Key \"slot\" missing from task");
    if (!is_scalar(slot)) return fail(c, "Value of task \"slot\" must be a YAML scalar");
    const ynode *count = ynode_get(n, "count");
    if (count) {
        if (!is_map(count)) return fail(c, "\"count\" in task is not a mapping");
        if (size(count) != 1) return fail(c, "\"count\" in task must have exactly one entry");
        if (get_string(c, count->kids[0], &s) < 0 || get_string(c, count->kids[1], &s) < 0) return -1;
    }
    const ynode *dist = ynode_get(n, "distribution");
    if (dist && !is_scalar(dist)) return fail(c, "Value of task \"distribution\" must be a YAML scalar");
    const ynode *attrs = ynode_get(n, "attributes");
    if (attrs) {
        if (!is_map(attrs)) return fail(c, "\"attributes\" in task is not a mapping");
        for (int i = 0; i < attrs->nkids; i++)
            if (get_string(c, attrs->kids[i], &s) < 0) return -1;
    }
    if (size(n) < 3 || size(n) > 5) return fail(c, "impossible number of entries in task mapping");
    return 0;
}

/* ------------------------------------------------------------ constraints */

/* flux-core's hostlist_append: hosts separated by commas, each a prefix
 * with an optional [ranges] (N or N-M, N <= M) and suffix */
static bool hostlist_ok(const char *s)
{
    while (*s) {
        for (; *s && *s != ','; s++) {
            if (*s == ']') return false;
            if (*s != '[') continue;
            for (s++; *s != ']'; s++) {
                char *e;
                if (*s < '0' || *s > '9') return false;
                unsigned long a = strtoul(s, &e, 10), b = a;
                s = e;
                if (*s == '-') {
                    if (s[1] < '0' || s[1] > '9') return false;
                    b = strtoul(s + 1, &e, 10);
                    s = e;
                }
                if (b < a || (*s != ',' && *s != ']')) return false;
                if (*s == ']') break;
            }
        }
        if (*s == ',') s++;
    }
    return true;
}

/* flux-core's idset_decode: N or N-M (N <= M), commas, optionally in [] */
static bool idset_ok(const char *s)
{
    size_t n = strlen(s);
    if (n && s[0] == '[') {
        if (s[n - 1] != ']') return false;
        s++, n -= 2;
    }
    const char *end = s + n;
    while (s < end) {
        char *e;
        if (*s < '0' || *s > '9') return false;
        unsigned long a = strtoul(s, &e, 10), b = a;
        s = e;
        if (s < end && *s == '-') {
            if (s[1] < '0' || s[1] > '9') return false;
            b = strtoul(s + 1, &e, 10);
            s = e;
        }
        if (b < a || s > end) return false;
        if (s < end && *s++ != ',') return false;
        if (s == end && s[-1] == ',') return false;
    }
    return true;
}

static int parse_constraint(fctx *c, const ynode *n, mj_cons *k)
{
    const char *op = "";
    if (!is_map(n)) return fail(c, "constraint is not a mapping");
    if (size(n) > 1) return fail(c, "constraint map may not contain > 1 operation");
    if (size(n) == 0) {
        k->op = MJC_TRUE;
        return 0;
    }
    if (get_string(c, n->kids[0], &op) < 0) return -1;
    const ynode *v = n->kids[1];
    if (!is_seq(v)) return fail(c, "%.64s operator value must be an array", op);
    if (!strcmp(op, "properties") || !strcmp(op, "hostlist") || !strcmp(op, "ranks")) {
        k->op = op[0] == 'p' ? MJC_PROPS : op[0] == 'h' ? MJC_HOSTLIST : MJC_RANKS;
        k->items = calloc((size_t)v->nkids + 1, sizeof *k->items);
        if (!k->items) return fail(c, "out of memory");
        for (int j = 0; j < v->nkids; j++) {
            const ynode *p = v->kids[j];
            const char *s = "";
            if (k->op == MJC_PROPS) {
                /* a string is a quoted scalar (yaml-cpp's tag "!") */
                if (!is_scalar(p) || p->plain) return fail(c, "non-string property specified");
                const char *name = p->val[0] == '^' ? p->val + 1 : p->val;
                if (strpbrk(name, "!&'\"^`|()")) return fail(c, "%.200s is invalid", p->val);
                s = p->val;
            } else {
                if (get_string(c, p, &s) < 0) return -1;
                if (k->op == MJC_HOSTLIST && !hostlist_ok(s)) return fail(c, "Invalid hostlist `%.200s'", s);
                if (k->op == MJC_RANKS && !idset_ok(s)) return fail(c, "Invalid idset `%.200s'", s);
            }
            if (!(k->items[k->nitems] = dup(c, s))) return -1;
            k->nitems++;
        }
        return 0;
    }
    if (!strcmp(op, "and") || !strcmp(op, "or") || !strcmp(op, "not")) {
        k->op = op[0] == 'a' ? MJC_AND : op[0] == 'o' ? MJC_OR : MJC_NOT;
        k->kids = calloc((size_t)v->nkids + 1, sizeof *k->kids);
        if (!k->kids) return fail(c, "out of memory");
        for (int j = 0; j < v->nkids; j++) {
            k->nkids++;
            if (parse_constraint(c, v->kids[j], &k->kids[j]) < 0) return -1;
        }
        return 0;
    }
    return fail(c, "unknown constraint operator: %.64s", op);
}

/* ------------------------------------------------------------- attributes */

static int parse_attributes(fctx *c, const ynode *n, mjobspec *js)
{
    const char *key = "", *s = "";
    if (!is_map(n)) return fail(c, "\"attributes\" is not a map");
    for (int i = 0; i + 1 < n->nkids; i += 2) {
        if (get_string(c, n->kids[i], &key) < 0) return -1;
        const ynode *v = n->kids[i + 1];
        if (!strcmp(key, "user")) continue;
        if (strcmp(key, "system")) return fail(c, "Unknown key in \"attributes\"");
        if (v->kind == YN_SEQ && v->nkids)
            /* a sequence iterated as a mapping: yaml-cpp's InvalidNode */
            return fail(c, "invalid node; this may result from using a map iterator as a sequence iterator, "
                           "or vice-versa");
        if (v->kind != YN_MAP) continue;
        for (int j = 0; j + 1 < v->nkids; j += 2) {
            const ynode *sv = v->kids[j + 1];
            if (get_string(c, v->kids[j], &key) < 0) return -1;
            if (!strcmp(key, "duration")) {
                if (get_double(c, sv, &js->duration) < 0) return -1;
            } else if (!strcmp(key, "queue") || !strcmp(key, "cwd")) {
                if (get_string(c, sv, &s) < 0) return -1;
            } else if (!strcmp(key, "environment")) {
                if (sv->kind == YN_SEQ && sv->nkids)
                    return fail(c, "invalid node; this may result from using a map iterator as a sequence "
                                   "iterator, or vice-versa");
                for (int e = 0; sv->kind == YN_MAP && e < sv->nkids; e++)
                    if (get_string(c, sv->kids[e], &s) < 0) return -1;
            } else if (!strcmp(key, "constraints")) {
                /* a repeated key: the last one is the constraint */
                mj_cons_free(js->constraint);
                js->constraint = NULL;
                if (!(js->constraint = calloc(1, sizeof *js->constraint))) return fail(c, "out of memory");
                if (parse_constraint(c, sv, js->constraint) < 0) return -1;
            }
        }
    }
    return 0;
}

/* ---------------------------------------------------------------- jobspec */

static int parse_top(fctx *c, const ynode *top, mjobspec *js)
{
    if (!is_map(top)) return fail(c, "Top level of jobspec is not a mapping");
    const ynode *v = ynode_get(top, "version"), *r = ynode_get(top, "resources"), *t = ynode_get(top, "tasks"),
                *a = ynode_get(top, "attributes");
    if (!v) return fail(c, "Missing key \"version\" in top level mapping");
    if (!r) return fail(c, "Missing key \"resource\" in top level mapping");
    if (!t) return fail(c, "Missing key \"tasks\" in top level mapping");
    if (!a) return fail(c, "Missing key \"attributes\" in top level mapping");
    if (size(top) != 4) return fail(c, "Top mapping in jobspec must have exactly four entries");
    if (!is_scalar(v)) return fail(c, "\"version\" must be an unsigned integer");
    unsigned ver = 0;
    if (get_unsigned(c, v, &ver) < 0) return -1;
    if (ver < 1 || ver > 9999) return fail(c, "Only jobspec \"version\" 1-9999 is supported");
    js->version = (int)ver;
    if (!ynode_is_null(a) && parse_attributes(c, a, js) < 0) return -1;
    if (parse_resources(c, r, &js->res, &js->nres) < 0) return -1;
    if (!is_seq(t)) return fail(c, "\"tasks\" is not a sequence");
    for (int i = 0; i < t->nkids; i++)
        if (parse_task(c, t->kids[i]) < 0) return -1;
    return 0;
}

mjobspec *mj_parse_fluxion(const char *text, size_t len, bool (*known)(void *, const char *), void *kctx, char *err,
                           size_t errlen)
{
    fctx c = {known, kctx, err, errlen, false};
    char yerr[256];
    ynode *root = ynode_parse(text, len, yerr, sizeof yerr);
    if (!root && yerr[0]) {
        fail(&c, "%s", yerr);
        return NULL;
    }
    mjobspec *js = calloc(1, sizeof *js);
    if (!js) {
        fail(&c, "out of memory");
        ynode_free(root);
        return NULL;
    }
    /* no document at all is a null top level */
    int rc = root ? parse_top(&c, root, js) : fail(&c, "Top level of jobspec is not a mapping");
    ynode_free(root);
    if (rc < 0) {
        mj_free(js);
        return NULL;
    }
    return js;
}
