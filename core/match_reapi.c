/* Optional: Fluxion itself as the matcher.  When FLUENCE_FLUXION_LIB names
 * flux-sched's libreapi_cli shared library, matchers are backed by it
 * (loaded with dlopen) instead of the built-in one; results take the same
 * shape (mresult), in the format the matcher was opened with.
 *
 * The contract of libreapi_cli v0.54 (checked against the library):
 *   - match operations are match_op_t values: 1 allocate, 2 allocate with
 *     satisfiability, 3 allocate orelse reserve, 4 satisfiability;
 *   - a match returns 0 when it allocated / reserved (satisfiability: when
 *     satisfiable), -1 otherwise: with errno EBUSY (not now) or ENODEV
 *     (never) it is a failed match that uses up its job id, as resource-query
 *     prints it (a traverser message may come with it); with any other errno
 *     it is an error (a jobspec that does not parse, a writer or update
 *     failure) that uses none (ENOENT still reads as unsatisfiable);
 *   - errno is meaningless after a successful match;
 *   - error messages accumulate in one process-wide buffer until cleared.
 * Job ids are ours (reapi_cli_match_with_jobid), counted the way
 * resource-query counts them, so a trial match can be rewound. */
#include <dlfcn.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "json_write.h"
#include "match_reapi.h"
#include "match_writers.h"
#include "mbuf.h"

typedef void *(*new_fn)(void);
typedef void (*destroy_fn)(void *);
typedef int (*init_fn)(void *, const char *, const char *);
typedef int (*match_fn)(void *, int, const char *, uint64_t, bool *, char **, int64_t *, double *);
typedef int (*cancel_fn)(void *, uint64_t, bool);
typedef int (*info_fn)(void *, uint64_t, char **, bool *, int64_t *, double *);
typedef const char *(*errmsg_fn)(void *);
typedef void (*clear_fn)(void *);

struct mreapi {
    void *dl, *ctx;
    destroy_fn destroy;
    match_fn match;
    cancel_fn cancel;
    info_fn info;
    errmsg_fn errmsg;
    clear_fn clear;
    int64_t next_id;
};

/* match_op_t of flux-sched v0.54 (MATCH_UNKNOWN is 0) */
enum { R_ALLOCATE = 1, R_ALLOCATE_W_SAT = 2, R_ALLOCATE_ORELSE_RESERVE = 3, R_SATISFIABILITY = 4 };

/* The library's error text as one line ("a; b"), appended to err, then
 * cleared in the library. */
static void take_err(mreapi *r, char *err, size_t errlen)
{
    char *e = (char *)r->errmsg(r->ctx);
    r->clear(r->ctx);
    if (!e) return;
    size_t o = strlen(err), start = o;
    for (const char *p = e; *p && o + 3 < errlen;) {
        size_t n = strcspn(p, "\n");
        if (n) {
            if (o > start) {
                err[o++] = ';';
                err[o++] = ' ';
            }
            if (n > errlen - o - 1) n = errlen - o - 1;
            memcpy(err + o, p, n);
            o += n;
            err[o] = 0;
        }
        p += n;
        while (*p == '\n') p++;
    }
    free(e);
}

static void to_mbuf(void *to, const char *s, size_t n)
{
    mbuf_add(to, s, n);
}

mreapi *mr_open(const char *lib, const char *graph_text, const char *policy, int format, char *err, size_t errlen)
{
    err[0] = 0;
    if (!mw_format_name(format)) {
        snprintf(err, errlen, "unknown match format");
        return NULL;
    }
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
    static const char *const names[] = {"reapi_cli_new",    "reapi_cli_initialize",    "reapi_cli_destroy",
                                        "reapi_cli_cancel", "reapi_cli_info",          "reapi_cli_get_err_msg",
                                        "reapi_cli_clear_err_msg", "reapi_cli_match_with_jobid"};
    void *p[8];
    for (int i = 0; i < 8; i++)
        if (!(p[i] = dlsym(r->dl, names[i]))) {
            snprintf(err, errlen,
                     "FLUENCE_FLUXION_LIB=%s: not flux-sched's libreapi_cli v0.54 or later (no symbol %s)", lib,
                     names[i]);
            dlclose(r->dl);
            free(r);
            return NULL;
        }
    /* POSIX: function pointers from dlsym, copied bytewise (ISO C has no cast) */
    memcpy(&mk, &p[0], sizeof mk);
    memcpy(&init, &p[1], sizeof init);
    memcpy(&r->destroy, &p[2], sizeof r->destroy);
    memcpy(&r->cancel, &p[3], sizeof r->cancel);
    memcpy(&r->info, &p[4], sizeof r->info);
    memcpy(&r->errmsg, &p[5], sizeof r->errmsg);
    memcpy(&r->clear, &p[6], sizeof r->clear);
    memcpy(&r->match, &p[7], sizeof r->match);
    if (!(r->ctx = mk())) {
        snprintf(err, errlen, "FLUENCE_FLUXION_LIB: reapi_cli_new failed");
        dlclose(r->dl);
        free(r);
        return NULL;
    }
    const char *pol = policy && *policy ? policy : "first";
    mbuf opts = {0};
    mbuf_puts(&opts, "{\"load_format\":\"jgf\",\"matcher_policy\":");
    jw_string_to(to_mbuf, &opts, pol, strlen(pol), 0);
    mbuf_printf(&opts, ",\"match_format\":\"%s\"}", mw_format_name(format));
    if (opts.oom) {
        free(opts.d);
        snprintf(err, errlen, "out of memory");
        mr_free(r);
        return NULL;
    }
    r->clear(r->ctx);
    int rc = init(r->ctx, graph_text, opts.d);
    free(opts.d);
    if (rc != 0) {
        snprintf(err, errlen, "Fluxion: ");
        take_err(r, err, errlen);
        if (!strcmp(err, "Fluxion: ")) snprintf(err, errlen, "Fluxion: reapi_cli_initialize failed");
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

static char *info_text(const mresult *res, int op)
{
    char buf[512];
    if (op == MOP_SATISFIABILITY)
        snprintf(buf, sizeof buf, "INFO: =============================\nINFO: %s request\n"
                 "INFO: =============================\n", res->satisfiable ? "Satisfiable" : "Unsatisfiable");
    else if (res->matched && res->at == 0)
        snprintf(buf, sizeof buf, "INFO: =============================\nINFO: JOBID=%lld\n"
                 "INFO: RESOURCES=ALLOCATED\nINFO: SCHEDULED AT=Now\nINFO: =============================\n",
                 (long long)res->jobid);
    else if (res->matched)
        snprintf(buf, sizeof buf, "INFO: =============================\nINFO: JOBID=%lld\n"
                 "INFO: RESOURCES=RESERVED\nINFO: SCHEDULED AT=%lld\nINFO: =============================\n",
                 (long long)res->jobid, (long long)res->at);
    else
        snprintf(buf, sizeof buf, "INFO: =============================\nINFO: No matching resources found\n"
                 "%sINFO: JOBID=%lld\nINFO: =============================\n",
                 res->satisfiable ? "" : "INFO: Unsatisfiable request\n", (long long)res->jobid);
    return strdup(buf);
}

void mr_run(mreapi *r, int op, const char *jobspec, mresult *res)
{
    static const int ops[] = {R_ALLOCATE, R_ALLOCATE_W_SAT, R_ALLOCATE_ORELSE_RESERVE, R_SATISFIABILITY};
    memset(res, 0, sizeof *res);
    res->satisfiable = true;
    res->jobid = r->next_id;
    bool reserved = false;
    char *R = NULL;
    int64_t at = 0;
    double ov = 0;
    r->clear(r->ctx);
    /* One failure of the library reads errno left by its caller (an update
     * that finds nothing sets none): resource-query's readline leaves
     * ENOTTY there, when its commands do not come from a terminal. */
    errno = ENOTTY;
    int rc = r->match(r->ctx, ops[op], jobspec, (uint64_t)r->next_id, &reserved, &R, &at, &ov);
    int e = errno;
    /* its messages, as resource-query prints them; the first line, as the
     * command's error, when it is one */
    char *msg = (char *)r->errmsg(r->ctx);
    r->clear(r->ctx);
    res->msgs = msg ? msg : strdup("");
    if (rc == 0) {
        if (op != MOP_SATISFIABILITY) {
            res->matched = true;
            res->reserved = at != 0;
            res->at = at;
        }
    } else {
        res->satisfiable = e != ENODEV && e != ENOENT;
    }
    /* a failed match uses its id (errno EBUSY or ENODEV, possibly with a
     * traverser message); a jobspec error (EINVAL), a traverser or writer
     * error does not */
    bool failed_match = e == EBUSY || e == ENODEV;
    if (op != MOP_SATISFIABILITY && (rc == 0 || failed_match)) {
        res->counted = true;
        r->next_id++;
    }
    if (rc != 0 && !failed_match) {
        const char *m = res->msgs ? res->msgs : "";
        const char *p = strstr(m, ": ERROR: ");
        p = p ? p + 9 : m;
        snprintf(res->err, sizeof res->err, "%.*s", (int)strcspn(p, "\n"), p);
        if (!res->err[0]) snprintf(res->err, sizeof res->err, "%s", strerror(e));
    }
    res->R = strdup(res->matched && R ? R : "");
    res->info = info_text(res, op);
    size_t a = strlen(res->R ? res->R : ""), b = strlen(res->info ? res->info : "");
    if ((res->text = malloc(a + b + 1))) {
        memcpy(res->text, res->R ? res->R : "", a);
        memcpy(res->text + a, res->info ? res->info : "", b + 1);
    }
    free(R);
}

/* visits: the library does not tell how far its cancel walked (left 0) */
int mr_cancel(mreapi *r, int64_t jobid, unsigned visits[2])
{
    if (visits) visits[0] = visits[1] = 0;
    int rc = r->cancel(r->ctx, (uint64_t)jobid, false) == 0 ? 0 : -1;
    r->clear(r->ctx);
    return rc;
}

int mr_info(mreapi *r, int64_t jobid, char *state, size_t n, int64_t *at, bool *reserved)
{
    char *mode = NULL;
    double ov = 0;
    int rc = r->info(r->ctx, (uint64_t)jobid, &mode, reserved, at, &ov);
    r->clear(r->ctx);
    if (rc != 0) return -1;
    snprintf(state, n, "%s", mode ? mode : "");
    free(mode);
    return 0;
}

int64_t mr_next_jobid(const mreapi *r)
{
    return r->next_id;
}

void mr_rewind(mreapi *r, int64_t jobid)
{
    for (int64_t id = jobid; id < r->next_id; id++) r->cancel(r->ctx, (uint64_t)id, true);
    r->clear(r->ctx);
    if (jobid < r->next_id) r->next_id = jobid;
}
