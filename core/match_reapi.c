/* Optional: Fluxion itself as the matcher.  When FLUENCE_FLUXION_LIB names
 * flux-sched's libreapi_cli shared library, matchers are backed by it
 * (loaded with dlopen) instead of the built-in one; the results take the
 * same shape (mresult), with the simple-format text only.
 *
 * The reapi_cli contract (fluxion.md): a failed match may still return 0
 * with errno EBUSY (not now) or ENODEV (never); -1 is an error such as a
 * jobspec that fails to parse. */
#include <dlfcn.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "match.h"
#include "match_reapi.h"

typedef void *(*new_fn)(void);
typedef void (*destroy_fn)(void *);
typedef int (*init_fn)(void *, const char *, const char *);
typedef int (*match_fn)(void *, int, const char *, uint64_t *, bool *, char **, int64_t *, double *);
typedef int (*cancel_fn)(void *, uint64_t, bool);
typedef int (*info_fn)(void *, uint64_t, char **, bool *, int64_t *, double *);
typedef const char *(*errmsg_fn)(void *);

struct mreapi {
    void *dl, *ctx;
    destroy_fn destroy;
    match_fn match;
    cancel_fn cancel;
    info_fn info;
    errmsg_fn errmsg;
    uint64_t next_id;
};

/* reapi's match_op_t */
enum { R_ALLOCATE = 1, R_ALLOCATE_W_SAT = 2, R_ALLOCATE_ORELSE_RESERVE = 3, R_SATISFIABILITY = 4 };

static void *sym(void *dl, const char *name, char *err, size_t errlen)
{
    void *p = dlsym(dl, name);
    if (!p) snprintf(err, errlen, "%s: missing symbol", name);
    return p;
}

static void take_err(mreapi *r, char *err, size_t errlen)
{
    const char *e = r->errmsg ? r->errmsg(r->ctx) : NULL;
    if (e && *e) {
        snprintf(err, errlen, "%s", e);
        size_t n = strlen(err);
        while (n && err[n - 1] == '\n') err[--n] = 0;
    }
    free((void *)e);
}

static void json_str(char *dst, size_t n, const char *s)
{
    size_t o = 0;
    for (; *s && o + 8 < n; s++) {
        if (*s == '"' || *s == '\\') dst[o++] = '\\';
        dst[o++] = *s;
    }
    dst[o] = 0;
}

mreapi *mr_open(const char *lib, const char *graph_text, const char *policy, char *err, size_t errlen)
{
    mreapi *r = calloc(1, sizeof *r);
    if (!r) {
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    r->next_id = 1;
    r->dl = dlopen(lib, RTLD_NOW | RTLD_LOCAL);
    if (!r->dl) {
        snprintf(err, errlen, "FLUENCE_FLUXION_LIB: %s", dlerror());
        free(r);
        return NULL;
    }
    new_fn mk = NULL;
    init_fn init = NULL;
    /* POSIX: function pointers from dlsym, copied bytewise (ISO C has no cast) */
#define LOAD(var, name)                                   \
    do {                                                  \
        void *p_ = sym(r->dl, name, err, errlen);         \
        if (p_) memcpy(&(var), &p_, sizeof(var));         \
    } while (0)
    LOAD(mk, "reapi_cli_new");
    LOAD(init, "reapi_cli_initialize");
    LOAD(r->destroy, "reapi_cli_destroy");
    LOAD(r->match, "reapi_cli_match");
    LOAD(r->cancel, "reapi_cli_cancel");
    LOAD(r->info, "reapi_cli_info");
    {
        void *p_ = dlsym(r->dl, "reapi_cli_get_err_msg");
        if (p_) memcpy(&r->errmsg, &p_, sizeof r->errmsg);
    }
#undef LOAD
    if (!mk || !init || !r->destroy || !r->match || !r->cancel || !r->info || !(r->ctx = mk())) {
        if (!err[0]) snprintf(err, errlen, "reapi_cli_new failed");
        dlclose(r->dl);
        free(r);
        return NULL;
    }
    char pol[256], opts[400];
    json_str(pol, sizeof pol, policy && *policy ? policy : "first");
    snprintf(opts, sizeof opts, "{\"load_format\":\"jgf\",\"matcher_policy\":\"%s\",\"match_format\":\"simple\"}", pol);
    if (init(r->ctx, graph_text, opts) != 0) {
        snprintf(err, errlen, "reapi_cli_initialize failed");
        take_err(r, err, errlen);
        mr_free(r);
        return NULL;
    }
    return r;
}

void mr_free(mreapi *r)
{
    if (!r) return;
    if (r->ctx) r->destroy(r->ctx);
    if (r->dl) dlclose(r->dl);
    free(r);
}

static char *cat(const char *a, const char *b)
{
    size_t la = a ? strlen(a) : 0, lb = strlen(b);
    char *p = malloc(la + lb + 1);
    if (!p) return NULL;
    if (la) memcpy(p, a, la);
    memcpy(p + la, b, lb + 1);
    return p;
}

void mr_run(mreapi *r, int op, const char *jobspec, mresult *res)
{
    static const int ops[] = {R_ALLOCATE, R_ALLOCATE_W_SAT, R_ALLOCATE_ORELSE_RESERVE, R_SATISFIABILITY};
    memset(res, 0, sizeof *res);
    res->satisfiable = true;
    res->jobid = (int64_t)r->next_id;
    uint64_t jobid = 0;
    bool reserved = false;
    char *R = NULL;
    int64_t at = 0;
    double ov = 0;
    errno = 0;
    int rc = r->match(r->ctx, ops[op], jobspec, &jobid, &reserved, &R, &at, &ov);
    int e = errno;
    char info[512];
    if (op == MOP_SATISFIABILITY) {
        res->satisfiable = rc == 0 && !(e == ENODEV || e == ENOENT);
        snprintf(info, sizeof info, "INFO: =============================\nINFO: %s request\n"
                 "INFO: =============================\n", res->satisfiable ? "Satisfiable" : "Unsatisfiable");
    } else {
        if (rc == 0) {
            res->jobid = (int64_t)jobid;
            res->counted = true;
            r->next_id = jobid + 1;
            res->matched = !(e == ENODEV || e == EBUSY || e == EINVAL || e == ENOENT);
            res->satisfiable = !(e == ENODEV || e == ENOENT);
        } else {
            take_err(r, res->err, sizeof res->err);
        }
        res->reserved = res->matched && at != 0;
        res->at = res->matched ? at : 0;
        char when[32];
        if (at == 0) snprintf(when, sizeof when, "Now");
        else snprintf(when, sizeof when, "%lld", (long long)at);
        if (res->matched)
            snprintf(info, sizeof info, "INFO: =============================\nINFO: JOBID=%lld\n"
                     "INFO: RESOURCES=%s\nINFO: SCHEDULED AT=%s\nINFO: =============================\n",
                     (long long)res->jobid, at == 0 ? "ALLOCATED" : "RESERVED", when);
        else
            snprintf(info, sizeof info, "INFO: =============================\nINFO: No matching resources found\n"
                     "%sINFO: JOBID=%lld\nINFO: =============================\n",
                     res->satisfiable ? "" : "INFO: Unsatisfiable request\n", (long long)res->jobid);
    }
    res->info = strdup(info);
    res->simple = cat(res->matched ? R : NULL, info);
    free(R);
}

int mr_cancel(mreapi *r, int64_t jobid)
{
    return r->cancel(r->ctx, (uint64_t)jobid, false) == 0 ? 0 : -1;
}

int mr_info(mreapi *r, int64_t jobid, char *state, size_t n, int64_t *at, bool *reserved)
{
    char *mode = NULL;
    double ov = 0;
    if (r->info(r->ctx, (uint64_t)jobid, &mode, reserved, at, &ov) != 0) return -1;
    snprintf(state, n, "%s", mode ? mode : "");
    free(mode);
    return 0;
}
