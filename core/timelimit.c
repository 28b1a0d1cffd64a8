/* fluence.timelimit — the wall-clock limit of one plugin call.
 *
 *   timelimit.enter(seconds [, how])   a plugin call starts: its deadline is
 *       now + seconds (seconds <= 0: no limit).  how = { kind =, name =,
 *       file =, phase =, trusted = } names the call in the hard stop's
 *       message (below); it is copied, not formatted, so a call costs no
 *       allocation.  trusted (fluence's own plugins, compiled in) leaves the
 *       hard stop out: the watchdog thread is then never started by a run
 *       that uses only built-ins.  Calls nest; an inner call keeps the outer
 *       deadline.
 *   timelimit.leave()                  the call ended (normally or not)
 *   timelimit.expired() -> boolean     the running call is past its deadline
 *   timelimit.remaining() -> seconds | nil
 *   timelimit.pause() / resume()       around network waits made for a plugin
 *       (HTTP requests, the cluster's offerings, retry back-off): they have
 *       their own timeouts, so the clock stops and the deadline moves on by
 *       the time spent waiting.  Pauses nest.
 *
 * Why a deadline and not only the instruction budget: the count hook sees Lua
 * instructions, not time spent inside one C call (a backtracking pattern, a
 * shifting table.insert over a fake length).  Those C loops check the deadline
 * themselves (fluence_timelimit_check, core/guard_string.c, guard_table.c);
 * the sandbox's hook checks it between instructions.  What is left -- C work
 * that checks nothing, such as sorting huge strings -- is bounded by the hard
 * stop of the fluence program: a watchdog thread that ends the process with
 * the call's message one second after the deadline.  A thread rather than a
 * timer signal: no syscall per plugin call, and no signal interrupting the
 * network I/O or writes of a healthy run. */
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <lauxlib.h>
#include "exitcode.h"
#include "timelimit.h"

#define GRACE_NS 1000000000LL   /* hard stop: this long after the deadline */
#define IDLE_NS 1000000000LL    /* the watchdog's longest sleep */
#define FIELD_MAX 256

int fluence_timelimit_armed;

/* Main-thread state. */
static int depth;               /* nested plugin calls */
static int limited;             /* the outermost call has a finite limit */
static int pauses;              /* nested pauses */
static double deadline;         /* monotonic seconds */
static double paused_at;

/* Shared with the watchdog: when to stop (0: nothing to watch) and what the
 * call was, double-buffered so a new call never rewrites the one being read. */
static int hard_stop;
static int watched;             /* the running call is one the watchdog watches */
static atomic_llong watch_due;
static atomic_int watch_slot;
static struct call {
    char kind[FIELD_MAX], name[FIELD_MAX], file[FIELD_MAX], phase[FIELD_MAX];
    double limit;
} watch_call[2];
static int watchdog_started;

static long long mono_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long long)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

static double mono(void) { return (double)mono_ns() / 1e9; }

/* "fluence: FILE: policy "x" (stage): time limit of 5 s exceeded, ..." as
 * lua/fluence/sandbox.lua words the soft stop, then the end of the process. */
static void stop(const struct call *c)
{
    char msg[4 * FIELD_MAX + 512];
    int n = snprintf(msg, sizeof msg, "fluence: %s%s%s \"%s\" (%s): time limit of %g s exceeded, and 1 s "
                     "later still inside one C call that checks no deadline: stopped; raise it with "
                     "--plugin-timeout SECONDS or FLUENCE_PLUGIN_TIMEOUT\n",
                     c->file, *c->file ? ": " : "", *c->kind ? c->kind : "plugin", c->name, c->phase, c->limit);
    if (n > 0) {
        ssize_t w = write(2, msg, (size_t)n < sizeof msg ? (size_t)n : sizeof msg - 1);
        (void)w;
    }
    _exit(FLUENCE_EXIT_INPUT);
}

static void *watchdog(void *arg)
{
    (void)arg;
    for (;;) {
        long long due = atomic_load(&watch_due), now = mono_ns();
        if (due != 0 && now >= due) {
            struct call c = watch_call[atomic_load(&watch_slot)];
            /* still the same overdue call? (it may have ended meanwhile) */
            if (atomic_load(&watch_due) == due) stop(&c);
            continue;
        }
        /* deadlines only move later, except when the limit itself changes:
         * never sleep longer than IDLE_NS, so a shorter one is seen in time */
        long long wake = now + IDLE_NS;
        if (due != 0 && due < wake) wake = due;
        struct timespec ts = { (time_t)(wake / 1000000000LL), (long)(wake % 1000000000LL) };
        clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL);
    }
    return NULL;
}

static void start_watchdog(void)
{
    pthread_t t;
    pthread_attr_t a;
    watchdog_started = 1;
    if (pthread_attr_init(&a) != 0) return;
    pthread_attr_setdetachstate(&a, PTHREAD_CREATE_DETACHED);
    pthread_attr_setstacksize(&a, 64 * 1024);
    (void)pthread_create(&t, &a, watchdog, NULL);   /* none: the soft checks remain */
    pthread_attr_destroy(&a);
}

void fluence_timelimit_enable_hard_stop(void) { hard_stop = 1; }

/* Publishes the current deadline to the watchdog (or nothing to watch). */
static void publish(void)
{
    if (!hard_stop) return;
    if (!fluence_timelimit_armed || !watched) { atomic_store(&watch_due, 0); return; }
    double due = (deadline + (double)GRACE_NS / 1e9) * 1e9;
    atomic_store(&watch_due, due > 9e18 ? 9000000000000000000LL : (long long)due);
}

void fluence_timelimit_check(lua_State *L, const char *what)
{
    if (!fluence_timelimit_armed || mono() < deadline) return;
    luaL_where(L, 1);
    lua_pushfstring(L, "time limit exceeded in %s", what);
    lua_concat(L, 2);
    lua_error(L);
}

/* Copies how[key] (a string, else "") into dst. */
static void copy_field(lua_State *L, const char *key, char *dst)
{
    size_t len = 0;
    const char *s = NULL;
    if (lua_istable(L, 2) && lua_getfield(L, 2, key) == LUA_TSTRING) s = lua_tolstring(L, -1, &len);
    if (!s) len = 0;
    if (len >= FIELD_MAX) len = FIELD_MAX - 1;
    if (len) memcpy(dst, s, len);
    dst[len] = '\0';
    if (lua_istable(L, 2)) lua_pop(L, 1);
}

static int tl_enter(lua_State *L)
{
    double seconds = luaL_checknumber(L, 1);
    if (depth++ > 0) return 0;
    pauses = 0;
    limited = seconds > 0 && isfinite(seconds);
    fluence_timelimit_armed = limited;
    if (!limited) { publish(); return 0; }
    deadline = mono() + seconds;
    int trusted = 0;
    if (lua_istable(L, 2)) {
        trusted = lua_getfield(L, 2, "trusted") != LUA_TNIL && lua_toboolean(L, -1);
        lua_pop(L, 1);
    }
    watched = hard_stop && !trusted;
    if (watched) {
        int slot = !atomic_load(&watch_slot);
        struct call *c = &watch_call[slot];
        copy_field(L, "kind", c->kind);
        copy_field(L, "name", c->name);
        copy_field(L, "file", c->file);
        copy_field(L, "phase", c->phase);
        if (!*c->phase) strcpy(c->phase, "call");
        c->limit = seconds;
        atomic_store(&watch_slot, slot);
        if (!watchdog_started) start_watchdog();
    }
    publish();
    return 0;
}

static int tl_leave(lua_State *L)
{
    (void)L;
    if (depth == 0) return 0;
    if (--depth == 0) {
        limited = 0;
        watched = 0;
        pauses = 0;
        fluence_timelimit_armed = 0;
        publish();
    }
    return 0;
}

static int tl_expired(lua_State *L)
{
    lua_pushboolean(L, fluence_timelimit_armed && mono() >= deadline);
    return 1;
}

static int tl_remaining(lua_State *L)
{
    if (!limited) lua_pushnil(L);
    else lua_pushnumber(L, deadline - (pauses > 0 ? paused_at : mono()));
    return 1;
}

static int tl_pause(lua_State *L)
{
    (void)L;
    if (depth == 0 || pauses++ > 0 || !limited) return 0;
    paused_at = mono();
    fluence_timelimit_armed = 0;
    publish();
    return 0;
}

static int tl_resume(lua_State *L)
{
    (void)L;
    if (depth == 0 || pauses == 0 || --pauses > 0 || !limited) return 0;
    deadline += mono() - paused_at;
    fluence_timelimit_armed = 1;
    publish();
    return 0;
}

int fluence_guard_install(lua_State *L, const luaL_Reg *guarded, const void *key)
{
    luaL_checktype(L, 1, LUA_TTABLE);
    if (lua_rawgetp(L, LUA_REGISTRYINDEX, key) == LUA_TTABLE) return 1;
    lua_pop(L, 1);
    lua_newtable(L);
    for (const luaL_Reg *r = guarded; r->name; r++) {
        lua_getfield(L, 1, r->name);
        lua_setfield(L, -2, r->name);
        lua_pushcfunction(L, r->func);
        lua_setfield(L, 1, r->name);
    }
    lua_pushvalue(L, -1);
    lua_rawsetp(L, LUA_REGISTRYINDEX, key);
    return 1;
}

int luaopen_fluence_timelimit(lua_State *L)
{
    static const luaL_Reg fns[] = {
        {"enter", tl_enter}, {"leave", tl_leave}, {"expired", tl_expired},
        {"remaining", tl_remaining}, {"pause", tl_pause}, {"resume", tl_resume},
        {NULL, NULL},
    };
    luaL_newlib(L, fns);
    return 1;
}
