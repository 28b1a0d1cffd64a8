/* fluence.kube — kubeconfig resolution, credentials and authenticated
 * requests to the Kubernetes API server.
 *
 *   kube.load{kubeconfig=, context=, namespace=, exec_timeout=}
 *       -> config (raises a message); exec_timeout: seconds an exec
 *       credential plugin may take, its output and its exit (default 60)
 *   config:info() -> {server=, namespace=, context=, cluster=, user=, auth=,
 *                     insecure=, tls_server_name=, in_cluster=, files={...}}
 *   config:request{method=, path=, body=, content_type=, accept=,
 *                  timeout=, connect_timeout=, max_body=}
 *       -> {status=, headers={lowercased=...}, body=, time=} | nil, message
 *   kube.request_many{ {config, request}, ... }
 *       -> { result | {error = message}, ... }: every request at once (one
 *          curl multi), to one cluster or several: a run reading many
 *          clusters waits for the slowest, not for the sum
 *   kube.sleep(seconds)
 *
 * Files: --kubeconfig alone; else every KUBECONFIG path (missing files
 * skipped), merged with the first file that sets a value or a named entry
 * winning; else ~/.kube/config; else, inside a pod, the service account
 * (KUBERNETES_SERVICE_HOST/PORT and FLUENCE_SERVICEACCOUNT_DIR, default
 * /var/run/secrets/kubernetes.io/serviceaccount).
 *
 * Why C: tokens, passwords and private keys are read here and stay in C
 * memory inside the config userdata (zeroed when it is collected); Lua sees
 * only info(), which names the auth method but never its material.  The exec
 * credential plugin (v1 / v1beta1) is the one subprocess fluence starts: it is
 * the user's credential helper, run with posix_spawn, a pipe and a time limit
 * past which it is killed and reaped.  Every file (kubeconfigs, tokens, keys,
 * certificates, the service account's) is read by fluence_readfile as a
 * regular file only (readfile.h): a FIFO or a device named there is refused,
 * never waited on. */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include "lazylib.h"
#include <jansson.h>
#include <lauxlib.h>
#include "escape.h"
#include "http_transfer.h"
#include "readfile.h"

extern char **environ;

#define CONFIG_MT "fluence.kube.config"
#define EXEC_TIMEOUT 60.0            /* seconds, unless kube.load is given exec_timeout */
#define EXEC_MAX_OUT (1024 * 1024)
#define DEFAULT_SA_DIR "/var/run/secrets/kubernetes.io/serviceaccount"

struct config {
    char *server, *context, *cluster, *user, *namespace, *auth;
    char *ca_pem;                         /* CA bundle (PEM), from file or data */
    char *tls_server_name;
    int insecure, in_cluster;
    /* secrets: zeroed before free */
    char *token, *username, *password, *cert_pem, *key_pem;
};

static void sfree(char *p)
{
    if (p) { explicit_bzero(p, strlen(p)); free(p); }
}

static void config_free(struct config *c)
{
    free(c->server); free(c->context); free(c->cluster); free(c->user);
    free(c->namespace); free(c->auth); free(c->ca_pem); free(c->tls_server_name);
    sfree(c->token); sfree(c->username); sfree(c->password);
    sfree(c->cert_pem); sfree(c->key_pem);
    memset(c, 0, sizeof *c);
}

static int config_gc(lua_State *L)
{
    config_free(luaL_checkudata(L, 1, CONFIG_MT));
    return 0;
}

static char *xstrdup(lua_State *L, const char *s)
{
    if (!s) return NULL;
    char *p = strdup(s);
    if (!p) luaL_error(L, "not enough memory");
    return p;
}

/* [-0, +(0|1)]  Reads a whole file (readfile.h: a regular file, within the
 * size limit; every copy wiped) into a malloc'd NUL-terminated buffer.  On
 * failure: NULL, errno set, and "PATH: reason" pushed. */
static char *read_all(lua_State *L, const char *path, size_t *lenp)
{
    char *buf, why[FLUENCE_READ_WHY];
    size_t len;
    int err = fluence_readfile(path, FLUENCE_READ_LIMIT, FLUENCE_READ_SECRET | FLUENCE_READ_REGULAR, &buf, &len, why);
    if (err) {
        fluence_push_read_error(L, path, why);
        errno = err;
        return NULL;
    }
    if (lenp) *lenp = len;
    return buf;
}

/* [-0, +1]  s in double quotes, escaped as Go's %q (escape.h): a name from
 * the kubeconfig in a message stays on one line, and cannot drive a terminal. */
static const char *quoted(lua_State *L, const char *s)
{
    return fluence_push_escaped(L, s ? s : "", s ? strlen(s) : 0, FLUENCE_ESC_QUOTE);
}

/* [-0, +1]  s escaped (escape.h), without quotes: a command or an apiVersion
 * from the kubeconfig in a message. */
static const char *shown(lua_State *L, const char *s)
{
    return fluence_push_escaped(L, s ? s : "", s ? strlen(s) : 0, 0);
}

/* [-1, +0, v]  Raises the message on the stack top as a structured INPUT
 * error (fluence.errors): a kubeconfig that is wrong is bad input (exit 3),
 * named first in its message, not a cluster that cannot be reached. */
static int input_error(lua_State *L)
{
    lua_getglobal(L, "require");
    lua_pushliteral(L, "fluence.errors");
    lua_call(L, 1, 1);
    lua_getfield(L, -1, "new");
    lua_pushliteral(L, "INPUT");
    lua_pushvalue(L, -4);
    lua_call(L, 2, 1);
    return lua_error(L);
}

/* [-0, +1]  "FILE:LINE:COL" of key in the kubeconfig entry wrapper at w
 * ({v = entry, file =, dir =}: merge_doc), or "FILE" when the key (or its
 * place) is not known. */
static const char *push_where(lua_State *L, int w, const char *key)
{
    w = lua_absindex(L, w);
    lua_getfield(L, w, "file");
    const char *file = lua_tostring(L, -1);
    lua_getglobal(L, "require");
    lua_pushliteral(L, "fluence.yaml");
    lua_call(L, 1, 1);
    lua_getfield(L, -1, "marks");
    lua_getfield(L, w, "v");
    lua_call(L, 1, 1);                          /* marks of the entry's mapping */
    lua_Integer line = 0, col = 0;
    if (lua_istable(L, -1)) {                       /* the key's mark, else the mapping's */
        if (lua_getfield(L, -1, "keys") == LUA_TTABLE) {
            if (lua_getfield(L, -1, key) == LUA_TTABLE) lua_replace(L, -3);
            else lua_pop(L, 1);
        }
        lua_pop(L, 1);
        lua_getfield(L, -1, "line");
        lua_getfield(L, -2, "col");
        line = lua_tointeger(L, -2);
        col = lua_tointeger(L, -1);
        lua_pop(L, 2);
    }
    lua_pop(L, 2);
    const char *r = line > 0 ? lua_pushfstring(L, "%s:%I:%I", file ? file : "kubeconfig", line, col)
                             : lua_pushstring(L, file ? file : "kubeconfig");
    lua_remove(L, -2);
    return r;
}

/* Reads a secret file (a token): the buffer, trimmed, is the caller's to
 * sfree.  When it cannot be read: "WHAT PATH: reason", an INPUT error when
 * input (a file the kubeconfig names), else a plain one. */
static char *read_secret(lua_State *L, const char *path, const char *what, int input)
{
    char *s = read_all(L, path, NULL);
    if (!s) {
        lua_pushfstring(L, "%s ", what);
        lua_insert(L, -2);
        lua_concat(L, 2);
        if (input) input_error(L);
        lua_error(L);
        return NULL;
    }
    size_t n = strlen(s);
    while (n && (s[n - 1] == '\n' || s[n - 1] == '\r' || s[n - 1] == ' ' || s[n - 1] == '\t')) s[--n] = 0;
    size_t lead = strspn(s, " \t\r\n");
    if (lead) memmove(s, s + lead, strlen(s + lead) + 1);
    return s;
}

/* Decodes standard base64, ignoring whitespace.  NULL on bad input. */
static char *b64decode(const char *in)
{
    static const char *alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    size_t n = strlen(in);
    char *out = malloc(n / 4 * 3 + 4);
    if (!out) return NULL;
    size_t o = 0;
    unsigned acc = 0;
    int bits = 0, pad = 0;
    for (const char *p = in; *p; p++) {
        if (*p == ' ' || *p == '\n' || *p == '\r' || *p == '\t') continue;
        if (*p == '=') { pad++; continue; }
        const char *q = strchr(alphabet, *p);
        if (!q || pad) { explicit_bzero(out, o); free(out); return NULL; }
        acc = (acc << 6) | (unsigned)(q - alphabet);
        bits += 6;
        if (bits >= 8) { bits -= 8; out[o++] = (char)((acc >> bits) & 0xff); }
    }
    out[o] = 0;
    return out;
}

/* ---- reading the decoded kubeconfig (Lua tables) ---- */

/* [-0, +0]  The string (or number, as text) at t[key], else NULL.  The
 * pointer stays valid while t is on the stack. */
static const char *field_str(lua_State *L, int t, const char *key)
{
    t = lua_absindex(L, t);
    if (!lua_istable(L, t)) return NULL;
    int ty = lua_getfield(L, t, key);
    if (ty == LUA_TNUMBER) {
        /* store the text form in the table so the pointer stays referenced */
        lua_tostring(L, -1);
        lua_setfield(L, t, key);
        ty = lua_getfield(L, t, key);
    }
    const char *s = ty == LUA_TSTRING ? lua_tostring(L, -1) : NULL;
    lua_pop(L, 1);
    return s && *s ? s : NULL;
}

static int field_bool(lua_State *L, int t, const char *key)
{
    if (!lua_istable(L, t)) return 0;
    lua_getfield(L, t, key);
    int v = lua_isboolean(L, -1) ? lua_toboolean(L, -1)
          : (lua_type(L, -1) == LUA_TSTRING && strcmp(lua_tostring(L, -1), "true") == 0);
    lua_pop(L, 1);
    return v;
}

/* [-0, +1]  dir/path for a relative path, path otherwise. */
static const char *push_resolved(lua_State *L, const char *dir, const char *path)
{
    if (path[0] == '/' || !dir || !*dir) return lua_pushstring(L, path);
    return lua_pushfstring(L, "%s/%s", dir, path);
}

static void push_dirname(lua_State *L, const char *path)
{
    const char *slash = strrchr(path, '/');
    if (!slash) lua_pushliteral(L, ".");
    else if (slash == path) lua_pushliteral(L, "/");
    else lua_pushlstring(L, path, (size_t)(slash - path));
}

/* Merges one decoded kubeconfig (top of stack) into the merged table at m:
 * m.clusters/users/contexts[name] = {v = <entry>, dir = <file's dir>, file = path},
 * m.current = first non-empty current-context.  First setter wins. */
static void merge_doc(lua_State *L, int m, const char *path)
{
    int doc = lua_gettop(L);
    if (!lua_istable(L, doc)) return;   /* empty file */
    lua_getfield(L, m, "current");
    int have = !lua_isnil(L, -1);
    lua_pop(L, 1);
    const char *cur = field_str(L, doc, "current-context");
    if (!have && cur) { lua_pushstring(L, cur); lua_setfield(L, m, "current"); }
    static const char *lists[][2] = { {"clusters", "cluster"}, {"users", "user"}, {"contexts", "context"} };
    for (int k = 0; k < 3; k++) {
        lua_getfield(L, m, lists[k][0]);                 /* merged map */
        if (lua_getfield(L, doc, lists[k][0]) == LUA_TTABLE) {
            for (lua_Integer i = 1; lua_rawgeti(L, -1, i) == LUA_TTABLE; i++) {
                const char *name = field_str(L, -1, "name");
                if (name && lua_getfield(L, -3, name) == LUA_TNIL) {
                    lua_pop(L, 1);
                    lua_createtable(L, 0, 2);
                    lua_getfield(L, -2, lists[k][1]);
                    lua_setfield(L, -2, "v");
                    push_dirname(L, path);
                    lua_setfield(L, -2, "dir");
                    lua_pushstring(L, path);
                    lua_setfield(L, -2, "file");
                    lua_setfield(L, -4, name);
                } else if (name) lua_pop(L, 1);
                lua_pop(L, 1);
            }
            lua_pop(L, 1);
        }
        lua_pop(L, 2);
    }
}

/* Decodes the file at path with fluence.yaml (located errors, without the
 * source excerpt) and merges it. */
static void load_file(lua_State *L, int m, const char *path, int must_exist, int *nfiles)
{
    size_t len;
    char *text = read_all(L, path, &len);
    if (!text) {
        if (!must_exist && errno == ENOENT) { lua_pop(L, 1); return; }
        lua_pushliteral(L, " (a kubeconfig)");
        lua_concat(L, 2);
        input_error(L);
        return;
    }
    lua_getglobal(L, "require");
    lua_pushliteral(L, "fluence.yaml");
    lua_call(L, 1, 1);
    lua_getfield(L, -1, "decode");
    lua_remove(L, -2);
    lua_pushlstring(L, text, len);
    explicit_bzero(text, len);
    free(text);
    lua_pushstring(L, path);
    lua_call(L, 2, 2);
    if (lua_isnil(L, -2)) {
        /* located, "path:LINE:COL: message", without the excerpt of the
         * source line that follows it: the line may hold a token */
        const char *msg = lua_tostring(L, -1);
        lua_pushlstring(L, msg, strcspn(msg, "\n"));
        input_error(L);
    }
    lua_pop(L, 1);
    if ((!lua_istable(L, -1) && !lua_islightuserdata(L, -1) && !lua_isnil(L, -1)) ||
        (lua_istable(L, -1) && lua_rawlen(L, -1) > 0)) {            /* a list */
        lua_pushfstring(L, "%s: not a kubeconfig (expected a mapping)", path);
        input_error(L);
    }
    merge_doc(L, m, path);
    lua_pop(L, 1);
    lua_getfield(L, m, "files");
    lua_pushstring(L, path);
    lua_rawseti(L, -2, ++*nfiles);
    lua_pop(L, 1);
}

/* ---- exec credential plugins ---- */

struct strvec { char **v; size_t n, cap; };

static int sv_push(struct strvec *s, const char *str)
{
    if (s->n + 2 > s->cap) {
        size_t c = s->cap ? s->cap * 2 : 16;
        char **p = realloc(s->v, c * sizeof *p);
        if (!p) return 0;
        s->v = p;
        s->cap = c;
    }
    if (str && !(s->v[s->n] = strdup(str))) return 0;
    if (str) s->n++;
    s->v[s->n] = NULL;
    return 1;
}

static void sv_free(struct strvec *s)
{
    for (size_t i = 0; i < s->n; i++) sfree(s->v[i]);
    free(s->v);
    memset(s, 0, sizeof *s);
}

struct exec_run {            /* everything the child needs, in C memory */
    struct strvec argv, envp;
    double timeout_ms;
    char *out;
    size_t out_len;
    int status, timed_out, too_much, spawn_err;
};

static void exec_free(struct exec_run *x)
{
    sv_free(&x->argv);
    sv_free(&x->envp);
    if (x->out) { explicit_bzero(x->out, x->out_len); free(x->out); }
    memset(x, 0, sizeof *x);
}

static int exec_gc(lua_State *L)
{
    exec_free(lua_touserdata(L, 1));
    return 0;
}

static double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1000.0 + ts.tv_nsec / 1e6;
}

/* Has pid exited?  Looked at without reaping it: until it is reaped its pid
 * names its process group, which then cannot be reused, so killing that
 * group stays safe. */
static int exited(pid_t pid)
{
    siginfo_t si;
    si.si_pid = 0;
    while (waitid(P_PID, (id_t)pid, &si, WEXITED | WNOHANG | WNOWAIT) != 0)
        if (errno != EINTR) return 1;                    /* not ours to wait for any more */
    return si.si_pid == pid;
}

static volatile sig_atomic_t exec_signal;

/* Waits for pid to exit until deadline (now_ms() clock), without reaping it:
 * 1 once it has exited, 0 at the deadline or when a signal came to end
 * fluence (exec_signal).  A plugin may close its stdout and go on running (a
 * daemon it forked, a bug): its exit is waited for with the same limit as
 * its output, never without one. */
static int wait_until(pid_t pid, double deadline)
{
    long step_us = 1000;
    for (;;) {
        if (exited(pid)) return 1;
        if (exec_signal) return 0;
        double left = deadline - now_ms();
        if (left <= 0) return 0;
        if (step_us > left * 1000) step_us = (long)(left * 1000) + 1;
        struct timespec ts = { 0, step_us * 1000 };
        nanosleep(&ts, NULL);
        if (step_us < 50000) step_us *= 2;
    }
}

/* The signals that end fluence (a ^C, kill, a closed terminal) while a
 * plugin runs: caught for that time, so that its process group — which a
 * ^C at the terminal no longer reaches — is killed first, then raised again. */
static const int EXIT_SIGNALS[] = { SIGINT, SIGTERM, SIGHUP };
#define N_EXIT_SIGNALS (sizeof EXIT_SIGNALS / sizeof EXIT_SIGNALS[0])

static void on_exit_signal(int sig)
{
    exec_signal = sig;
}

/* Runs argv with envp, stdin /dev/null, stdout to a pipe, stderr inherited,
 * in a process group of its own, for at most x->timeout_ms in all (its
 * output and its exit).  The group is killed (SIGKILL) before the plugin is
 * reaped, whichever way this ends: what it started in the background ends
 * with it.  Its output is what it wrote before it exited: a child of it
 * holding the pipe open delays nothing.  No Lua calls: fills x->out / status
 * / timed_out / too_much / spawn_err; raises a signal that came meanwhile. */
static void exec_spawn(struct exec_run *x)
{
    int fds[2];
    if (pipe2(fds, O_CLOEXEC) != 0) { x->spawn_err = errno; return; }
    struct sigaction old[N_EXIT_SIGNALS], sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_exit_signal;
    sigemptyset(&sa.sa_mask);
    exec_signal = 0;
    for (size_t i = 0; i < N_EXIT_SIGNALS; i++) {
        sigaction(EXIT_SIGNALS[i], NULL, &old[i]);
        if (old[i].sa_handler != SIG_IGN) sigaction(EXIT_SIGNALS[i], &sa, NULL);
    }
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
    posix_spawn_file_actions_adddup2(&fa, fds[1], 1);
    /* its own group; SIGTTOU blocked, so that its stderr to our terminal is
     * not stopped as a background group's (stty tostop); the signals caught
     * above back to their default in it */
    posix_spawnattr_t at;
    sigset_t mask, def;
    posix_spawnattr_init(&at);
    posix_spawnattr_setpgroup(&at, 0);
    sigprocmask(SIG_BLOCK, NULL, &mask);
    sigaddset(&mask, SIGTTOU);
    posix_spawnattr_setsigmask(&at, &mask);
    sigemptyset(&def);
    for (size_t i = 0; i < N_EXIT_SIGNALS; i++)
        if (old[i].sa_handler != SIG_IGN) sigaddset(&def, EXIT_SIGNALS[i]);
    posix_spawnattr_setsigdefault(&at, &def);
    posix_spawnattr_setflags(&at, POSIX_SPAWN_SETPGROUP | POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);
    pid_t pid;
    const char *cmd = x->argv.v[0];
    int rc = strchr(cmd, '/') ? posix_spawn(&pid, cmd, &fa, &at, x->argv.v, x->envp.v)
                              : posix_spawnp(&pid, cmd, &fa, &at, x->argv.v, x->envp.v);
    posix_spawn_file_actions_destroy(&fa);
    posix_spawnattr_destroy(&at);
    close(fds[1]);
    if (rc != 0) { close(fds[0]); x->spawn_err = rc; goto restore; }
    size_t cap = 0;
    double deadline = now_ms() + x->timeout_ms;
    int gone = 0;                /* it has exited: what is in the pipe is all */
    int step_ms = 1;             /* how soon its exit is looked for again */
    for (;;) {
        if (exec_signal) break;
        double left = deadline - now_ms();
        if (left <= 0) { x->timed_out = 1; break; }
        if (!gone) gone = exited(pid);
        struct pollfd p = { fds[0], POLLIN, 0 };
        int pr = poll(&p, 1, gone ? 0 : left < step_ms ? (int)left + 1 : step_ms);
        if (pr < 0 && errno == EINTR) continue;
        if (pr < 0) break;
        if (pr == 0) {
            if (gone) break;
            if (step_ms < 50) step_ms *= 2;
            continue;
        }
        if (x->out_len + 4097 > cap) {
            if (cap >= EXEC_MAX_OUT) { x->too_much = 1; break; }
            size_t c = cap ? cap * 2 : 8192;
            char *q = malloc(c);
            if (!q) break;
            if (x->out) { memcpy(q, x->out, x->out_len); explicit_bzero(x->out, x->out_len); free(x->out); }
            x->out = q;
            cap = c;
        }
        ssize_t n = read(fds[0], x->out + x->out_len, cap - x->out_len - 1);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) break;
        x->out_len += (size_t)n;
    }
    if (x->out) x->out[x->out_len] = 0;
    close(fds[0]);
    if (!x->timed_out && !x->too_much && !exec_signal && !wait_until(pid, deadline) && !exec_signal)
        x->timed_out = 1;
    /* the plugin is not reaped yet: its pid still names its group */
    killpg(pid, SIGKILL);
    int st = 0;
    while (waitpid(pid, &st, 0) < 0 && errno == EINTR) {}   /* SIGKILL: it ends now */
    x->status = st;
restore:
    for (size_t i = 0; i < N_EXIT_SIGNALS; i++)
        if (old[i].sa_handler != SIG_IGN) sigaction(EXIT_SIGNALS[i], &old[i], NULL);
    if (exec_signal) raise(exec_signal);
}

/* Copies the ExecCredential JSON's credentials into the config. */
static const char *exec_parse(struct config *c, const char *out, const char *api)
{
    json_error_t jerr;
    json_t *root = json_loads(out, 0, &jerr);
    if (!root) return "its output is not JSON";
    const char *err = NULL;
    json_t *status = json_object_get(root, "status");
    const char *kind = json_string_value(json_object_get(root, "kind"));
    const char *av = json_string_value(json_object_get(root, "apiVersion"));
    if (!kind || strcmp(kind, "ExecCredential") != 0) err = "its output is not an ExecCredential";
    else if (!av || strcmp(av, api) != 0) err = "its output has a different apiVersion than the kubeconfig asks for";
    else if (!json_is_object(status)) err = "its output has no status";
    else {
        const char *tok = json_string_value(json_object_get(status, "token"));
        const char *cd = json_string_value(json_object_get(status, "clientCertificateData"));
        const char *kd = json_string_value(json_object_get(status, "clientKeyData"));
        if (tok && *tok) {
            sfree(c->token);
            c->token = strdup(tok);
        } else if (cd && kd && *cd && *kd) {
            sfree(c->cert_pem); sfree(c->key_pem);
            c->cert_pem = strdup(cd);
            c->key_pem = strdup(kd);
        } else err = "its output has neither status.token nor status.clientCertificateData and clientKeyData";
    }
    /* jansson keeps its own copies: scrub the strings before freeing them */
    if (json_is_object(status)) {
        static const char *keys[] = {"token", "clientCertificateData", "clientKeyData"};
        for (int i = 0; i < 3; i++) {
            json_t *v = json_object_get(status, keys[i]);
            if (json_is_string(v)) {
                char *s = (char *)json_string_value(v);
                explicit_bzero(s, strlen(s));
            }
        }
    }
    json_decref(root);
    return err;
}

/* [-0, +0, e]  Runs the exec plugin described by the table at e. */
static void run_exec(lua_State *L, struct config *c, int e, const char *dir, int provide, double timeout)
{
#ifdef FUZZING_BUILD_MODE_UNSAFE_FOR_PRODUCTION
    /* `make fuzz` feeds arbitrary kubeconfigs: never run their commands */
    (void)dir; (void)provide;
    luaL_error(L, "user %s: exec plugins are disabled in fuzzing builds", quoted(L, c->user));
#endif
    e = lua_absindex(L, e);
    const char *cmd = field_str(L, e, "command");
    const char *api = field_str(L, e, "apiVersion");
    const char *hint = field_str(L, e, "installHint");
    const char *mode = field_str(L, e, "interactiveMode");
    if (!cmd) luaL_error(L, "user %s: exec plugin without a command", quoted(L, c->user));
    if (!api) luaL_error(L, "user %s: exec plugin without an apiVersion", quoted(L, c->user));
    if (strcmp(api, "client.authentication.k8s.io/v1") != 0 &&
        strcmp(api, "client.authentication.k8s.io/v1beta1") != 0)
        luaL_error(L, "user %s: exec plugin apiVersion %s is not supported (use client.authentication.k8s.io/v1 or v1beta1)",
                   quoted(L, c->user), shown(L, api));
    if (mode && strcmp(mode, "Always") == 0)
        luaL_error(L, "user %s: exec plugin %s needs an interactive terminal (interactiveMode: Always), which fluence does not provide",
                   quoted(L, c->user), shown(L, cmd));
    if (strchr(cmd, '/')) cmd = push_resolved(L, dir, cmd); else lua_pushstring(L, cmd);
    int cmdi = lua_gettop(L);

    struct exec_run *x = lua_newuserdatauv(L, sizeof *x, 0);
    memset(x, 0, sizeof *x);
    lua_createtable(L, 0, 1);
    lua_pushcfunction(L, exec_gc);
    lua_setfield(L, -2, "__gc");
    lua_setmetatable(L, -2);
    int ok = sv_push(&x->argv, cmd);
    if (lua_getfield(L, e, "args") == LUA_TTABLE) {
        for (lua_Integer i = 1; lua_rawgeti(L, -1, i) != LUA_TNIL; i++) {
            const char *a = lua_tostring(L, -1);
            if (a && ok) ok = sv_push(&x->argv, a);
            lua_pop(L, 1);
        }
        lua_pop(L, 1);
    }
    lua_pop(L, 1);
    /* environment: the plugin's env entries, the request, then ours */
    if (lua_getfield(L, e, "env") == LUA_TTABLE) {
        for (lua_Integer i = 1; lua_rawgeti(L, -1, i) == LUA_TTABLE; i++) {
            const char *n = field_str(L, -1, "name"), *v = field_str(L, -1, "value");
            if (n) {
                const char *kv = lua_pushfstring(L, "%s=%s", n, v ? v : "");
                if (ok) ok = sv_push(&x->envp, kv);
                lua_pop(L, 1);
            }
            lua_pop(L, 1);
        }
        lua_pop(L, 1);
    }
    lua_pop(L, 1);
    json_t *info = json_pack("{s:s, s:s, s:{s:b}}", "apiVersion", api, "kind", "ExecCredential",
                             "spec", "interactive", 0);
    if (info && provide) {
        json_t *cl = json_pack("{s:s, s:b}", "server", c->server, "insecure-skip-tls-verify", c->insecure);
        if (cl && c->tls_server_name) json_object_set_new(cl, "tls-server-name", json_string(c->tls_server_name));
        if (cl && c->ca_pem) {
            /* certificate-authority-data is base64 of the PEM */
            static const char *al = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
            size_t n = strlen(c->ca_pem), o = 0;
            char *b = malloc(n / 3 * 4 + 5);
            if (b) {
                const unsigned char *s = (const unsigned char *)c->ca_pem;
                for (size_t i = 0; i < n; i += 3) {
                    unsigned v = (unsigned)s[i] << 16 | (i + 1 < n ? (unsigned)s[i + 1] << 8 : 0) | (i + 2 < n ? s[i + 2] : 0);
                    b[o++] = al[v >> 18 & 63];
                    b[o++] = al[v >> 12 & 63];
                    b[o++] = i + 1 < n ? al[v >> 6 & 63] : '=';
                    b[o++] = i + 2 < n ? al[v & 63] : '=';
                }
                b[o] = 0;
                json_object_set_new(cl, "certificate-authority-data", json_string(b));
                free(b);
            }
        }
        if (cl) json_object_set_new(json_object_get(info, "spec"), "cluster", cl);
    }
    char *infos = info ? json_dumps(info, JSON_COMPACT) : NULL;
    json_decref(info);
    if (infos) {
        size_t need = strlen(infos) + 32;
        char *kv = malloc(need);
        if (kv) { snprintf(kv, need, "KUBERNETES_EXEC_INFO=%s", infos); ok = ok && sv_push(&x->envp, kv); free(kv); }
        else ok = 0;
        free(infos);
    } else ok = 0;
    for (char **p = environ; ok && *p; p++)
        if (strncmp(*p, "KUBERNETES_EXEC_INFO=", 21) != 0) ok = sv_push(&x->envp, *p);
    if (!ok) luaL_error(L, "not enough memory");

    x->timeout_ms = timeout * 1000;
    exec_spawn(x);
    const char *why = NULL;
    char buf[96];
    if (x->spawn_err) { snprintf(buf, sizeof buf, "cannot run it: %s", strerror(x->spawn_err)); why = buf; }
    else if (x->timed_out) {
        snprintf(buf, sizeof buf, "it did not finish within %.14g s, and was stopped (SIGKILL)", timeout);
        why = buf;
    } else if (x->too_much) {
        snprintf(buf, sizeof buf, "it printed more than %d KiB, and was stopped (SIGKILL)", EXEC_MAX_OUT / 1024);
        why = buf;
    }
    else if (WIFSIGNALED(x->status)) { snprintf(buf, sizeof buf, "it was killed by signal %d", WTERMSIG(x->status)); why = buf; }
    else if (WEXITSTATUS(x->status) == 127) why = "command not found";
    else if (WEXITSTATUS(x->status) != 0) { snprintf(buf, sizeof buf, "it exited with status %d", WEXITSTATUS(x->status)); why = buf; }
    else if (!x->out) why = "it printed nothing";
    else why = exec_parse(c, x->out, api);
    if (why) {
        const char *user = quoted(L, c->user), *shown_cmd = shown(L, lua_tostring(L, cmdi));
        /* the install hint is the kubeconfig's text of several lines: its lines stay */
        if (hint)
            luaL_error(L, "user %s: exec credential plugin %s failed: %s\n%s", user, shown_cmd, why,
                       fluence_push_escaped(L, hint, strlen(hint), FLUENCE_ESC_KEEP_LINES));
        luaL_error(L, "user %s: exec credential plugin %s failed: %s", user, shown_cmd, why);
    }
    exec_free(x);
    lua_pop(L, 2);
}

/* ---- resolution ---- */

static void set_str(lua_State *L, char **dst, const char *s)
{
    free(*dst);
    *dst = xstrdup(L, s);
}

/* Material from "X-data" (base64) or "X" (a file relative to the entry's
 * directory), or NULL: of the entry t whose wrapper is at w (merge_doc);
 * entry names it ("cluster \"k\""). */
static char *material(lua_State *L, int w, int t, const char *key, const char *entry)
{
    char dkey[64];
    snprintf(dkey, sizeof dkey, "%s-data", key);
    const char *d = field_str(L, t, dkey);
    if (d) {
        char *v = b64decode(d);
        if (!v) {
            push_where(L, w, dkey);
            lua_pushfstring(L, ": %s: %s is not valid base64", entry, dkey);
            lua_concat(L, 2);
            input_error(L);
        }
        return v;
    }
    const char *f = field_str(L, t, key);
    if (!f) return NULL;
    lua_getfield(L, w, "dir");
    const char *path = push_resolved(L, lua_tostring(L, -1), f);
    char *v = read_all(L, path, NULL);
    if (!v) {
        push_where(L, w, key);
        lua_pushfstring(L, ": %s: %s ", entry, key);
        lua_rotate(L, -3, 2);                       /* where, ": entry: key ", "path: why" */
        lua_concat(L, 3);
        input_error(L);
    }
    lua_pop(L, 2);
    return v;
}

static void load_in_cluster(lua_State *L, struct config *c, const char *ns)
{
    const char *host = getenv("KUBERNETES_SERVICE_HOST"), *port = getenv("KUBERNETES_SERVICE_PORT");
    const char *dir = getenv("FLUENCE_SERVICEACCOUNT_DIR");
    if (!dir || !*dir) dir = DEFAULT_SA_DIR;
    c->in_cluster = 1;
    set_str(L, &c->context, "in-cluster");
    set_str(L, &c->cluster, "in-cluster");
    set_str(L, &c->user, "serviceaccount");
    set_str(L, &c->auth, "serviceaccount");
    lua_pushfstring(L, strchr(host, ':') ? "https://[%s]:%s" : "https://%s:%s", host, port && *port ? port : "443");
    set_str(L, &c->server, lua_tostring(L, -1));
    lua_pushfstring(L, "%s/token", dir);
    c->token = read_secret(L, lua_tostring(L, -1), "service account token", 0);
    lua_pushfstring(L, "%s/ca.crt", dir);
    if (!(c->ca_pem = read_all(L, lua_tostring(L, -1), NULL))) {
        lua_pushliteral(L, "service account CA ");
        lua_insert(L, -2);
        lua_concat(L, 2);
        lua_error(L);
    }
    if (ns) set_str(L, &c->namespace, ns);
    else {
        lua_pushfstring(L, "%s/namespace", dir);
        char *n = read_all(L, lua_tostring(L, -1), NULL);
        if (!n) lua_pop(L, 1);                      /* none: "default" */
        else {
            n[strcspn(n, " \r\n\t")] = 0;
            if (*n) { free(c->namespace); c->namespace = n; } else free(n);
        }
        lua_pop(L, 1);
        if (!c->namespace) set_str(L, &c->namespace, "default");
    }
    lua_pop(L, 3);
}

/* [-0, +0, v]  --context NAME that no kubeconfig file defines: a mistake
 * on the command line, not a cluster that cannot be read.  Raises
 * {unknown_context = NAME, contexts = {names}, files = {paths}}
 * (kubeclient.lua turns it into a usage error with "did you mean"). */
static void unknown_context(lua_State *L, const char *name, int m)
{
    lua_createtable(L, 0, 3);
    lua_pushstring(L, name);
    lua_setfield(L, -2, "unknown_context");
    lua_newtable(L);
    lua_getfield(L, m, "contexts");
    lua_Integer n = 0;
    for (lua_pushnil(L); lua_next(L, -2); lua_pop(L, 1)) {
        if (lua_type(L, -2) != LUA_TSTRING) continue;
        lua_pushvalue(L, -2);
        lua_rawseti(L, -5, ++n);
    }
    lua_pop(L, 1);
    lua_setfield(L, -2, "contexts");
    lua_getfield(L, m, "files");
    lua_setfield(L, -2, "files");
    lua_error(L);
}

/* load{kubeconfig=, context=, namespace=} -> config;
 * load{kubeconfig=, current_only=true} -> the current context's name | nil */
static int kube_load(lua_State *L)
{
    lazylib_curl(L);        /* URL parsing and requests */
    luaL_checktype(L, 1, LUA_TTABLE);
    lua_settop(L, 1);
    const char *explicit_file = field_str(L, 1, "kubeconfig");
    const char *want_ctx = field_str(L, 1, "context");
    const char *want_ns = field_str(L, 1, "namespace");
    lua_getfield(L, 1, "current_only");
    int current_only = lua_toboolean(L, -1);
    lua_pop(L, 1);
    lua_getfield(L, 1, "exec_timeout");
    double exec_timeout = luaL_optnumber(L, -1, 0);
    lua_pop(L, 1);
    if (!(exec_timeout >= 0 && exec_timeout <= 1e9))
        luaL_error(L, "exec_timeout must be a number of seconds from 0 to 1e9");
    if (exec_timeout == 0) exec_timeout = EXEC_TIMEOUT;

    struct config *c = lua_newuserdatauv(L, sizeof *c, 1);          /* 2 */
    memset(c, 0, sizeof *c);
    luaL_setmetatable(L, CONFIG_MT);
    lua_createtable(L, 0, 5);                                        /* 3: merged */
    lua_newtable(L); lua_setfield(L, 3, "clusters");
    lua_newtable(L); lua_setfield(L, 3, "users");
    lua_newtable(L); lua_setfield(L, 3, "contexts");
    lua_newtable(L); lua_setfield(L, 3, "files");
    int nfiles = 0;
    const char *env = getenv("KUBECONFIG");
    if (explicit_file) load_file(L, 3, explicit_file, 1, &nfiles);
    else if (env && *env) {
        const char *p = env;
        while (*p) {
            const char *e = strchr(p, ':');
            size_t n = e ? (size_t)(e - p) : strlen(p);
            if (n) {
                lua_pushlstring(L, p, n);
                load_file(L, 3, lua_tostring(L, -1), 0, &nfiles);
                lua_pop(L, 1);
            }
            p += n + (e ? 1 : 0);
        }
    } else {
        const char *home = getenv("HOME");
        if (home && *home) {
            lua_pushfstring(L, "%s/.kube/config", home);
            load_file(L, 3, lua_tostring(L, -1), 0, &nfiles);
            lua_pop(L, 1);
        }
    }
    lua_getfield(L, 3, "current");
    const char *current = lua_tostring(L, -1);                       /* 4 */
    if (current_only) return 1;     /* its name (or nil): no credentials read */
    lua_getfield(L, 3, "contexts");                                  /* 5 */
    lua_pushnil(L);
    int empty = lua_next(L, 5) == 0;
    if (!empty) lua_pop(L, 2);
    const char *sa_host = getenv("KUBERNETES_SERVICE_HOST");
    if (!explicit_file && empty && !want_ctx && sa_host && *sa_host) {
        load_in_cluster(L, c, want_ns);
        lua_settop(L, 2);
        return 1;
    }
    if (nfiles == 0)
        luaL_error(L, "no kubeconfig: use --kubeconfig, set KUBECONFIG, or create ~/.kube/config");
    const char *ctxname = want_ctx ? want_ctx : current;
    if (!ctxname) luaL_error(L, "kubeconfig has no current-context: use --context");
    set_str(L, &c->context, ctxname);
    if (lua_getfield(L, 5, ctxname) != LUA_TTABLE) {                 /* 6 */
        if (want_ctx) unknown_context(L, want_ctx, 3);
        luaL_error(L, "context %s not found in the kubeconfig", quoted(L, ctxname));
    }
    lua_getfield(L, 6, "v");                                         /* 7: context */
    const char *clname = field_str(L, 7, "cluster");
    const char *uname = field_str(L, 7, "user");
    const char *ctxns = field_str(L, 7, "namespace");
    set_str(L, &c->namespace, want_ns ? want_ns : ctxns ? ctxns : "default");
    if (!clname) luaL_error(L, "context %s names no cluster", quoted(L, ctxname));
    set_str(L, &c->cluster, clname);
    lua_getfield(L, 3, "clusters");                                  /* 8 */
    if (lua_getfield(L, 8, clname) != LUA_TTABLE)                    /* 9 */
        luaL_error(L, "cluster %s (context %s) not found in the kubeconfig", quoted(L, clname), quoted(L, ctxname));
    lua_getfield(L, 9, "v");                                         /* 10 */
    lua_getfield(L, 9, "dir");                                       /* 11 */
    const char *server = field_str(L, 10, "server");
    if (!server) luaL_error(L, "cluster %s has no server", quoted(L, clname));
    set_str(L, &c->server, server);
    c->insecure = field_bool(L, 10, "insecure-skip-tls-verify");
    set_str(L, &c->tls_server_name, field_str(L, 10, "tls-server-name"));
    lua_pushfstring(L, "cluster %s", quoted(L, clname));
    lua_remove(L, -2);                                               /* 12 */
    c->ca_pem = material(L, 9, 10, "certificate-authority", lua_tostring(L, 12));
    lua_settop(L, 11);

    set_str(L, &c->auth, "none");
    if (uname) {
        set_str(L, &c->user, uname);
        lua_getfield(L, 3, "users");                                 /* 12 */
        if (lua_getfield(L, 12, uname) != LUA_TTABLE)                /* 13 */
            luaL_error(L, "user %s (context %s) not found in the kubeconfig", quoted(L, uname), quoted(L, ctxname));
        lua_getfield(L, 13, "v");                                    /* 14 */
        lua_getfield(L, 13, "dir");                                  /* 15 */
        const char *udir = lua_tostring(L, 15);
        const char *tok = field_str(L, 14, "token");
        const char *tokfile = field_str(L, 14, "tokenFile");
        const char *user = field_str(L, 14, "username");
        lua_getfield(L, 14, "auth-provider");
        if (lua_istable(L, -1)) {
            const char *n = field_str(L, -1, "name");
            luaL_error(L, "user %s: auth-provider %s is not supported; use an exec credential plugin",
                       quoted(L, uname), quoted(L, n ? n : "?"));
        }
        lua_pop(L, 1);
        lua_pushfstring(L, "user %s", quoted(L, uname));
        lua_remove(L, -2);                                           /* 16 */
        c->cert_pem = material(L, 13, 14, "client-certificate", lua_tostring(L, 16));
        c->key_pem = material(L, 13, 14, "client-key", lua_tostring(L, 16));
        if (!c->cert_pem != !c->key_pem)
            luaL_error(L, "user %s: a client certificate needs both client-certificate and client-key", quoted(L, uname));
        if (c->cert_pem) set_str(L, &c->auth, "client-certificate");
        if (tok) { c->token = xstrdup(L, tok); set_str(L, &c->auth, "token"); }
        else if (tokfile) {
            push_resolved(L, udir, tokfile);
            push_where(L, 13, "tokenFile");
            lua_pushfstring(L, ": user %s: tokenFile", quoted(L, uname));
            lua_remove(L, -2);
            lua_concat(L, 2);
            c->token = read_secret(L, lua_tostring(L, -2), lua_tostring(L, -1), 1);
            lua_pop(L, 2);
            set_str(L, &c->auth, "token-file");
        } else if (user) {
            const char *pw = field_str(L, 14, "password");
            c->username = xstrdup(L, user);
            c->password = xstrdup(L, pw ? pw : "");
            set_str(L, &c->auth, "basic");
        }
        lua_getfield(L, 14, "exec");
        if (lua_istable(L, -1) && !c->token && !c->cert_pem) {
            set_str(L, &c->auth, "exec");
            run_exec(L, c, -1, udir, field_bool(L, -1, "provideClusterInfo"), exec_timeout);
        }
        lua_pop(L, 1);
    } else set_str(L, &c->user, "");
    lua_settop(L, 2);
    return 1;
}

static struct config *check_config(lua_State *L)
{
    return luaL_checkudata(L, 1, CONFIG_MT);
}

static void info_str(lua_State *L, const char *k, const char *v)
{
    if (v) { lua_pushstring(L, v); lua_setfield(L, -2, k); }
}

static int config_info(lua_State *L)
{
    struct config *c = check_config(L);
    lua_createtable(L, 0, 10);
    /* the server URL without userinfo or query: they could carry secrets */
    http_push_url_shown(L, c->server);
    lua_setfield(L, -2, "server");
    info_str(L, "namespace", c->namespace);
    info_str(L, "context", c->context);
    info_str(L, "cluster", c->cluster);
    info_str(L, "user", c->user);
    info_str(L, "auth", c->auth);
    info_str(L, "tls_server_name", c->tls_server_name);
    lua_pushboolean(L, c->insecure);
    lua_setfield(L, -2, "insecure");
    lua_pushboolean(L, c->in_cluster);
    lua_setfield(L, -2, "in_cluster");
    lua_pushboolean(L, c->ca_pem != NULL);
    lua_setfield(L, -2, "has_ca");
    return 1;
}

static int config_tostring(lua_State *L)
{
    struct config *c = check_config(L);
    lua_pushfstring(L, "kube config (cluster %s, context %s)", shown(L, c->cluster ? c->cluster : "?"),
                    shown(L, c->context ? c->context : "?"));
    return 1;
}

/* ---- requests ---- */

/* config:request{method=, path=, body=, content_type=, accept=, timeout=,
 *                connect_timeout=, max_body=} */
/* [-0, +3, e]  The transfer for request table `req` of config c, ready to
 * perform.  Pushes the transfer userdata, then the method and the URL shown
 * to users (no query string, never a credential).  Returns the transfer, or
 * NULL with nil and a message pushed (and a third value, nil, to keep the
 * count) when the server URL is invalid. */
static struct http_transfer *prepare(lua_State *L, struct config *c, int req)
{
    req = lua_absindex(L, req);
    int base = lua_gettop(L);
    lua_getfield(L, req, "path");
    const char *path = luaL_checkstring(L, -1);                      /* base+1 */
    lua_getfield(L, req, "method");
    const char *method = luaL_optstring(L, -1, "GET");               /* base+2 */
    lua_getfield(L, req, "body");
    size_t blen = 0;
    const char *body = lua_isnil(L, -1) ? NULL : luaL_checklstring(L, -1, &blen);   /* base+3 */
    lua_getfield(L, req, "content_type");
    const char *ctype = luaL_optstring(L, -1, NULL);                 /* base+4 */
    lua_getfield(L, req, "accept");
    const char *accept = luaL_optstring(L, -1, "application/json");  /* base+5 */
    lua_getfield(L, req, "timeout");
    double timeout = luaL_optnumber(L, -1, 30);
    lua_getfield(L, req, "connect_timeout");
    double ctimeout = luaL_optnumber(L, -1, 10);
    lua_getfield(L, req, "max_body");
    double max_body = luaL_optnumber(L, -1, 256.0 * 1024 * 1024);
    lua_settop(L, base + 5);

    /* URL: server without trailing slashes, then path.  With tls-server-name
     * the URL names that host (SNI and verification) and connect_to sends the
     * connection to the real one; Host still names the server. */
    CURLU *u = curl_url();
    char *host = NULL, *port = NULL;
    if (!u || curl_url_set(u, CURLUPART_URL, c->server, 0) != CURLUE_OK) {
        curl_url_cleanup(u);
        lua_settop(L, base);
        lua_pushnil(L);
        lua_pushfstring(L, "invalid server URL for cluster %s", quoted(L, c->cluster ? c->cluster : "?"));
        lua_remove(L, -2);
        lua_pushnil(L);
        return NULL;
    }
    curl_url_get(u, CURLUPART_HOST, &host, 0);
    curl_url_get(u, CURLUPART_PORT, &port, CURLU_DEFAULT_PORT);
    luaL_Buffer b;
    luaL_buffinit(L, &b);
    size_t sl = strlen(c->server);
    while (sl && c->server[sl - 1] == '/') sl--;
    if (c->tls_server_name) {
        char *scheme = NULL, *upath = NULL;
        curl_url_get(u, CURLUPART_SCHEME, &scheme, 0);
        curl_url_get(u, CURLUPART_PATH, &upath, 0);
        size_t pl = upath ? strlen(upath) : 0;
        while (pl && upath[pl - 1] == '/') pl--;
        lua_pushfstring(L, "%s://%s:%s", scheme ? scheme : "https", c->tls_server_name, port ? port : "443");
        luaL_addvalue(&b);
        if (pl) luaL_addlstring(&b, upath, pl);
        curl_free(scheme);
        curl_free(upath);
    } else luaL_addlstring(&b, c->server, sl);
    luaL_addstring(&b, path);
    luaL_pushresult(&b);                                             /* base+6: url */
    const char *url = lua_tostring(L, base + 6);
    const char *connect_to = NULL, *hosthdr = NULL;
    if (c->tls_server_name && host) {
        connect_to = lua_pushfstring(L, "%s:%s:%s:%s", c->tls_server_name, port ? port : "443", host, port ? port : "443");   /* 9 */
        hosthdr = lua_pushfstring(L, "Host: %s:%s", host, port ? port : "443");  /* 10 */
    }
    curl_free(host);
    curl_free(port);
    curl_url_cleanup(u);

    struct http_transfer *r = http_transfer_new(L, url, timeout, ctimeout, max_body);
    int ri = lua_gettop(L);
    CURL *e = r->easy;
    curl_easy_setopt(e, CURLOPT_CUSTOMREQUEST, method);
    if (body) {
        curl_easy_setopt(e, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)blen);
        curl_easy_setopt(e, CURLOPT_COPYPOSTFIELDS, body);
    }
    int ok = 1;
    char line[512];
    snprintf(line, sizeof line, "Accept: %s", accept);
    ok = ok && http_transfer_header(r, line);
    if (ctype) {
        snprintf(line, sizeof line, "Content-Type: %s", ctype);
        ok = ok && http_transfer_header(r, line);
    }
    ok = ok && http_transfer_header(r, "Expect:");
    if (hosthdr) ok = ok && http_transfer_header(r, hosthdr);
    if (c->token) {
        size_t n = strlen(c->token) + 32;
        char *h = malloc(n);
        if (h) {
            snprintf(h, n, "Authorization: Bearer %s", c->token);
            ok = ok && http_transfer_header(r, h);
            explicit_bzero(h, n);
            free(h);
        } else ok = 0;
    } else if (c->username) {
        curl_easy_setopt(e, CURLOPT_HTTPAUTH, (long)CURLAUTH_BASIC);
        curl_easy_setopt(e, CURLOPT_USERNAME, c->username);
        curl_easy_setopt(e, CURLOPT_PASSWORD, c->password ? c->password : "");
    }
    if (connect_to) {
        ok = ok && http_transfer_connect_to(r, connect_to);
        curl_easy_setopt(e, CURLOPT_CONNECT_TO, r->connect_to);
    }
    if (!ok) {
        luaL_error(L, "not enough memory");
        return NULL;
    }
    curl_easy_setopt(e, CURLOPT_HTTPHEADER, r->headers);
    if (c->ca_pem) {
        struct curl_blob blob = { c->ca_pem, strlen(c->ca_pem), CURL_BLOB_COPY };
        curl_easy_setopt(e, CURLOPT_CAINFO_BLOB, &blob);
    }
    if (c->cert_pem && c->key_pem) {
        struct curl_blob cb = { c->cert_pem, strlen(c->cert_pem), CURL_BLOB_COPY };
        struct curl_blob kb = { c->key_pem, strlen(c->key_pem), CURL_BLOB_COPY };
        curl_easy_setopt(e, CURLOPT_SSLCERT_BLOB, &cb);
        curl_easy_setopt(e, CURLOPT_SSLCERTTYPE, "PEM");
        curl_easy_setopt(e, CURLOPT_SSLKEY_BLOB, &kb);
        curl_easy_setopt(e, CURLOPT_SSLKEYTYPE, "PEM");
    }
    if (c->insecure) {
        curl_easy_setopt(e, CURLOPT_SSL_VERIFYPEER, 0L);
        curl_easy_setopt(e, CURLOPT_SSL_VERIFYHOST, 0L);
    }
    /* the URL without its query (never headers); with tls-server-name, the
     * real server */
    const char *shown = url;
    if (c->tls_server_name) shown = lua_pushfstring(L, "%s%s", c->server, path);
    lua_pushfstring(L, "%s %s", method, http_push_url_shown(L, shown));
    /* keep the transfer and what it shows; the strings its options copied
     * (curl copies every string option) may go */
    lua_pushvalue(L, ri);
    lua_replace(L, base + 1);
    lua_replace(L, base + 2);
    lua_settop(L, base + 2);
    lua_pushnil(L);
    return r;
}

static int config_request(lua_State *L)
{
    lazylib_curl(L);
    struct config *c = check_config(L);
    luaL_checktype(L, 2, LUA_TTABLE);
    lua_settop(L, 2);
    struct http_transfer *r = prepare(L, c, 2);                      /* 3, 4, 5 */
    if (!r) {                                                        /* nil, message */
        lua_pop(L, 1);
        return 2;
    }
    CURLcode rc = curl_easy_perform(r->easy);
    int n = http_transfer_result(L, r, rc, lua_tostring(L, 4));
    http_transfer_free(r);                       /* now, not at the next collection */
    return n;
}

/* What request i shows in messages (kept at index 3 by request_many). */
static void what_shown(lua_State *L, lua_Integer i, struct http_transfer *t, void *ud)
{
    (void)t;
    (void)ud;
    lua_rawgeti(L, 3, i);
}

/* kube.request_many{ {config, request}, ... }: every request on one multi
 * handle (each with its own cluster's credentials and TLS settings). */
static int kube_request_many(lua_State *L)
{
    lazylib_curl(L);
    luaL_checktype(L, 1, LUA_TTABLE);
    lua_settop(L, 1);
    lua_Integer n = (lua_Integer)luaL_len(L, 1);
    lua_createtable(L, (int)n, 0);                 /* 2: transfers */
    lua_createtable(L, (int)n, 0);                 /* 3: what each shows */
    lua_createtable(L, (int)n, 0);                 /* 4: results */
    for (lua_Integer i = 1; i <= n; i++) {
        lua_rawgeti(L, 1, i);
        int item = lua_gettop(L);
        luaL_argcheck(L, lua_istable(L, item), 1, "each item is {config, request}");
        lua_rawgeti(L, item, 1);
        struct config *c = luaL_checkudata(L, -1, CONFIG_MT);
        lua_rawgeti(L, item, 2);
        luaL_argcheck(L, lua_istable(L, -1), 1, "each item is {config, request}");
        struct http_transfer *r = prepare(L, c, -1);
        if (!r) {                                  /* nil, message, nil */
            lua_createtable(L, 0, 1);
            lua_pushvalue(L, -3);
            lua_setfield(L, -2, "error");
            lua_rawseti(L, 4, i);
        } else {
            lua_pushvalue(L, -3);
            lua_rawseti(L, 2, i);
            lua_pushvalue(L, -2);
            lua_rawseti(L, 3, i);
        }
        lua_settop(L, 4);
    }
    http_transfer_run_all(L, 2, 4, n, 0, what_shown, NULL);
    return 1;
}

/* sleep(seconds): waits for Retry-After without spinning */
static int kube_sleep(lua_State *L)
{
    double s = luaL_checknumber(L, 1);
    if (s > 3600) s = 3600;   /* and inf: casting it to time_t is undefined */
    if (s > 0) {
        struct timespec ts = { (time_t)s, (long)((s - (double)(time_t)s) * 1e9) };
        while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {}
    }
    return 0;
}

int luaopen_fluence_kube(lua_State *L)
{
    static const luaL_Reg methods[] = {
        {"info", config_info}, {"request", config_request}, {NULL, NULL}
    };
    luaL_newmetatable(L, CONFIG_MT);
    lua_pushcfunction(L, config_gc);
    lua_setfield(L, -2, "__gc");
    lua_pushcfunction(L, config_tostring);
    lua_setfield(L, -2, "__tostring");
    lua_pushboolean(L, 0);
    lua_setfield(L, -2, "__metatable");
    luaL_newlib(L, methods);
    lua_setfield(L, -2, "__index");
    lua_pop(L, 1);
    static const luaL_Reg funcs[] = { {"load", kube_load}, {"request_many", kube_request_many},
                                      {"sleep", kube_sleep}, {NULL, NULL} };
    luaL_newlib(L, funcs);
    return 1;
}
