/* fluence.match: the Fluxion-compatible matcher as a Lua module.
 *
 *   local match = require "fluence.match"
 *   local g, err = match.load_jgf(text, name)      -- graph userdata
 *   local g, err = match.load_jgf_file(path)
 *   local g, err = match.graph_from_resources(tbl)  -- see match_build below
 *   local m = match.new(g, { policy = "first", format = "simple" })
 *                                                   -- matcher, own allocations
 *   local r = m:run(op, jobspec_text, name)         -- see matcher_run
 *   m:cancel(id)  m:info(id)  m:next_jobid()  m:rewind(id)
 *   m:backend()                                     -- "builtin" or "fluxion"
 *   match.parse_jobspec(text, name) -> table | nil, err
 *
 * Graph and matcher are userdata with __gc; a matcher keeps its graph alive
 * through its user value. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <lauxlib.h>
#include <lua.h>
#include "match_dfu.h"
#include "match_graph.h"
#include "match_jgf.h"
#include "match_jobspec.h"
#include "match_reapi.h"
#include "match_writers.h"
#include "readfile.h"

#define GRAPH_MT "fluence.match.graph"
#define MATCHER_MT "fluence.match.matcher"

typedef struct lgraph {
    mgraph *g;
    char *text;              /* the JGF, kept only for FLUENCE_FLUXION_LIB */
} lgraph;

/* The JGF text Fluxion loads: as read, or written from a built graph. */
static const char *graph_text(lgraph *lg)
{
    if (!lg->text) lg->text = mw_graph_jgf(lg->g);
    return lg->text;
}

typedef struct lmatcher {
    matcher *m;
    mreapi *ext;             /* Fluxion itself (FLUENCE_FLUXION_LIB) */
} lmatcher;

static const char *fluxion_lib(void)
{
    const char *p = getenv("FLUENCE_FLUXION_LIB");
    return p && *p ? p : NULL;
}

static lgraph *push_graph(lua_State *L)
{
    lgraph *lg = lua_newuserdatauv(L, sizeof *lg, 0);
    lg->g = NULL;
    lg->text = NULL;
    luaL_setmetatable(L, GRAPH_MT);
    return lg;
}

static int graph_gc(lua_State *L)
{
    lgraph *lg = luaL_checkudata(L, 1, GRAPH_MT);
    mg_free(lg->g);
    lg->g = NULL;
    free(lg->text);
    lg->text = NULL;
    return 0;
}

static mgraph *check_graph(lua_State *L, int i)
{
    lgraph *lg = luaL_checkudata(L, i, GRAPH_MT);
    if (!lg->g) luaL_argerror(L, i, "graph is freed");
    return lg->g;
}

static int l_load_jgf(lua_State *L)
{
    size_t len;
    const char *text = luaL_checklstring(L, 1, &len);
    const char *name = luaL_optstring(L, 2, "graph");
    lgraph *lg = push_graph(L);
    char err[512];
    lg->g = mg_load_jgf(text, len, false, err, sizeof err);
    if (!lg->g) {
        lua_pushnil(L);
        lua_pushfstring(L, "%s:%s", name, err);
        return 2;
    }
    if (fluxion_lib() && (lg->text = malloc(len + 1))) {
        memcpy(lg->text, text, len);
        lg->text[len] = 0;
    }
    return 1;
}

/* A regular file's text, mapped (readfile.h); NULL: read it instead (a
 * pipe, an empty file, a file that cannot be opened: the reader says why). */
static const char *map_regular(const char *path, size_t *len)
{
    struct stat st;
    if (stat(path, &st) != 0 || !S_ISREG(st.st_mode)) return NULL;      /* a FIFO is opened once, to read */
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return NULL;
    const char *p = NULL;
    if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_size > 0) {
        *len = (size_t)st.st_size;
        p = fluence_map(fd, *len, path, 0);
    }
    close(fd);
    return p;
}

static int l_load_jgf_file(lua_State *L)
{
    const char *path = luaL_checkstring(L, 1);
    size_t mlen;
    const char *mapped = fluxion_lib() ? NULL : map_regular(path, &mlen);
    if (mapped) {
        char merr[512];
        lgraph *mg = push_graph(L);
        mg->g = mg_load_jgf(mapped, mlen, true, merr, sizeof merr);
        fluence_unmap(mapped, mlen);
        if (mg->g) return 1;
        lua_pushnil(L);
        lua_pushfstring(L, "%s:%s", path, merr);
        return 2;
    }
    /* not a regular file (a pipe), or Fluxion's reader wants the text: read
     * whole, bounded as a manifest is (readfile.h) */
    char *data, why[FLUENCE_READ_WHY];
    size_t len;
    if (fluence_readfile(path, fluence_max_input(), 0, &data, &len, why) != 0) {
        lua_pushnil(L);
        fluence_push_read_error(L, path, why);
        return 2;
    }
    lgraph *lg = push_graph(L);
    char err[512];
    lg->g = mg_load_jgf(data, len, false, err, sizeof err);
    if (lg->g && fluxion_lib()) {
        lg->text = data;                    /* NUL-terminated */
        data = NULL;
    }
    free(data);
    if (!lg->g) {
        lua_pushnil(L);
        lua_pushfstring(L, "%s:%s", path, err);
        return 2;
    }
    return 1;
}

static int graph_stats(lua_State *L)
{
    mgraph *g = check_graph(L, 1);
    lua_createtable(L, 0, 4);
    lua_pushinteger(L, g->nv);
    lua_setfield(L, -2, "vertices");
    lua_pushinteger(L, g->nprops);
    lua_setfield(L, -2, "properties");
    size_t bytes = (size_t)g->cap * sizeof *g->v + g->nv * sizeof *g->children + g->strcap +
                   (size_t)g->propcap * 2 * sizeof *g->props + g->ihcap * sizeof *g->ihash;
    lua_pushinteger(L, (lua_Integer)bytes);
    lua_setfield(L, -2, "bytes");
    lua_pushstring(L, g->root >= 0 ? mg_str(g, g->v[g->root].name) : "");
    lua_setfield(L, -2, "root");
    return 1;
}

/* g:vertices() -> array of {name=, type=, basename=, path=, id=, size=, rank=,
 *                           unit=, properties={}} */
static int graph_vertices(lua_State *L)
{
    mgraph *g = check_graph(L, 1);
    lua_createtable(L, (int)g->nv, 0);
    for (uint32_t i = 0; i < g->nv; i++) {
        const mg_vertex *x = &g->v[i];
        lua_createtable(L, 0, 8);
        lua_pushstring(L, mg_str(g, x->name));
        lua_setfield(L, -2, "name");
        lua_pushstring(L, mg_type_name(g, x->type));
        lua_setfield(L, -2, "type");
        lua_pushstring(L, mg_str(g, x->path));
        lua_setfield(L, -2, "path");
        lua_pushinteger(L, x->id);
        lua_setfield(L, -2, "id");
        lua_pushinteger(L, x->size);
        lua_setfield(L, -2, "size");
        lua_pushinteger(L, x->rank);
        lua_setfield(L, -2, "rank");
        lua_pushstring(L, mg_str(g, x->basename));
        lua_setfield(L, -2, "basename");
        lua_pushstring(L, mg_str(g, x->unit));
        lua_setfield(L, -2, "unit");
        lua_createtable(L, 0, (int)x->nprop);
        for (uint32_t p = 0; p < x->nprop; p++) {
            lua_pushstring(L, mg_str(g, g->props[2 * (x->prop0 + p) + 1]));
            lua_setfield(L, -2, mg_str(g, g->props[2 * (x->prop0 + p)]));
        }
        lua_setfield(L, -2, "properties");
        lua_rawseti(L, -2, (lua_Integer)i + 1);
    }
    return 1;
}

/* g:jgf(write): the graph as JGF text (match_jgf.h), handed to write(chunk)
 * in pieces of at most JGF_CHUNK bytes: `fluence graph` streams it to stdout
 * instead of holding vertex tables, their JSON and a copy of it (12 times
 * the output).  The buffer and the writer's scratch are userdata, so a
 * write that raises (stdout closed) leaks nothing. */
#define JGF_CHUNK (64 * 1024)
struct jgf_out { lua_State *L; int fn; size_t n; char buf[JGF_CHUNK]; };

static void jgf_flush(struct jgf_out *o)
{
    if (o->n == 0) return;
    lua_pushvalue(o->L, o->fn);
    lua_pushlstring(o->L, o->buf, o->n);
    o->n = 0;
    lua_call(o->L, 1, 0);
}

static void jgf_sink(void *to, const char *s, size_t n)
{
    struct jgf_out *o = to;
    while (n > 0) {
        if (o->n == JGF_CHUNK) jgf_flush(o);
        size_t k = JGF_CHUNK - o->n < n ? JGF_CHUNK - o->n : n;
        memcpy(o->buf + o->n, s, k);
        o->n += k;
        s += k;
        n -= k;
    }
}

static int graph_jgf(lua_State *L)
{
    mgraph *g = check_graph(L, 1);
    luaL_checktype(L, 2, LUA_TFUNCTION);
    size_t words = mg_jgf_scratch(g);
    if (words > (size_t)-1 / sizeof(uint32_t)) return luaL_error(L, "graph too large");
    uint32_t *scratch = lua_newuserdatauv(L, words * sizeof *scratch, 0);
    struct jgf_out *o = lua_newuserdatauv(L, sizeof *o, 0);
    o->L = L;
    o->fn = 2;
    o->n = 0;
    mg_write_jgf(g, scratch, jgf_sink, o);
    jgf_flush(o);
    return 0;
}

/* --------------------------------------------------- graph_from_resources */

/* match.graph_from_resources(spec): spec is a tree of
 *   { type=, name=, basename=, id=, size=, rank=, unit=, properties = {k=v}, with = {...} }
 * rooted at one table (the cluster).  Lua code (fluence.jobspecs /
 * policies) turns the ConfigMap schema into this shape. */
static int build_rec(lua_State *L, mgraph *g, int32_t parent, int idx, char *err, size_t errlen, int depth)
{
    if (depth > 64) {
        snprintf(err, errlen, "resource tree too deep");
        return -1;
    }
    idx = lua_absindex(L, idx);
    int top = lua_gettop(L);
    if (!lua_istable(L, idx)) {
        snprintf(err, errlen, "a resource must be a table");
        return -1;
    }
    lua_getfield(L, idx, "type");
    const char *type = lua_tostring(L, -1);
    if (!type || !*type) {
        lua_pop(L, 1);
        snprintf(err, errlen, "a resource needs a type");
        return -1;
    }
    lua_getfield(L, idx, "basename");
    const char *basename = lua_tostring(L, -1);
    lua_getfield(L, idx, "name");
    const char *name = lua_tostring(L, -1);
    lua_getfield(L, idx, "id");
    int64_t id = lua_isinteger(L, -1) ? lua_tointeger(L, -1) : 0;
    lua_getfield(L, idx, "size");
    int64_t size = lua_isinteger(L, -1) ? lua_tointeger(L, -1) : 1;
    lua_getfield(L, idx, "rank");
    int64_t rank = lua_isinteger(L, -1) ? lua_tointeger(L, -1) : -1;
    /* properties, sorted by key for a stable graph */
    const char **props = NULL;
    int np = 0;
    lua_getfield(L, idx, "properties");
    int pidx = lua_gettop(L);
    if (lua_istable(L, pidx)) {
        int n = 0;
        lua_pushnil(L);
        while (lua_next(L, pidx)) {
            n++;
            lua_pop(L, 1);
        }
        props = calloc((size_t)n * 2 + 2, sizeof *props);
        if (!props) {
            lua_settop(L, top);
            snprintf(err, errlen, "out of memory");
            return -1;
        }
        lua_pushnil(L);
        while (lua_next(L, pidx)) {
            if (lua_type(L, -2) == LUA_TSTRING) {
                props[2 * np] = lua_tostring(L, -2);
                lua_pushvalue(L, -1);
                const char *v = lua_tostring(L, -1);
                lua_pop(L, 1);
                props[2 * np + 1] = v ? v : "";
                np++;
            }
            lua_pop(L, 1);
        }
        for (int i = 1; i < np; i++)
            for (int j = i; j > 0 && strcmp(props[2 * (j - 1)], props[2 * j]) > 0; j--) {
                const char *k = props[2 * j], *v = props[2 * j + 1];
                props[2 * j] = props[2 * (j - 1)];
                props[2 * j + 1] = props[2 * (j - 1) + 1];
                props[2 * (j - 1)] = k;
                props[2 * (j - 1) + 1] = v;
            }
    }
    int32_t v = mg_add_vertex(g, parent, type, basename, name, id, size, rank, props, np);
    free(props);
    if (v < 0) {
        lua_settop(L, top);
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    lua_getfield(L, idx, "unit");
    if (lua_type(L, -1) == LUA_TSTRING) {
        size_t ul;
        const char *unit = lua_tolstring(L, -1, &ul);
        uint32_t u = mg_intern(g, unit, ul);
        if (u == (uint32_t)-1) {
            lua_settop(L, top);
            snprintf(err, errlen, "out of memory");
            return -1;
        }
        g->v[v].unit = u;
    }
    lua_pop(L, 1);
    lua_getfield(L, idx, "with");
    int widx = lua_gettop(L);
    if (lua_istable(L, widx)) {
        lua_Integer n = (lua_Integer)lua_rawlen(L, widx);
        for (lua_Integer i = 1; i <= n; i++) {
            lua_rawgeti(L, widx, i);
            int rc = build_rec(L, g, v, -1, err, errlen, depth + 1);
            lua_pop(L, 1);
            if (rc < 0) {
                lua_settop(L, top);
                return -1;
            }
        }
    }
    lua_settop(L, top);
    return 0;
}

static int l_graph_from_tree(lua_State *L)
{
    luaL_checktype(L, 1, LUA_TTABLE);
    lgraph *lg = push_graph(L);
    lg->g = mg_new();
    if (!lg->g) return luaL_error(L, "not enough memory");
    char err[256];
    if (build_rec(L, lg->g, -1, 1, err, sizeof err, 0) < 0 || mg_finish(lg->g, err, sizeof err) < 0) {
        lua_pushnil(L);
        lua_pushstring(L, err);
        return 2;
    }
    return 1;
}

/* Copies the subtree of src at v under parent in dst (children in order). */
static int copy_rec(mgraph *dst, const mgraph *src, uint32_t v, int32_t parent, int depth)
{
    if (depth > 256) return -1;
    const mg_vertex *x = &src->v[v];
    const char **props = NULL;
    if (x->nprop) {
        props = calloc((size_t)x->nprop * 2, sizeof *props);
        if (!props) return -1;
        for (uint32_t p = 0; p < x->nprop; p++) {
            props[2 * p] = mg_str(src, src->props[2 * (x->prop0 + p)]);
            props[2 * p + 1] = mg_str(src, src->props[2 * (x->prop0 + p) + 1]);
        }
    }
    int32_t nv = mg_add_vertex(dst, parent, mg_type_name(src, x->type), mg_str(src, x->basename),
                               mg_str(src, x->name), x->id, x->size, x->rank, props, (int)x->nprop);
    free(props);
    if (nv < 0) return -1;
    dst->v[nv].status = x->status;
    dst->v[nv].exclusive = x->exclusive;
    dst->v[nv].unit = mg_intern(dst, mg_str(src, x->unit), strlen(mg_str(src, x->unit)));
    for (uint32_t k = 0; k < x->nchild; k++)
        if (copy_rec(dst, src, src->children[x->child0 + k], nv, depth + 1) < 0) return -1;
    return 0;
}

/* match.graph_from_resources(resources_yaml_table [, cluster_graph]):
 * the backend graph Fluence builds from the fluence-resources ConfigMap,
 * grafted onto the cluster graph when one is given (under the vertex named
 * by each tree's parent, else the root). */
static int l_graph_from_resources(lua_State *L)
{
    luaL_checktype(L, 1, LUA_TTABLE);
    mgraph *base = lua_isnoneornil(L, 2) ? NULL : check_graph(L, 2);
    lua_getglobal(L, "require");
    lua_pushstring(L, "fluence.jobspecs");
    lua_call(L, 1, 1);
    lua_getfield(L, -1, "resources_tree");
    lua_pushvalue(L, 1);
    if (lua_pcall(L, 1, 1, 0) != LUA_OK) {
        lua_pushnil(L);
        lua_insert(L, -2);
        return 2;
    }
    int tree = lua_gettop(L);
    lgraph *lg = push_graph(L);
    lg->g = mg_new();
    if (!lg->g) return luaL_error(L, "not enough memory");
    char err[256];
    int rc = 0;
    if (!base) {
        rc = build_rec(L, lg->g, -1, tree, err, sizeof err, 0);
    } else {
        if (copy_rec(lg->g, base, (uint32_t)base->root, -1, 0) < 0) {
            snprintf(err, sizeof err, "out of memory");
            rc = -1;
        }
        lua_getfield(L, tree, "with");
        int widx = lua_gettop(L);
        lua_Integer n = lua_istable(L, widx) ? (lua_Integer)lua_rawlen(L, widx) : 0;
        for (lua_Integer i = 1; rc == 0 && i <= n; i++) {
            lua_rawgeti(L, widx, i);
            lua_getfield(L, -1, "parent");
            const char *pname = lua_tostring(L, -1);
            int32_t parent = 0; /* the copied root */
            if (pname)
                for (uint32_t v = 0; v < lg->g->nv; v++)
                    if (!strcmp(mg_str(lg->g, lg->g->v[v].name), pname)) {
                        parent = (int32_t)v;
                        break;
                    }
            lua_pop(L, 1);
            rc = build_rec(L, lg->g, parent, -1, err, sizeof err, 1);
            lua_pop(L, 1);
        }
        lua_settop(L, widx - 1);
    }
    if (rc < 0 || mg_finish(lg->g, err, sizeof err) < 0) {
        lua_pushnil(L);
        lua_pushstring(L, err);
        return 2;
    }
    return 1;
}

/* ---------------------------------------------------------------- matcher */

static int l_new(lua_State *L)
{
    mgraph *g = check_graph(L, 1);
    lgraph *lgr = luaL_checkudata(L, 1, GRAPH_MT);
    const char *policy = "first", *fmtname = "simple";
    if (lua_istable(L, 2)) {
        lua_getfield(L, 2, "policy");
        if (lua_isstring(L, -1)) policy = lua_tostring(L, -1);
        lua_getfield(L, 2, "format");
        if (lua_isstring(L, -1)) fmtname = lua_tostring(L, -1);
    } else if (lua_isstring(L, 2)) {
        policy = lua_tostring(L, 2);
    }
    int format = mw_format(fmtname);
    if (format < 0) {
        lua_pushnil(L);
        lua_pushfstring(L, "unknown match format %s (simple, rv1, rv1_nosched or jgf)", fmtname);
        return 2;
    }
    lmatcher *lm = lua_newuserdatauv(L, sizeof *lm, 1);
    lm->m = NULL;
    lm->ext = NULL;
    luaL_setmetatable(L, MATCHER_MT);
    lua_pushvalue(L, 1);
    lua_setiuservalue(L, -2, 1);
    char err[512];
    err[0] = 0;
    if (fluxion_lib()) {
        /* the library answers an unknown policy with "can't create matcher" */
        if (m_check_policy(policy, err, sizeof err) < 0) {
            lua_pushnil(L);
            lua_pushstring(L, err);
            return 2;
        }
        const char *text = graph_text(lgr);
        if (!text) return luaL_error(L, "not enough memory");
        lm->ext = mr_open(fluxion_lib(), text, policy, format, err, sizeof err);
    } else {
        lm->m = m_new(g, policy, format, err, sizeof err);
    }
    if (!lm->m && !lm->ext) {
        lua_pushnil(L);
        lua_pushstring(L, err);
        return 2;
    }
    return 1;
}

static int matcher_gc(lua_State *L)
{
    lmatcher *lm = luaL_checkudata(L, 1, MATCHER_MT);
    m_free(lm->m);
    lm->m = NULL;
    mr_free(lm->ext);
    lm->ext = NULL;
    return 0;
}

static matcher *check_matcher(lua_State *L, int i)
{
    lmatcher *lm = luaL_checkudata(L, i, MATCHER_MT);
    if (!lm->m && !lm->ext) luaL_argerror(L, i, "matcher is freed");
    return lm->m;
}

static mreapi *ext_matcher(lua_State *L, int i)
{
    lmatcher *lm = luaL_checkudata(L, i, MATCHER_MT);
    return lm->ext;
}

static int op_from_name(const char *s)
{
    if (!strcmp(s, "allocate")) return MOP_ALLOCATE;
    if (!strcmp(s, "allocate_with_satisfiability")) return MOP_ALLOCATE_W_SAT;
    if (!strcmp(s, "allocate_orelse_reserve")) return MOP_ALLOCATE_ORELSE_RESERVE;
    if (!strcmp(s, "satisfiability")) return MOP_SATISFIABILITY;
    return -1;
}

static void set_str(lua_State *L, const char *k, const char *v)
{
    if (!v) return;
    lua_pushstring(L, v);
    lua_setfield(L, -2, k);
}

/* m:run(op, text, name) -> { ok, jobid, reserved, at, satisfiable, counted,
 *   text (resource-query's -t text), R (the resources alone), info,
 *   stderr (what resource-query prints on stderr for it), error (when the
 *   command is an error rather than a verdict: why) } */
static int matcher_run(lua_State *L)
{
    matcher *m = check_matcher(L, 1);
    const char *opname = luaL_checkstring(L, 2);
    size_t len;
    const char *text = luaL_checklstring(L, 3, &len);
    int op = op_from_name(opname);
    if (op < 0) return luaL_argerror(L, 2, "unknown match operation");
    mresult r;
    mreapi *ext = ext_matcher(L, 1);
    if (ext) mr_run(ext, op, text, &r);
    else m_match(m, op, text, len, &r);
    lua_createtable(L, 0, 12);
    lua_pushboolean(L, r.matched);
    lua_setfield(L, -2, "ok");
    lua_pushinteger(L, r.jobid);
    lua_setfield(L, -2, "jobid");
    lua_pushboolean(L, r.reserved);
    lua_setfield(L, -2, "reserved");
    lua_pushinteger(L, r.at);
    lua_setfield(L, -2, "at");
    lua_pushboolean(L, r.satisfiable);
    lua_setfield(L, -2, "satisfiable");
    lua_pushboolean(L, r.counted);
    lua_setfield(L, -2, "counted");
    set_str(L, "text", r.text);
    set_str(L, "R", r.R);
    set_str(L, "info", r.info);
    set_str(L, "stderr", r.msgs);
    if (r.err[0]) set_str(L, "error", r.err);
    m_result_free(&r);
    return 1;
}

/* m:cancel(id) -> true, visited, finished (the cancel walk's vertices, as
 * resource-query's `cancel N stats`) | nil, message */
static int matcher_cancel(lua_State *L)
{
    matcher *m = check_matcher(L, 1);
    lua_Integer id = luaL_checkinteger(L, 2);
    mreapi *ext = ext_matcher(L, 1);
    unsigned visits[2] = {0, 0};
    if (ext ? mr_cancel(ext, id, visits) < 0 : m_cancel(m, id, visits) < 0) {
        lua_pushnil(L);
        lua_pushfstring(L, "nonexistent job %I", id);
        return 2;
    }
    lua_pushboolean(L, 1);
    lua_pushinteger(L, visits[0]);
    lua_pushinteger(L, visits[1]);
    return 3;
}

static int matcher_info(lua_State *L)
{
    matcher *m = check_matcher(L, 1);
    lua_Integer id = luaL_checkinteger(L, 2);
    const char *state;
    int64_t at;
    bool reserved;
    char sbuf[64];
    mreapi *ext = ext_matcher(L, 1);
    if (ext) {
        if (mr_info(ext, id, sbuf, sizeof sbuf, &at, &reserved) < 0) {
            lua_pushnil(L);
            lua_pushfstring(L, "jobid doesn't exist: %I", id);
            return 2;
        }
        state = sbuf;
    } else if (m_info(m, id, &state, &at, &reserved) < 0) {
        lua_pushnil(L);
        lua_pushfstring(L, "jobid doesn't exist: %I", id);
        return 2;
    }
    lua_createtable(L, 0, 4);
    lua_pushinteger(L, id);
    lua_setfield(L, -2, "jobid");
    lua_pushstring(L, state);
    lua_setfield(L, -2, "state");
    lua_pushinteger(L, at);
    lua_setfield(L, -2, "at");
    lua_pushboolean(L, reserved);
    lua_setfield(L, -2, "reserved");
    return 1;
}

static int matcher_next_jobid(lua_State *L)
{
    matcher *m = check_matcher(L, 1);
    mreapi *ext = ext_matcher(L, 1);
    lua_pushinteger(L, ext ? mr_next_jobid(ext) : m_next_jobid(m));
    return 1;
}

/* m:rewind(id): cancels every job from id on and makes id the next job id */
static int matcher_rewind(lua_State *L)
{
    matcher *m = check_matcher(L, 1);
    lua_Integer id = luaL_checkinteger(L, 2);
    mreapi *ext = ext_matcher(L, 1);
    if (ext) mr_rewind(ext, id);
    else m_rewind(m, id);
    return 0;
}

static int matcher_backend(lua_State *L)
{
    check_matcher(L, 1);
    lua_pushstring(L, ext_matcher(L, 1) ? "fluxion" : "builtin");
    return 1;
}

/* match.fluxion_lib() -> the library FLUENCE_FLUXION_LIB names, or nil: what
 * `match -v` and fits say they match with */
static int l_fluxion_lib(lua_State *L)
{
    const char *p = fluxion_lib();
    if (p) lua_pushstring(L, p); else lua_pushnil(L);
    return 1;
}

/* ---------------------------------------------------------- parse_jobspec */

static void push_res(lua_State *L, const mj_res *r)
{
    lua_createtable(L, 0, 7);
    set_str(L, "type", r->type);
    if (r->min == r->max) {
        lua_pushinteger(L, r->min);
    } else {
        lua_createtable(L, 0, 4);
        lua_pushinteger(L, r->min);
        lua_setfield(L, -2, "min");
        if (r->max != 0xffffffffu) {
            lua_pushinteger(L, r->max);
            lua_setfield(L, -2, "max");
            char op[2] = {r->oper, 0};
            lua_pushstring(L, op);
            lua_setfield(L, -2, "operator");
            lua_pushinteger(L, r->operand);
            lua_setfield(L, -2, "operand");
        }
    }
    lua_setfield(L, -2, "count");
    set_str(L, "unit", r->unit);
    set_str(L, "label", r->label);
    set_str(L, "id", r->id);
    if (r->exclusive != MJ_X_UNSPEC) {
        lua_pushboolean(L, r->exclusive == MJ_X_TRUE);
        lua_setfield(L, -2, "exclusive");
    }
    if (r->nwith) {
        lua_createtable(L, r->nwith, 0);
        for (int i = 0; i < r->nwith; i++) {
            push_res(L, &r->with[i]);
            lua_rawseti(L, -2, i + 1);
        }
        lua_setfield(L, -2, "with");
    }
}

static void push_cons(lua_State *L, const mj_cons *k)
{
    static const char *names[] = {"properties", "and", "or", "not", "hostlist", "ranks"};
    lua_newtable(L);
    if (k->op == MJC_TRUE) return;
    if (k->op == MJC_AND && k->nitems == 0) {
        /* top level mapping: one key per kid */
        for (int i = 0; i < k->nkids; i++) {
            const mj_cons *s = &k->kids[i];
            lua_createtable(L, s->nitems + s->nkids, 0);
            for (int j = 0; j < s->nitems; j++) {
                lua_pushstring(L, s->items[j]);
                lua_rawseti(L, -2, j + 1);
            }
            for (int j = 0; j < s->nkids; j++) {
                push_cons(L, &s->kids[j]);
                lua_rawseti(L, -2, j + 1);
            }
            lua_setfield(L, -2, names[s->op]);
        }
    }
}

static int l_parse_jobspec(lua_State *L)
{
    size_t len;
    const char *text = luaL_checklstring(L, 1, &len);
    const char *name = luaL_optstring(L, 2, "jobspec");
    char err[512];
    mjobspec *js = mj_parse(text, len, name, err, sizeof err);
    if (!js) {
        lua_pushnil(L);
        lua_pushstring(L, err);
        return 2;
    }
    lua_createtable(L, 0, 4);
    lua_pushinteger(L, js->version);
    lua_setfield(L, -2, "version");
    lua_createtable(L, js->nres, 0);
    for (int i = 0; i < js->nres; i++) {
        push_res(L, &js->res[i]);
        lua_rawseti(L, -2, i + 1);
    }
    lua_setfield(L, -2, "resources");
    lua_createtable(L, js->ntasks, 0);
    for (int i = 0; i < js->ntasks; i++) {
        lua_createtable(L, 0, 2);
        set_str(L, "slot", js->tasks[i].slot);
        lua_createtable(L, 0, 1);
        lua_pushinteger(L, js->tasks[i].per_slot ? js->tasks[i].per_slot : js->tasks[i].total);
        lua_setfield(L, -2, js->tasks[i].per_slot ? "per_slot" : "total");
        lua_setfield(L, -2, "count");
        lua_rawseti(L, -2, i + 1);
    }
    lua_setfield(L, -2, "tasks");
    lua_createtable(L, 0, 1);
    lua_createtable(L, 0, 2);
    if (js->duration > 0) {
        lua_pushnumber(L, js->duration);
        lua_setfield(L, -2, "duration");
    }
    if (js->constraint) {
        push_cons(L, js->constraint);
        lua_setfield(L, -2, "constraints");
    }
    lua_setfield(L, -2, "system");
    lua_setfield(L, -2, "attributes");
    mj_free(js);
    return 1;
}

int luaopen_fluence_match(lua_State *L)
{
    static const luaL_Reg graph_methods[] = {
        {"stats", graph_stats}, {"vertices", graph_vertices}, {"jgf", graph_jgf}, {"matcher", l_new}, {NULL, NULL}};
    static const luaL_Reg matcher_methods[] = {{"run", matcher_run},
                                               {"cancel", matcher_cancel},
                                               {"info", matcher_info},
                                               {"next_jobid", matcher_next_jobid},
                                               {"rewind", matcher_rewind},
                                               {"backend", matcher_backend},
                                               {NULL, NULL}};
    static const luaL_Reg funcs[] = {{"load_jgf", l_load_jgf},
                                     {"load_jgf_file", l_load_jgf_file},
                                     {"graph_from_tree", l_graph_from_tree},
                                     {"graph_from_resources", l_graph_from_resources},
                                     {"new", l_new},
                                     {"fluxion_lib", l_fluxion_lib},
                                     {"parse_jobspec", l_parse_jobspec},
                                     {NULL, NULL}};
    luaL_newmetatable(L, GRAPH_MT);
    lua_pushcfunction(L, graph_gc);
    lua_setfield(L, -2, "__gc");
    luaL_newlib(L, graph_methods);
    lua_setfield(L, -2, "__index");
    lua_pop(L, 1);
    luaL_newmetatable(L, MATCHER_MT);
    lua_pushcfunction(L, matcher_gc);
    lua_setfield(L, -2, "__gc");
    luaL_newlib(L, matcher_methods);
    lua_setfield(L, -2, "__index");
    lua_pop(L, 1);
    luaL_newlib(L, funcs);
    return 1;
}
