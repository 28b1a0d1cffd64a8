/* The embedded Lua runtime (see runtime.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <lauxlib.h>
#include <lualib.h>
#include "runtime.h"
#include "modules.h"
#include "embed.h"
#include "escape.h"
#include "exitcode.h"
#include "lalloc.h"
#if defined(__has_include)
#if __has_include(<valgrind/valgrind.h>)
#include <valgrind/valgrind.h>
#endif
#endif

int luaopen_lpeg(lua_State *L);

static int at_panic(lua_State *L)
{
    const char *msg = lua_tostring(L, -1);
    fprintf(stderr, "fluence: fatal: %s\n", msg ? msg : "unprotected Lua error");
    fflush(stderr);
    _Exit(FLUENCE_EXIT_INTERNAL);
}

/* The message handler: structured errors pass through untouched; other
 * errors become a string with a traceback after a blank marker line. */
static int msgh(lua_State *L)
{
    if (lua_istable(L, 1)) return 1;
    const char *msg = lua_tostring(L, 1);
    if (!msg) {
        if (luaL_callmeta(L, 1, "__tostring") && lua_type(L, -1) == LUA_TSTRING) return 1;
        msg = lua_pushfstring(L, "(error object is a %s value)", luaL_typename(L, 1));
    }
    luaL_traceback(L, L, msg, 1);
    return 1;
}

int fluence_pcall(lua_State *L, int nargs, int nresults)
{
    int base = lua_gettop(L) - nargs;
    lua_pushcfunction(L, msgh);
    lua_insert(L, base);
    int status = lua_pcall(L, nargs, nresults, base);
    lua_remove(L, base);
    return status;
}

/* [-2, +1]  (pointer, length) -> the text escaped; run protected. */
static int escape_message(lua_State *L)
{
    const char *msg = lua_touserdata(L, 1);
    fluence_push_escaped(L, msg, (size_t)lua_tointeger(L, 2), FLUENCE_ESC_KEEP_LINES);
    return 1;
}

/* "fluence: MESSAGE" on stderr, its control characters escaped (escape.h):
 * a message may quote a server or a file, and must not drive the terminal. */
static void print_message(lua_State *L, const char *msg, size_t len)
{
    lua_pushcfunction(L, escape_message);
    lua_pushlightuserdata(L, (void *)msg);
    lua_pushinteger(L, (lua_Integer)len);
    if (lua_pcall(L, 2, 1, 0) == LUA_OK) {
        size_t n;
        const char *e = lua_tolstring(L, -1, &n);
        fprintf(stderr, "fluence: %.*s\n", (int)n, e);
    } else fputs("fluence: (no memory left to report an error)\n", stderr);
    lua_pop(L, 1);
}

int fluence_report(lua_State *L)
{
    int code = FLUENCE_EXIT_INTERNAL;
    const char *msg = NULL;
    int verbose = getenv("FLUENCE_DEBUG") != NULL;
    if (lua_istable(L, -1)) {
        lua_getfield(L, -1, "code");
        /* an error never exits 0 (nor with a code the shell would wrap) */
        if (lua_isinteger(L, -1) && lua_tointeger(L, -1) > 0 && lua_tointeger(L, -1) < 126)
            code = (int)lua_tointeger(L, -1);
        lua_pop(L, 1);
        lua_getfield(L, -1, "message");
        msg = lua_tostring(L, -1);
        if (msg) print_message(L, msg, strlen(msg));
        lua_pop(L, 1);
    } else if ((msg = lua_tostring(L, -1)) != NULL) {
        /* an unexpected error: the first line is "FILE:LINE: message"; the
         * traceback that follows is for developers (FLUENCE_DEBUG=1). */
        const char *tb = strstr(msg, "\nstack traceback:");
        print_message(L, msg, tb && !verbose ? (size_t)(tb - msg) : strlen(msg));
    }
    if (!msg) fprintf(stderr, "fluence: unknown error\n");
    lua_pop(L, 1);
    return code;
}

/* package.searchers entry: "fluence.a.b" -> embedded "lua/fluence/a/b.lua". */
static int search_embedded(lua_State *L)
{
    const char *name = luaL_checkstring(L, 1);
    luaL_Buffer b;
    luaL_buffinit(L, &b);
    luaL_addstring(&b, "lua/");
    for (const char *p = name; *p; p++) luaL_addchar(&b, *p == '.' ? '/' : *p);
    luaL_addstring(&b, ".lua");
    luaL_pushresult(&b);
    const char *path = lua_tostring(L, -1);
    const struct fluence_embedded *e = fluence_embedded_find(path);
    if (e) {
        lua_pushfstring(L, "@%s", path);
        /* precompiled at build time by tools/embed.lua */
        if (luaL_loadbufferx(L, e->data, e->len, lua_tostring(L, -1), "b") != LUA_OK)
            return lua_error(L);
        lua_pushstring(L, path);
        return 2;
    }
    lua_pushfstring(L, "no embedded file '%s'", path);
    return 1;
}

static int init(lua_State *L)
{
    luaL_openlibs(L);
    luaL_getsubtable(L, LUA_REGISTRYINDEX, LUA_PRELOAD_TABLE);
    lua_pushcfunction(L, luaopen_lpeg);             /* the policy grammar's */
    lua_setfield(L, -2, "lpeg");
    for (const struct fluence_module *m = fluence_modules; m->name; m++) {
        lua_pushcfunction(L, m->open);
        lua_setfield(L, -2, m->name);
    }
    lua_pop(L, 1);

    /* Only our own modules: a user's LUA_PATH must not change behaviour.  In
     * development (FLUENCE_SOURCE_DIR) the tree's files come first and the
     * embedded copies fill in whatever the tree lacks.  Otherwise the
     * embedded ones come right after package.preload: the path searchers
     * (with empty paths) would only make each require build a message of
     * the files they did not find, a fifth of loading a module. */
    lua_getglobal(L, "package");
    const char *src = getenv("FLUENCE_SOURCE_DIR");
    int dev = src && *src;
    if (dev) lua_pushfstring(L, "%s/lua/?.lua", src);
    else lua_pushliteral(L, "");
    lua_setfield(L, -2, "path");
    lua_getfield(L, -1, "searchers");
    lua_Integer n = (lua_Integer)luaL_len(L, -1), at = dev ? n + 1 : 2;
    for (lua_Integer i = n; i >= at; i--) {          /* make room at `at` */
        lua_rawgeti(L, -1, i);
        lua_rawseti(L, -2, i + 1);
    }
    lua_pushcfunction(L, search_embedded);
    lua_rawseti(L, -2, at);
    lua_pop(L, 1);
    lua_pushliteral(L, "");
    lua_setfield(L, -2, "cpath");
    lua_pop(L, 1);
    return 0;
}

/* Is a memory checker watching this process? */
static int checked(void);

/* Warnings (warn("@on") ...), as luaL_newstate's: off until turned on. */
static void warnf(void *ud, const char *msg, int tocont)
{
    static int on, cont;
    (void)ud;
    if (!cont && *msg == '@') {
        if (strcmp(msg, "@on") == 0) on = 1;
        else if (strcmp(msg, "@off") == 0) on = 0;
        return;
    }
    if (on) fprintf(stderr, "%s%s%s", cont ? "" : "Lua warning: ", msg, tocont ? "" : "\n");
    cont = tocont;
}

static void *plain_alloc(void *ud, void *ptr, size_t osize, size_t nsize)
{
    (void)ud; (void)osize;
    if (nsize == 0) { free(ptr); return NULL; }
    return realloc(ptr, nsize);
}

#ifndef GC_CREDIT_KIB
#define GC_CREDIT_KIB (8 * 1024)
#endif

lua_State *fluence_runtime_new(void)
{
    /* the pooling allocator (lalloc.h), unless a memory checker must see
     * every block */
    struct lalloc *pool = checked() ? NULL : fluence_lalloc_new();
    lua_State *L = pool ? lua_newstate(fluence_lalloc, pool) : lua_newstate(plain_alloc, NULL);
    if (!L) {
        fluence_lalloc_free(pool);
        return NULL;
    }
    /* A run whose heap stays small never collects: the collector's first
     * step waits until GC_CREDIT_KIB have been allocated, and from there it
     * runs as usual (its pause measured from the heap it then finds).  Lua
     * 5.4's LUA_GCSTEP adds its argument, in KiB, to the collector's debt:
     * a negative one is that credit.  Collecting cost a selection on the
     * quickstart 9% of its instructions, for a heap of a few MiB the exit
     * hands back anyway. */
    lua_gc(L, LUA_GCSTEP, -GC_CREDIT_KIB);
    lua_atpanic(L, at_panic);
    lua_setwarnf(L, warnf, NULL);
    lua_pushcfunction(L, init);
    if (fluence_pcall(L, 0, 0) != LUA_OK) {
        fluence_report(L);
        fluence_runtime_close(L);
        return NULL;
    }
    return L;
}

void fluence_runtime_close(lua_State *L)
{
    void *ud;
    lua_Alloc f = lua_getallocf(L, &ud);
    lua_close(L);
    if (f == fluence_lalloc) fluence_lalloc_free(ud);
}

static int checked(void)
{
#ifdef FLUENCE_PROFILING
    return 0;   /* profilers (callgrind) measure what runs without a checker */
#endif
#if defined(__SANITIZE_ADDRESS__)
    return 1;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
    return 1;
#endif
#endif
#ifdef RUNNING_ON_VALGRIND
    if (RUNNING_ON_VALGRIND) return 1;
#endif
    const char *pre = getenv("LD_PRELOAD");   /* valgrind preloads its vgpreload_*.so */
    return pre && strstr(pre, "vgpreload") != NULL;
}

static lua_State *at_exit;        /* keeps the state reachable, for leak checkers */

void fluence_runtime_exit(lua_State *L)
{
    if (checked()) fluence_runtime_close(L);
    else at_exit = L;
}
