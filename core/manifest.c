/* fluence.manifest — byte-preserving manifest reading and rewriting.
 *
 *   manifest.parse(text, name [, {active_only = true, by_shape = true, split = ...}])
 *                              -> stream | nil, "name:LINE:COL: message ..."
 *                                 (text: a string or what manifest.read returns;
 *                                 active_only: descriptions only of objects
 *                                 that could take part in a selection -- a
 *                                 stream of 10,000 ConfigMaps needs none;
 *                                 by_shape: pods found by shape in every
 *                                 kind, the known kinds' table unused;
 *                                 split: a stream of MS_MIN_LEN bytes or more
 *                                 (FLUENCE_MANIFEST_SPLIT's, when set) is
 *                                 read on two threads (manifest_split.h),
 *                                 same results; false: one thread; a byte
 *                                 (1-based): split at the first document
 *                                 start from there, whatever the size -- for
 *                                 specs)
 *   manifest.read(path)        -> text | nil, "path: reason" (#text, tostring(text))
 *   manifest.indent_json(json [, indent [, depth]]) -> json indented (values untouched)
 *   manifest.kinds()           -> where known kinds keep their pods (manifest_kinds.c)
 *   stream:objects()              -> array of object descriptions (the caller's own)
 *   stream:active()               -> those of at least every object that targets
 *                                    Fluence or has a select-policy (each with
 *                                    its index; after active_only, only those)
 *   stream:set_annotations(i, {k = v, ...} [, scope]) -> true | nil, located error
 *                                 scope: "object" (the object's own metadata),
 *                                 "templates" (its Fluence pod templates), or
 *                                 nil for both
 *   stream:render()               -> the text with every edit applied
 *   stream:write(fd)              -> true | nil, message: writes render()'s
 *                                    text to fd without building it
 *   stream:render_json()          -> the edited stream as indented JSON
 *   stream:object_json(i)         -> the edited object as compact JSON
 *                                    (metadata.managedFields left out)
 *   stream:is_json()
 *   stream:warnings()             -> {located message, ...}: what passes through
 *                                    but deserves a word (a key written twice
 *                                    outside Fluence objects)
 *   stream:annotation_span(i, key, value) -> first, last, line | nil:
 *                                    where the value of annotation key is
 *                                    written, and where its line starts
 *   stream:source(first, last)    -> the input's bytes first..last
 *   stream:locate(byte, message)  -> "name:LINE:COL: message", line, caret
 *   stream:position(byte)         -> name, line, column of byte (1-based)
 *   stream:seam()                 -> the byte (1-based) from which documents
 *                                    came from the second thread, or nil
 *
 * An object description (plain tables, new ones on every objects() call):
 *   index, kind, apiVersion, name, namespace, generateName, line, col,
 *   annotations, labels ({k = v}, {} when absent), targets_fluence,
 *   wants_selection, replicas, parallelism, completions, activeDeadlineSeconds
 *                 (spec.*, integers),
 *   templates = { {path, scheduler_name, annotations, labels, targets_fluence,
 *                  containers, init_containers, replicas}, ... },
 *   unpinned = { {path, message}, ... }: an object asking for a selection
 *   whose schedulerName: fluence at path is in no pod fluence found (its
 *   pods would get no pin: callers warn)
 *   (no JSON: stream:object_json(i) makes it on demand).
 * containers: { {name, requests = {}, limits = {}, env = {NAME = value}, and
 *   requests_at, env_at (when it has env): {key = 1-based byte offset of its
 *   value}} }.
 * Pods: a known kind's are where manifest_kinds.c's table says (its pod
 * templates, an Argo Workflow's spec.podMetadata, a MiniCluster's spec.pod);
 * any other kind's are found by shape: the object itself when it has
 * spec.containers (a Pod; path ""), and every mapping whose spec has a
 * containers sequence, under any key, at any depth.  A pod's replicas: the
 * nearest enclosing mapping's parallelism or replicas.
 *
 * wants_selection: the object targets Fluence and has a select-policy, on
 * itself or on a Fluence pod template.
 *
 * Objects are the documents of the stream, or the items of a `*List`
 * document.  Empty documents are skipped; any other non-mapping document, a
 * document that does not parse, a Fluence object with a key written twice
 * or a wrong-typed field (manifest_shape.c), or a Fluence object asking for
 * selection whose metadata/annotations cannot be written is an error (a key
 * written twice elsewhere is a warning: stream:warnings).  Edits are
 * collected (per object: the union of the annotations
 * set) and spliced into the original text in one pass at render time, sorted
 * by offset, so rendering is linear and untouched bytes stay untouched.  See
 * manifest_edit.c for where and how annotations are written. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>
#include <lauxlib.h>
#include "exitcode.h"
#include "escape.h"
#include "manifest_edit.h"
#include "manifest_json.h"
#include "manifest_kinds.h"
#include "manifest_meta.h"
#include "manifest_shape.h"
#include "manifest_split.h"
#include "manifest_tree.h"
#include "output.h"
#include "readfile.h"
#include "strbuf.h"
#include "utf8.h"
#include "yaml_kubectl.h"

#define STREAM_MT "fluence.manifest.stream"
#define TEXT_MT "fluence.manifest.text"
#define BIG_TEXT ((size_t)4 << 20)
#define MAP_TEXT ((size_t)1 << 20)     /* regular files from this size are mapped */
#define GROUP_LABEL "fluence.flux-framework.org/group"
#define SELECT_POLICY "fluence.flux-framework.org/select-policy"

enum { UV_TEXT = 1, UV_NAME, UV_OBJECTS, UV_PENDING, UV_CACHE, UV_EDITS, UV_WARNINGS, UV_COUNT = UV_WARNINGS };

struct mobj { size_t doc; size_t site_first, site_count; };

struct mstream {
    struct mstore st;
    struct mdoc *docs; size_t ndocs, capdocs;
    size_t *doc_obj;                 /* first object index of each document */
    size_t capdocobj;
    struct mobj *objs; size_t nobjs, capobjs;
    int is_json;
    int active_only;                 /* parse made descriptions of active objects only */
    size_t seam;                     /* where the second thread's documents began, or 0 */
};

static int stream_gc(lua_State *L)
{
    struct mstream *s = luaL_checkudata(L, 1, STREAM_MT);
    free(s->st.sites); free(s->st.ents); free(s->st.strs);
    free(s->docs); free(s->doc_obj); free(s->objs);
    memset(s, 0, sizeof *s);
    return 0;
}

/* ---- texts read from files ----
 *
 * manifest.read(path) keeps a file's bytes out of the Lua heap: a Lua string
 * of the input costs a second copy while it is made (peak RSS) and, for a
 * 100 MB stream, ~50,000 page faults (as long as libyaml's whole parse on a
 * virtual machine).  A big regular file is mapped (read-only, private, read
 * in order): the page cache's own pages, no copy and no zeroing (reading
 * 94 MB into fresh memory took 50-150 ms), handed back behind the parse and
 * behind the writer (fluence_release), so a stream's peak memory is what
 * fluence makes of it, not its text as well (94 MB: 159 -> 79 MiB).  Other
 * big inputs (stdin) live in anonymous memory advised to use huge pages,
 * read() into place.
 *
 * A mapped file truncated while fluence reads it ends the process with its
 * name and exit 3 (readfile.h's fluence_map); nothing reaches stdout before
 * the run ends. */
struct mtext { char *data; size_t len, cap; int mapped; };   /* mapped: 2 a file, 1 anonymous */

/* Maps fd's len bytes (readfile.h); 0 and t filled, or -1 (then read() it). */
static int text_map(struct mtext *t, int fd, size_t len, const char *path)
{
    const char *p = fluence_map(fd, len, path, 0);
    if (!p) return -1;
    t->data = (char *)p;
    t->len = t->cap = len;
    t->mapped = 2;
    return 0;
}

static void text_free(struct mtext *t)
{
    if (t->mapped == 2) fluence_unmap(t->data, t->cap);
    else if (t->mapped) munmap(t->data, t->cap);
    else free(t->data);
    t->data = NULL;
    t->len = t->cap = 0;
    t->mapped = 0;
}

static int text_gc(lua_State *L)
{
    text_free(luaL_checkudata(L, 1, TEXT_MT));
    return 0;
}

static int text_len(lua_State *L)
{
    lua_pushinteger(L, (lua_Integer)((struct mtext *)luaL_checkudata(L, 1, TEXT_MT))->len);
    return 1;
}

static int text_tostring(lua_State *L)
{
    struct mtext *t = luaL_checkudata(L, 1, TEXT_MT);
    lua_pushlstring(L, t->data ? t->data : "", t->len);
    return 1;
}

/* Room for need bytes (exactly, or doubling up to limit when grow).  0 or
 * an errno. */
static int text_reserve(struct mtext *t, size_t need, int grow, size_t limit)
{
    if (need <= t->cap) return 0;
    size_t cap = need;
    if (grow) {
        cap = t->cap ? t->cap : 65536;
        while (cap < need) {
            if (cap > ((size_t)-1) / 4) return ENOMEM;
            cap *= 2;
        }
        if (cap > limit) cap = limit > need ? limit : need;
    }
    if (cap < BIG_TEXT && !t->mapped) {
        char *q = realloc(t->data, cap);
        if (!q) return ENOMEM;
        t->data = q;
        t->cap = cap;
        return 0;
    }
    long page = sysconf(_SC_PAGESIZE);
    if (page > 0) cap = (cap + (size_t)page - 1) / (size_t)page * (size_t)page;
    char *q;
    if (t->mapped) {
        q = mremap(t->data, t->cap, cap, MREMAP_MAYMOVE);
        if (q == MAP_FAILED) return ENOMEM;
    } else {
        q = mmap(NULL, cap, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (q == MAP_FAILED) return ENOMEM;
        if (t->len) memcpy(q, t->data, t->len);
        free(t->data);
    }
#ifdef MADV_HUGEPAGE
    madvise(q, cap, MADV_HUGEPAGE);       /* a hint: fine if refused */
#endif
    t->data = q;
    t->cap = cap;
    t->mapped = 1;
    return 0;
}

/* Reads fd to its end, at most max bytes.  0, an errno, or EFBIG when there
 * is more. */
static int read_all(int fd, struct mtext *t, size_t hint, size_t max)
{
    size_t limit = max + 1;                      /* one byte more tells "too big" */
    int err = text_reserve(t, hint && hint <= max ? hint + 1 : 65536, 0, limit);   /* +1: EOF without growing */
    while (!err) {
        if (t->len > max) return EFBIG;
        if (t->cap - t->len < 4096 && t->cap < limit &&
            (err = text_reserve(t, t->len + 65536 < limit ? t->len + 65536 : limit, 1, limit)) != 0)
            break;
        size_t room = t->cap - t->len;
        if (room > limit - t->len) room = limit - t->len;
        ssize_t n = read(fd, t->data + t->len, room);
        if (n < 0) {
            if (errno == EINTR) continue;
            return errno;
        }
        if (n == 0) return 0;
        t->len += (size_t)n;
    }
    return err;
}

/* manifest.read(path) -> text | nil, "path: reason".  "-" reads stdin; a
 * directory is an error, so is an input over the size limit (as
 * sys.read_file).  A text is what manifest.parse takes besides a
 * string: #text is its length, tostring(text) a Lua string copy. */
static int m_read(lua_State *L)
{
    const char *path = luaL_checkstring(L, 1);
    struct mtext *t = lua_newuserdatauv(L, sizeof *t, 0);
    memset(t, 0, sizeof *t);
    luaL_setmetatable(L, TEXT_MT);
    int fd = strcmp(path, "-") == 0 ? 0 : open(path, O_RDONLY | O_CLOEXEC);
    int err = fd < 0 ? errno : 0;
    size_t max = fluence_max_input();
    struct stat st;
    size_t hint = 0;
    if (!err && fstat(fd, &st) == 0) {
        if (S_ISDIR(st.st_mode)) err = EISDIR;
        else if (S_ISREG(st.st_mode) && (size_t)st.st_size > max) err = EFBIG;
        else if (S_ISREG(st.st_mode) && st.st_size > 0) hint = (size_t)st.st_size;
    }
    if (!err && !(hint >= MAP_TEXT && fd > 0 && text_map(t, fd, hint, path) == 0))
        err = read_all(fd, t, hint, max);
    if (fd > 0) close(fd);
    if (err) {
        char why[FLUENCE_READ_WHY];
        fluence_read_reason(why, err, 0, max);
        text_free(t);
        lua_pushnil(L);
        fluence_push_read_error(L, path, why);
        return 2;
    }
    return 1;
}

/* The bytes of a text argument: a Lua string or a manifest text. */
static const char *check_text(lua_State *L, int idx, size_t *len)
{
    if (lua_type(L, idx) == LUA_TSTRING) return lua_tolstring(L, idx, len);
    struct mtext *t = luaL_testudata(L, idx, TEXT_MT);
    if (!t) luaL_typeerror(L, idx, "string or manifest text");
    *len = t->len;
    return t->data ? t->data : "";
}

/* The text at idx when it is a mapped file, whose pages go back to the
 * kernel as they are read (readfile.h's fluence_release), else NULL. */
static const struct mtext *mapped_file(lua_State *L, int idx)
{
    const struct mtext *t = lua_type(L, idx) == LUA_TSTRING ? NULL : luaL_testudata(L, idx, TEXT_MT);
    return t && t->mapped == 2 ? t : NULL;
}

/* ---- reading objects out of a tree ---- */

static void push_scalar_or_nil(lua_State *L, const struct mtree *t, size_t i)
{
    const char *s = mt_str(t, i);
    if (s && !mt_is_null(t, i)) {
        const struct mnode *n = mt_resolve(t, i, NULL);
        lua_pushlstring(L, s, n->len);
    } else lua_pushnil(L);
}

/* {key = scalar text} of a mapping; {} when absent or not a mapping */
/* Sets into the table on top the string entries of mapping i, as kubectl
 * reads them: in order, each assignment over the ones before (a key written
 * twice keeps its last value, a merge key's entries land where it stands;
 * of a merged list the first mapping wins); a null value removes the key. */
static void strmap_into(lua_State *L, const struct mtree *t, size_t i, int depth)
{
    luaL_checkstack(L, 8, "manifest");
    const struct mnode *m = mt_resolve(t, i, &i);
    if (!m || m->type != MN_MAP || depth > 8) return;
    for (size_t k = m->first; k; k = t->nodes[t->nodes[k].next].next) {
        size_t v = t->nodes[k].next;
        if (mt_is_merge_key(t, k)) {
            size_t src;
            const struct mnode *vn = mt_resolve(t, v, &src);
            if (vn->type == MN_MAP) strmap_into(L, t, src, depth + 1);
            else if (vn->type == MN_SEQ) {
                size_t items[64], n = 0;
                for (size_t c = vn->first; c && n < 64; c = t->nodes[c].next) items[n++] = c;
                while (n > 0) strmap_into(L, t, items[--n], depth + 1);
            }
            continue;
        }
        const struct mnode *kn = mt_resolve(t, k, NULL);
        const char *s = mt_str(t, v);
        lua_pushlstring(L, t->arena + kn->val, kn->len);
        if (!s || mt_is_null(t, v)) lua_pushnil(L);
        else lua_pushlstring(L, s, mt_resolve(t, v, NULL)->len);
        lua_rawset(L, -3);
    }
}

/* {key = scalar text} of a mapping; {} when absent or not a mapping */
static void push_strmap_depth(lua_State *L, const struct mtree *t, size_t i, int depth)
{
    lua_newtable(L);
    strmap_into(L, t, i, depth);
}

static void push_strmap(lua_State *L, const struct mtree *t, size_t i)
{
    push_strmap_depth(L, t, i, 0);
}

/* A whole number as kubectl reads it (0x10, 1e3 and 010 count: the API
 * server gets 16, 1000 and 8) */
static int get_int(const struct mtree *t, size_t i, lua_Integer *out)
{
    const struct mnode *n = mt_resolve(t, i, NULL);
    if (!n || n->type != MN_SCALAR) return 0;
    struct yk_value v;
    mt_kubectl(t, i, &v);
    if (v.kind == YK_INT) { *out = (lua_Integer)v.i; return 1; }
    if (v.kind == YK_FLOAT && v.d == (double)(long long)v.d && v.d > -9.2e18 && v.d < 9.2e18) {
        *out = (lua_Integer)v.d;
        return 1;
    }
    return 0;
}

static void set_int_field(lua_State *L, const struct mtree *t, size_t map, const char *key)
{
    lua_Integer v;
    if (get_int(t, mt_get(t, map, key, NULL), &v)) {
        lua_pushinteger(L, v);
        lua_setfield(L, -2, key);
    }
}

static int is_map(const struct mtree *t, size_t i) { const struct mnode *n = mt_resolve(t, i, NULL); return n && n->type == MN_MAP; }
static int is_seq(const struct mtree *t, size_t i) { const struct mnode *n = mt_resolve(t, i, NULL); return n && n->type == MN_SEQ; }

/* The shape of a pod template: a mapping whose spec has a containers list */
static int is_pod_template(const struct mtree *t, size_t i)
{
    if (!is_map(t, i)) return 0;
    size_t spec = mt_get(t, i, "spec", NULL);
    return is_map(t, spec) && is_seq(t, mt_get(t, spec, "containers", NULL));
}

/* The node at dotted path ("spec.schedulerName") from mapping m, or 0 */
static size_t get_path(const struct mtree *t, size_t m, const char *path)
{
    char key[64];
    while (m && *path) {
        const char *dot = strchr(path, '.');
        size_t n = dot ? (size_t)(dot - path) : strlen(path);
        if (n >= sizeof key || !is_map(t, m)) return 0;
        memcpy(key, path, n);
        key[n] = 0;
        m = mt_get(t, m, key, NULL);
        path += n + (dot != NULL);
    }
    return m;
}

/* The mapping holding the last key of path from m (resolved), or 0 */
static size_t get_parent(const struct mtree *t, size_t m, const char *path)
{
    const char *dot = strrchr(path, '.');
    if (!dot) { mt_resolve(t, m, &m); return m; }
    char head[128];
    size_t n = (size_t)(dot - path);
    if (n >= sizeof head) return 0;
    memcpy(head, path, n);
    head[n] = 0;
    size_t r = get_path(t, m, head);
    if (!is_map(t, r)) return 0;
    mt_resolve(t, r, &r);
    return r;
}
/* {key = 1-based byte offset of its value} of a mapping's own keys (not
 * those from merge keys), for errors that point at a value */
static void push_value_offsets(lua_State *L, const struct mtree *t, size_t i)
{
    lua_newtable(L);
    const struct mnode *m = mt_resolve(t, i, &i);
    if (!m || m->type != MN_MAP) return;
    for (size_t k = m->first; k; k = t->nodes[t->nodes[k].next].next) {
        const struct mnode *kn = mt_resolve(t, k, NULL);
        if (!mt_str(t, k)) continue;
        lua_pushlstring(L, t->arena + kn->val, kn->len);
        lua_pushinteger(L, (lua_Integer)t->nodes[t->nodes[k].next].start + 1);
        lua_rawset(L, -3);
    }
}

static void push_containers(lua_State *L, const struct mtree *t, size_t seq)
{
    lua_newtable(L);
    const struct mnode *s = mt_resolve(t, seq, NULL);
    if (!s || s->type != MN_SEQ) return;
    lua_Integer n = 0;
    for (size_t c = s->first; c; c = t->nodes[c].next) {
        if (!is_map(t, c)) continue;
        lua_createtable(L, 0, 4);
        push_scalar_or_nil(L, t, mt_get(t, c, "name", NULL));
        lua_setfield(L, -2, "name");
        size_t res = mt_get(t, c, "resources", NULL);
        size_t req = is_map(t, res) ? mt_get(t, res, "requests", NULL) : 0;
        push_strmap(L, t, req);
        lua_setfield(L, -2, "requests");
        push_value_offsets(L, t, req);
        lua_setfield(L, -2, "requests_at");
        push_strmap(L, t, is_map(t, res) ? mt_get(t, res, "limits", NULL) : 0);
        lua_setfield(L, -2, "limits");
        lua_newtable(L);                 /* env */
        const struct mnode *env = mt_resolve(t, mt_get(t, c, "env", NULL), NULL);
        if (env && env->type == MN_SEQ) {
            lua_newtable(L);             /* env_at: 1-based offset of each value */
            for (size_t e = env->first; e; e = t->nodes[e].next) {
                if (!is_map(t, e)) continue;
                const char *nm = mt_str(t, mt_get(t, e, "name", NULL));
                size_t v = mt_get(t, e, "value", NULL);
                if (!nm || !v || !mt_str(t, v)) continue;
                lua_pushstring(L, nm);
                push_scalar_or_nil(L, t, v);
                if (lua_isnil(L, -1)) { lua_pop(L, 1); lua_pushliteral(L, ""); }
                lua_rawset(L, -4);
                lua_pushinteger(L, (lua_Integer)t->nodes[v].start + 1);
                lua_setfield(L, -2, nm);
            }
            lua_setfield(L, -3, "env_at");
        }
        lua_setfield(L, -2, "env");
        lua_rawseti(L, -2, ++n);
    }
}

/* A pod fluence found in the object being read, to write its pin to */
struct tsite { size_t node; const char *meta; };

struct walk {
    struct mparse *p;
    struct strbuf *path;
    int templates;             /* stack index of the templates array */
    lua_Integer count;
    size_t obj;                /* the object */
    struct tsite *tnodes;      /* Fluence pods found (for sites) */
    size_t ntn, captn;
    size_t *held;              /* mappings holding a schedulerName a pod was read from */
    size_t nheld, capheld;
    int tpolicy;               /* a Fluence template carries a select-policy */
    int apolicy;               /* any template does */
    int group;                 /* the object has the group label */
    int by_shape;              /* every kind searched by shape (a spec's check of the table) */
};

static void hold(lua_State *L, struct walk *w, size_t map)
{
    if (!map) return;
    w->held = fluence_grow(L, w->held, &w->capheld, w->nheld + 1, sizeof *w->held);
    w->held[w->nheld++] = map;
}

/* Pushes the description of pod `node` (as `pod` says where its parts are)
 * into the templates; returns whether it targets Fluence (schedulerName
 * fluence, its own or inherited, or the group label). */
static int add_template(lua_State *L, struct walk *w, size_t node, const struct mk_pod *pod, int has_rep,
                        lua_Integer rep)
{
    const struct mtree *t = &w->p->tree;
    size_t meta = mt_get(t, node, pod->meta, NULL);
    lua_createtable(L, 0, 8);
    lua_pushlstring(L, w->path->data ? w->path->data : "", w->path->len);
    lua_setfield(L, -2, "path");
    size_t sched = get_path(t, node, pod->scheduler);
    hold(L, w, get_parent(t, node, pod->scheduler));
    if (pod->inherit) {
        hold(L, w, get_parent(t, w->obj, pod->inherit));
        if (!sched || mt_is_null(t, sched)) sched = get_path(t, w->obj, pod->inherit);
    }
    push_scalar_or_nil(L, t, sched);
    int fluence = lua_isstring(L, -1) && strcmp(lua_tostring(L, -1), "fluence") == 0;
    lua_setfield(L, -2, "scheduler_name");
    push_strmap(L, t, is_map(t, meta) ? mt_get(t, meta, "annotations", NULL) : 0);
    int policy = lua_getfield(L, -1, SELECT_POLICY) != LUA_TNIL;
    lua_pop(L, 1);
    lua_setfield(L, -2, "annotations");
    push_strmap(L, t, is_map(t, meta) ? mt_get(t, meta, "labels", NULL) : 0);
    if (lua_getfield(L, -1, GROUP_LABEL) != LUA_TNIL || (pod->group && w->group)) fluence = 1;
    lua_pop(L, 1);
    lua_setfield(L, -2, "labels");
    if (fluence && policy) w->tpolicy = 1;
    if (policy) w->apolicy = 1;
    lua_pushboolean(L, fluence);
    lua_setfield(L, -2, "targets_fluence");
    size_t containers = pod->containers ? get_path(t, node, pod->containers) : 0;
    size_t holder = pod->containers ? get_parent(t, node, pod->containers) : 0;
    push_containers(L, t, containers);
    lua_setfield(L, -2, "containers");
    push_containers(L, t, holder ? mt_get(t, holder, "initContainers", NULL) : 0);
    lua_setfield(L, -2, "init_containers");
    if (has_rep) { lua_pushinteger(L, rep); lua_setfield(L, -2, "replicas"); }
    lua_rawseti(L, w->templates, ++w->count);
    if (fluence && node != w->obj) {
        w->tnodes = fluence_grow(L, w->tnodes, &w->captn, w->ntn + 1, sizeof *w->tnodes);
        w->tnodes[w->ntn].node = node;
        w->tnodes[w->ntn++].meta = pod->meta;
    }
    return fluence;
}

/* Could mapping m have a "parallelism" or "replicas" key (or a merge key
 * bringing one)?  One cheap pass before two full lookups. */
static int may_have_rep(const struct mtree *t, const struct mnode *m)
{
    for (size_t k = m->first; k; k = t->nodes[t->nodes[k].next].next) {
        const struct mnode *kn = mt_resolve(t, k, NULL);
        if ((kn->len == 11 || kn->len == 8 || kn->len == 2) && kn->type == MN_SCALAR) {
            const char *s = t->arena + kn->val;
            if (s[0] == 'p' || s[0] == 'r' || s[0] == '<') return 1;
        }
    }
    return 0;
}

/* The nearest enclosing replica count: mapping i's parallelism or replicas */
static void replicas_of(const struct mtree *t, size_t i, int *has_rep, lua_Integer *rep)
{
    lua_Integer v;
    if (may_have_rep(t, &t->nodes[i]) &&
        (get_int(t, mt_get(t, i, "parallelism", NULL), &v) || get_int(t, mt_get(t, i, "replicas", NULL), &v))) {
        *has_rep = 1;
        *rep = v;
    }
}

static void path_key(lua_State *L, struct walk *w, const char *k, size_t n)
{
    if (w->path->len) strbuf_addc(L, w->path, '.');
    strbuf_add(L, w->path, k, n);
}

static void path_index(lua_State *L, struct walk *w, size_t idx)
{
    char buf[32];
    snprintf(buf, sizeof buf, "[%zu]", idx);
    strbuf_adds(L, w->path, buf);
}

/* Unknown kinds: every pod template by its shape, at any depth, under any
 * key (the object itself was looked at first). */
static void walk(lua_State *L, struct walk *w, size_t i, int has_rep, lua_Integer rep, int depth)
{
    const struct mtree *t = &w->p->tree;
    const struct mnode *n = &t->nodes[i];
    if (depth > 300) return;
    if (n->type == MN_MAP) {
        replicas_of(t, i, &has_rep, &rep);
        for (size_t k = n->first; k; k = t->nodes[t->nodes[k].next].next) {
            const struct mnode *kn = mt_resolve(t, k, NULL);
            size_t v2 = t->nodes[k].next, save = w->path->len;
            path_key(L, w, t->arena + kn->val, kn->len);
            if (t->nodes[v2].type == MN_MAP && is_pod_template(t, v2)) add_template(L, w, v2, &mk_pod_template, has_rep, rep);
            else walk(L, w, v2, has_rep, rep, depth + 1);
            w->path->len = save;
        }
    } else if (n->type == MN_SEQ) {
        size_t idx = 0;
        for (size_t c = n->first; c; c = t->nodes[c].next, idx++) {
            size_t save = w->path->len;
            path_index(L, w, idx);
            if (t->nodes[c].type == MN_MAP && is_pod_template(t, c)) add_template(L, w, c, &mk_pod_template, has_rep, rep);
            else walk(L, w, c, has_rep, rep, depth + 1);
            w->path->len = save;
        }
    }
}

/* Known kinds: the pods at pod->at ("a.b", "a[]" every item, "*" every
 * value), rest being what is left of it from mapping i */
static void follow(lua_State *L, struct walk *w, size_t i, const char *rest, const struct mk_pod *pod, int has_rep,
                   lua_Integer rep)
{
    const struct mtree *t = &w->p->tree;
    const struct mnode *n = mt_resolve(t, i, &i);
    if (!n || n->type != MN_MAP) return;
    if (!*rest) { add_template(L, w, i, pod, has_rep, rep); return; }
    replicas_of(t, i, &has_rep, &rep);
    const char *dot = strchr(rest, '.');
    size_t len = dot ? (size_t)(dot - rest) : strlen(rest);
    const char *next = dot ? dot + 1 : "";
    int each = len > 2 && rest[len - 2] == '[' && rest[len - 1] == ']';
    if (each) len -= 2;
    size_t save = w->path->len;
    if (len == 1 && rest[0] == '*') {
        for (size_t k = n->first; k; k = t->nodes[t->nodes[k].next].next) {
            const struct mnode *kn = mt_resolve(t, k, NULL);
            path_key(L, w, t->arena + kn->val, kn->len);
            follow(L, w, t->nodes[k].next, next, pod, has_rep, rep);
            w->path->len = save;
        }
        return;
    }
    char key[64];
    if (len >= sizeof key) return;
    memcpy(key, rest, len);
    key[len] = 0;
    size_t v = mt_get(t, i, key, NULL);
    if (!v) return;
    path_key(L, w, key, len);
    if (!each) follow(L, w, v, next, pod, has_rep, rep);
    else if (is_seq(t, v)) {
        size_t idx = 0, vr;
        mt_resolve(t, v, &vr);
        for (size_t c = t->nodes[vr].first; c; c = t->nodes[c].next, idx++) {
            size_t s2 = w->path->len;
            path_index(L, w, idx);
            follow(L, w, c, next, pod, has_rep, rep);
            w->path->len = s2;
        }
    }
    w->path->len = save;
}

/* Writes the path from mapping `from` to node `target` into w->path; 1 when found */
static int path_to(lua_State *L, struct walk *w, size_t from, size_t target, int depth)
{
    const struct mtree *t = &w->p->tree;
    const struct mnode *n = &t->nodes[from];
    if (depth > 300) return 0;
    size_t save = w->path->len, idx = 0;
    if (n->type == MN_MAP) {
        for (size_t k = n->first; k; k = t->nodes[t->nodes[k].next].next) {
            const struct mnode *kn = mt_resolve(t, k, NULL);
            size_t v = t->nodes[k].next;
            path_key(L, w, t->arena + kn->val, kn->len);
            if (v == target || path_to(L, w, v, target, depth + 1)) return 1;
            w->path->len = save;
        }
    } else if (n->type == MN_SEQ) {
        for (size_t c = n->first; c; c = t->nodes[c].next, idx++) {
            path_index(L, w, idx);
            if (c == target || path_to(L, w, c, target, depth + 1)) return 1;
            w->path->len = save;
        }
    }
    return 0;
}

/* An object asking for a selection whose schedulerName: fluence is not
 * where fluence read a pod from: its pods would get no pin, so say so.
 * Pushes {{path =, message =}, ...} (empty when all is well). */
static void push_unpinned(lua_State *L, struct walk *w, size_t obj, int asks)
{
    const struct mtree *t = &w->p->tree;
    lua_newtable(L);
    if (!asks) return;
    size_t from = t->nodes[obj].start, to = t->nodes[obj].end;
    lua_Integer n = 0;
    for (size_t i = obj; i < t->n && n < 16; i++) {
        const struct mnode *m = &t->nodes[i];
        if (m->start >= to) break;
        if (m->type != MN_MAP || m->start < from) continue;
        size_t v = mt_get(t, i, "schedulerName", NULL);
        const char *name = v ? mt_str(t, v) : NULL;
        if (!name || strcmp(name, "fluence") != 0) continue;
        int known = 0;
        for (size_t h = 0; h < w->nheld && !known; h++) known = w->held[h] == i;
        if (known) continue;
        w->path->len = 0;
        if (i != obj && !path_to(L, w, obj, i, 0)) continue;      /* reached through an alias only */
        path_key(L, w, "schedulerName", 13);
        char shown[200];
        fluence_escape_into(shown, sizeof shown, w->path->data, w->path->len, 0);
        lua_createtable(L, 0, 2);
        lua_pushstring(L, shown);
        lua_setfield(L, -2, "path");
        lua_pushstring(L, shown);
        lua_pushliteral(L, " is fluence, but fluence finds no pod there to pin (a pod template is a mapping "
                        "whose spec has a containers list; docs/kubernetes.md lists where known kinds keep "
                        "theirs): its pods get no require-backend");
        lua_concat(L, 2);
        lua_setfield(L, -2, "message");
        lua_rawseti(L, -2, ++n);
    }
}

static int tnodes_gc(lua_State *L)
{
    struct walk *w = lua_touserdata(L, 1);
    free(w->tnodes);
    free(w->held);
    w->tnodes = NULL;
    w->held = NULL;
    return 0;
}

/* The indentation step of an object: the first nested mapping's offset. */
static uint32_t guess_step(const struct mtree *t, size_t root)
{
    const struct mnode *m = &t->nodes[root];
    for (size_t k = m->first; k; k = t->nodes[t->nodes[k].next].next) {
        const struct mnode *v = &t->nodes[t->nodes[k].next];
        if (v->type == MN_MAP && v->first && t->nodes[v->first].line != t->nodes[k].line &&
            t->nodes[v->first].col > t->nodes[k].col)
            return t->nodes[v->first].col - t->nodes[k].col;
    }
    return 2;
}

/* Adds object `node` of the current document: its Lua description (appended
 * to the objects table at index objs) and its annotation sites. */
static void add_object(lua_State *L, struct mstream *s, struct mparse *p, struct walk *w, size_t docidx,
                       size_t node, int objs, int crlf)
{
    const struct mtree *t = &p->tree;
    const struct mnode *n = &t->nodes[node];
    size_t index = s->nobjs + 1;
    s->objs = fluence_grow(L, s->objs, &s->capobjs, s->nobjs + 1, sizeof *s->objs);
    struct mobj *o = &s->objs[s->nobjs++];
    o->doc = docidx;
    o->site_first = s->st.nsites;
    luaL_checkstack(L, 20, "manifest");
    lua_createtable(L, 0, 16);         /* the fields below: 16 slots, not 32 */
    int obj = lua_gettop(L);
    lua_pushinteger(L, (lua_Integer)index);
    lua_setfield(L, obj, "index");
    static const char *const ident[] = {"kind", "apiVersion", NULL};
    for (int i = 0; ident[i]; i++) {
        push_scalar_or_nil(L, t, mt_get(t, node, ident[i], NULL));
        lua_setfield(L, obj, ident[i]);
    }
    size_t meta = mt_get(t, node, "metadata", NULL);
    int meta_map = is_map(t, meta);
    static const char *const mident[] = {"name", "namespace", "generateName", NULL};
    for (int i = 0; mident[i]; i++) {
        push_scalar_or_nil(L, t, meta_map ? mt_get(t, meta, mident[i], NULL) : 0);
        lua_setfield(L, obj, mident[i]);
    }
    lua_pushinteger(L, (lua_Integer)n->line + 1);
    lua_setfield(L, obj, "line");
    lua_pushinteger(L, (lua_Integer)n->col + 1);
    lua_setfield(L, obj, "col");
    push_strmap(L, t, meta_map ? mt_get(t, meta, "annotations", NULL) : 0);
    int has_policy = lua_getfield(L, -1, SELECT_POLICY) != LUA_TNIL;
    lua_pop(L, 1);
    lua_setfield(L, obj, "annotations");
    push_strmap(L, t, meta_map ? mt_get(t, meta, "labels", NULL) : 0);
    int fluence = lua_getfield(L, -1, GROUP_LABEL) != LUA_TNIL;
    lua_pop(L, 1);
    lua_setfield(L, obj, "labels");
    size_t spec = mt_get(t, node, "spec", NULL);
    if (is_map(t, spec)) {
        lua_pushvalue(L, obj);
        set_int_field(L, t, spec, "replicas");
        set_int_field(L, t, spec, "parallelism");
        set_int_field(L, t, spec, "completions");
        set_int_field(L, t, spec, "activeDeadlineSeconds");   /* a Job's or a Pod's: hourly prices */
        lua_pop(L, 1);
    }
    /* pods: a known kind's where its table entry says (manifest_kinds.c);
     * any other kind's by shape, the object itself when it has
     * spec.containers, then every pod template at any depth */
    lua_newtable(L);
    w->p = p;
    w->templates = lua_gettop(L);
    w->count = 0;
    w->ntn = w->nheld = 0;
    w->tpolicy = w->apolicy = 0;
    w->obj = node;
    w->group = fluence;
    w->path->len = 0;
    const struct mk_kind *known = w->by_shape ? NULL : mk_find(mt_str(t, mt_get(t, node, "apiVersion", NULL)),
                                                               mt_str(t, mt_get(t, node, "kind", NULL)));
    if (known) {
        for (const struct mk_pod *pod = known->pods; pod->at; pod++) {
            w->path->len = 0;
            fluence |= pod->at[0] ? (follow(L, w, node, pod->at, pod, 0, 0), 0) : add_template(L, w, node, pod, 0, 0);
        }
    } else {
        if (is_pod_template(t, node)) fluence |= add_template(L, w, node, &mk_pod_template, 0, 0);
        walk(L, w, node, 0, 0, 0);
    }
    if (w->ntn) fluence = 1;
    /* a select-policy on a Fluence pod template counts as one on the object
     * (where many users put scheduler annotations; the object's wins) */
    has_policy |= w->tpolicy;
    /* a Fluence object must have the shape fluence reads: metadata as a list
     * or spec.template as a string is bad input, not a silent pass-through */
    struct mshape sh;
    ms_check(t, node, &sh);
    int ours = fluence || sh.scheduler;
    if ((ours || has_policy) && sh.err[1].msg[0]) mp_error(L, p, sh.err[1].at, sh.err[1].msg);
    if (ours && sh.err[0].msg[0]) mp_error(L, p, sh.err[0].at, sh.err[0].msg);
    lua_pushvalue(L, w->templates);
    lua_setfield(L, obj, "templates");
    lua_pushboolean(L, fluence);
    lua_setfield(L, obj, "targets_fluence");
    lua_pushboolean(L, fluence && has_policy);
    lua_setfield(L, obj, "wants_selection");
    push_unpinned(L, w, node, has_policy || w->apolicy);
    lua_setfield(L, obj, "unpinned");
    /* sites: the object, then every Fluence-targeting template */
    uint32_t step = guess_step(t, node);
    me_sites_for(L, p, &s->st, (int)index - 1, node, "metadata", crlf, step);
    for (size_t i = 0; i < w->ntn; i++)
        me_sites_for(L, p, &s->st, (int)index - 1, w->tnodes[i].node, w->tnodes[i].meta, crlf, step);
    o = &s->objs[s->nobjs - 1];
    o->site_count = s->st.nsites - o->site_first;
    if (fluence && has_policy) {
        for (size_t i = o->site_first; i < s->st.nsites; i++)
            if (s->st.sites[i].mode == SITE_ERROR) mp_error(L, p, s->st.sites[i].errpos, s->st.sites[i].errmsg);
    }
    lua_pop(L, 1);                                  /* templates */
    /* No JSON text here: most runs never need it, and for a 100 MB stream it
     * doubled the memory.  stream:object_json(i) makes it on demand. */
    lua_rawseti(L, objs, (lua_Integer)lua_rawlen(L, objs) + 1);   /* (after inert objects: not index) */
}

/* Calls f(node) for each object of the document (the root, or the items of
 * a *List); raises for a document that is not an object. */
static int list_items(const struct mtree *t, size_t root, size_t *items)
{
    const char *kind = mt_str(t, mt_get(t, root, "kind", NULL));
    size_t kl = kind ? strlen(kind) : 0;
    *items = mt_get(t, root, "items", NULL);
    return kind && kl >= 4 && strcmp(kind + kl - 4, "List") == 0 && is_seq(t, *items);
}

static int doc_crlf(const char *text, size_t len, size_t from, size_t to)
{
    const char *nl = memchr(text + from, '\n', to - from);
    if (!nl) nl = memchr(text, '\n', len);
    return nl && nl > text && nl[-1] == '\r';
}

/* Could an object of this document take part in a selection (target
 * Fluence, carry a select-policy)?  Only if the document has, anywhere, a
 * select-policy or group key, or a schedulerName "fluence" -- what every
 * such object has on one of the paths add_object reads (aliases and merge
 * keys point inside the document, so the whole of it is searched). */
static int doc_maybe_active(const struct mtree *t)
{
    static const size_t lp = sizeof SELECT_POLICY - 1, lg = sizeof GROUP_LABEL - 1;
    for (size_t i = 1; i < t->n; i++) {
        const struct mnode *m = &t->nodes[i];
        if (m->type != MN_MAP) continue;
        for (size_t k = m->first; k; k = t->nodes[t->nodes[k].next].next) {
            const struct mnode *kn = mt_resolve(t, k, NULL);
            if (!kn || kn->type != MN_SCALAR) continue;
            const char *ks = t->arena + kn->val;
            if ((kn->len == lp && memcmp(ks, SELECT_POLICY, lp) == 0) ||
                (kn->len == lg && memcmp(ks, GROUP_LABEL, lg) == 0))
                return 1;
            if (kn->len == 13 && memcmp(ks, "schedulerName", 13) == 0) {
                const char *v = mt_str(t, t->nodes[k].next);
                if (v && strcmp(v, "fluence") == 0) return 1;
            }
        }
    }
    return 0;
}

/* Could the nodes starting in bytes [from, to) be part of a selection:
 * do they hold a select-policy or group key, or schedulerName: fluence? */
static int range_maybe_active(const struct mtree *t, size_t from, size_t to)
{
    static const size_t lp = sizeof SELECT_POLICY - 1, lg = sizeof GROUP_LABEL - 1;
    for (size_t i = 1; i < t->n; i++) {
        const struct mnode *m = &t->nodes[i];
        if (m->type != MN_MAP || m->start < from || m->start >= to) continue;
        for (size_t k = m->first; k; k = t->nodes[t->nodes[k].next].next) {
            const struct mnode *kn = mt_resolve(t, k, NULL);
            if (!kn || kn->type != MN_SCALAR) continue;
            const char *ks = t->arena + kn->val;
            if ((kn->len == lp && memcmp(ks, SELECT_POLICY, lp) == 0) || (kn->len == lg && memcmp(ks, GROUP_LABEL, lg) == 0))
                return 1;
            if (kn->len == 13 && memcmp(ks, "schedulerName", 13) == 0) {
                const char *v = mt_str(t, t->nodes[k].next);
                if (v && strcmp(v, "fluence") == 0) return 1;
            }
        }
    }
    return 0;
}

/* Keys written twice in the document just read (t->dups).  kubectl keeps
 * the last and says nothing; in an object that could take part in a
 * selection fluence refuses to guess which was meant (bad input, located);
 * anywhere else the document passes through unchanged, with a warning (the
 * first duplicate of each object; its JSON keeps the last, as kubectl's). */
static void duplicates(lua_State *L, struct mparse *p, size_t root)
{
    const struct mtree *t = &p->tree;
    size_t said_end = 0;
    int warned = 0;
    for (size_t i = 0; i < t->ndups; i++) {
        size_t k = t->dups[i], at = t->nodes[k].start;
        /* the object it is in: the document's, or a List's item */
        size_t from = t->nodes[root].start, to = t->nodes[root].end;
        size_t items;
        if (list_items(t, root, &items)) {
            for (size_t c = mt_resolve(t, items, NULL)->first; c; c = t->nodes[c].next)
                if (at >= t->nodes[c].start && at < t->nodes[c].end) { from = t->nodes[c].start; to = t->nodes[c].end; }
        }
        const struct mnode *kn = mt_resolve(t, k, NULL);
        char key[96];
        fluence_escape_into(key, sizeof key, t->arena + kn->val, kn->len, 0);
        if (range_maybe_active(t, from, to)) {
            lua_pushfstring(L, "duplicate key \"%s\" in a Fluence object: kubectl would keep the last one; "
                            "say which one you mean", key);
            mp_error(L, p, at, lua_tostring(L, -1));
        }
        if (warned && to <= said_end) continue;          /* one warning per object */
        warned = 1;
        said_end = to;
        lua_pushfstring(L, "duplicate key \"%s\": kubectl keeps the last one; passed through unchanged", key);
        mp_locate(L, p, at, lua_tostring(L, -1));
        lua_getiuservalue(L, 3, UV_WARNINGS);
        lua_insert(L, -2);
        lua_rawseti(L, -2, (lua_Integer)lua_rawlen(L, -2) + 1);
        lua_pop(L, 2);
    }
}

/* An object that takes no part in a selection, in a parse of active objects
 * only: its place (index, document), no description, no annotation sites
 * (nothing writes to it). */
static void add_inert(lua_State *L, struct mstream *s, size_t docidx)
{
    s->objs = fluence_grow(L, s->objs, &s->capobjs, s->nobjs + 1, sizeof *s->objs);
    struct mobj *o = &s->objs[s->nobjs++];
    o->doc = docidx;
    o->site_first = s->st.nsites;
    o->site_count = 0;
}

/* What the second thread keeps of a document (manifest_split.h): its tree
 * when parse reads it (any object, or only one that may be active, a List,
 * a document that is not a mapping, or one with a key written twice), else
 * its place. */
static int doc_classify(const struct mtree *t, size_t root, int active_only)
{
    size_t items;
    const struct mnode *r = mt_resolve(t, root, NULL);
    if (!active_only || t->ndups || r->type != MN_MAP || list_items(t, root, &items) || doc_maybe_active(t))
        return MS_TREE;
    return MS_INERT;
}

/* Adds document d: kind MS_TREE reads p's tree (the main parser's, or a
 * view of one the second thread kept); MS_EMPTY, MS_INERT need no tree. */
static void take_doc(lua_State *L, struct mstream *s, struct mparse *p, struct walk *w,
                     const struct mdoc *d, int kind)
{
    s->docs = fluence_grow(L, s->docs, &s->capdocs, s->ndocs + 1, sizeof *s->docs);
    s->doc_obj = fluence_grow(L, s->doc_obj, &s->capdocobj, s->ndocs + 1, sizeof *s->doc_obj);
    size_t di = s->ndocs++;
    s->docs[di] = *d;
    s->doc_obj[di] = s->nobjs;
    if (kind == MS_EMPTY) return;
    if (kind == MS_INERT) { add_inert(L, s, di); return; }
    const struct mtree *t = &p->tree;
    if (!d->root || mt_is_null(t, d->root)) return;
    const struct mnode *r = mt_resolve(t, d->root, NULL);
    if (r->type != MN_MAP) mp_error(L, p, t->nodes[d->root].start, "a manifest document must be a mapping (a Kubernetes object)");
    int crlf = doc_crlf(p->text, p->len, d->start, d->end);
    int inert = s->active_only && !doc_maybe_active(t);
    size_t items;
    if (list_items(t, d->root, &items)) {
        for (size_t c = mt_resolve(t, items, NULL)->first; c; c = t->nodes[c].next) {
            if (t->nodes[c].type != MN_MAP) mp_error(L, p, t->nodes[c].start, "a List item must be a mapping (a Kubernetes object)");
            if (inert) add_inert(L, s, di); else add_object(L, s, p, w, di, c, 4, crlf);
        }
    } else if (inert) add_inert(L, s, di);
    else add_object(L, s, p, w, di, d->root, 4, crlf);
    if (t->ndups) duplicates(L, p, d->root);
}

/* Where a stream splits between two threads (manifest_split.h), from
 * manifest.parse's split option: -1 the middle of a large stream, -2 never,
 * else the first document start at or after that byte, whatever the size. */
static size_t choose_seam(const char *text, size_t len, lua_Integer from)
{
    if (from >= 0) return ms_find_seam(text, len, (size_t)from);
    if (from != -1) return 0;
    /* FLUENCE_MANIFEST_SPLIT: the size from which to split; 0 never */
    const char *v = getenv("FLUENCE_MANIFEST_SPLIT");
    char *end = NULL;
    long long min = v && *v ? strtoll(v, &end, 10) : -1;
    if (end && *end) min = -1;                       /* not a number: the default */
    size_t at_least = min < 0 ? MS_MIN_LEN : (size_t)min;
    if (min == 0 || len < at_least) return 0;
    return ms_find_seam(text, len, len / 2);
}

static int parse_protected(lua_State *L)
{
    size_t len;
    const char *text = check_text(L, 1, &len);
    const char *name = lua_tostring(L, 2);
    int active_only = lua_toboolean(L, 3), by_shape = lua_toboolean(L, 4);
    struct msplit *ms = lua_touserdata(L, 5);         /* NULL: one thread */
    lua_Integer split_from = lua_isinteger(L, 6) ? lua_tointeger(L, 6) : -2;
    lua_settop(L, 2);
    struct mstream *s = lua_newuserdatauv(L, sizeof *s, UV_COUNT);   /* 3 */
    memset(s, 0, sizeof *s);
    s->active_only = active_only;
    luaL_setmetatable(L, STREAM_MT);
    lua_pushvalue(L, 1); lua_setiuservalue(L, 3, UV_TEXT);
    lua_pushvalue(L, 2); lua_setiuservalue(L, 3, UV_NAME);
    lua_newtable(L); lua_setiuservalue(L, 3, UV_PENDING);
    lua_newtable(L); lua_setiuservalue(L, 3, UV_CACHE);
    lua_newtable(L); lua_setiuservalue(L, 3, UV_WARNINGS);
    lua_newtable(L);                                                  /* 4: objects */
    lua_pushvalue(L, 4); lua_setiuservalue(L, 3, UV_OBJECTS);
    struct mparse *p = mp_push(L, name, text, len);                   /* 5 */
    struct walk *w = lua_newuserdatauv(L, sizeof *w, 0);              /* 6: for every object */
    memset(w, 0, sizeof *w);
    lua_newtable(L);
    lua_pushcfunction(L, tnodes_gc);
    lua_setfield(L, -2, "__gc");
    lua_setmetatable(L, -2);
    w->path = strbuf_push(L);                                         /* 7 */
    w->by_shape = by_shape;
    size_t i = (len >= 3 && memcmp(text, "\xEF\xBB\xBF", 3) == 0) ? 3 : 0;
    while (i < len && strchr(" \t\r\n", text[i])) i++;
    s->is_json = i < len && (text[i] == '{' || text[i] == '[');
    struct mdoc d;
    /* a mapped file's pages go back as the parse leaves them behind: a
     * 94 MB stream's peak memory is its objects, not its text as well */
    int mapped = mapped_file(L, 1) != NULL;
    size_t released = 0;
    size_t seam = ms && !s->is_json ? choose_seam(text, len, split_from) : 0;
    if (seam && ms_start(ms, name, text, len, seam, active_only, mapped, doc_classify) != 0) seam = 0;
    while (mp_next_doc(L, p, &d)) {
        if (mapped) fluence_release_behind(text, &released, d.end);
        take_doc(L, s, p, w, &d, MS_TREE);
        if (!seam || d.end < seam) continue;
        /* the seam: the second thread's documents are the sequential
         * parse's when a document ends exactly there, that thread met no
         * error or limit, and both halves' aliases fit the stream's budget */
        if (d.end == seam) ms_join(ms);
        if (d.end != seam || ms->failed || p->expanded + ms->p.expanded > p->budget) {
            ms_free(ms);
            seam = 0;
            continue;
        }
        struct mparse view;                /* the whole text, a kept tree */
        memset(&view, 0, sizeof view);
        view.name = p->name;
        view.text = p->text;
        view.len = p->len;
        for (size_t k = 0; k < ms->ndocs; k++) {
            struct msdoc *md = &ms->docs[k];
            ms_shift(md, seam, p->prev_line);
            if (mapped) fluence_release_behind(text, &released, md->d.end);
            view.tree = md->tree;
            take_doc(L, s, &view, w, &md->d, md->kind);
        }
        s->seam = seam;
        break;
    }
    mp_free(p);
    lua_settop(L, 3);
    return 1;
}

/* manifest.indent_json(text [, indent [, depth]]) -> text: compact JSON
 * (stream:object_json's) indented, its numbers and strings as they are */
static int m_indent_json(lua_State *L)
{
    size_t len;
    const char *s = luaL_checklstring(L, 1, &len);
    int indent = (int)luaL_optinteger(L, 2, 4), depth = (int)luaL_optinteger(L, 3, 0);
    luaL_argcheck(L, indent >= 0 && indent <= 16, 2, "indent out of range");
    luaL_argcheck(L, depth >= 0 && depth <= 64, 3, "depth out of range");
    struct strbuf *b = strbuf_push(L);
    mj_indent(L, b, s, len, indent, depth);
    strbuf_pushresult(L, b);
    return 1;
}

static int m_parse(lua_State *L)
{
    size_t len;
    check_text(L, 1, &len);
    int active_only = 0, by_shape = 0;
    lua_Integer split = -1;
    if (lua_istable(L, 3)) {
        lua_getfield(L, 3, "active_only");
        active_only = lua_toboolean(L, -1);
        lua_getfield(L, 3, "by_shape");
        by_shape = lua_toboolean(L, -1);
        int t = lua_getfield(L, 3, "split");
        if (t == LUA_TBOOLEAN && !lua_toboolean(L, -1)) split = -2;
        else if (t == LUA_TNUMBER && lua_isinteger(L, -1) && lua_tointeger(L, -1) >= 1)
            split = lua_tointeger(L, -1) - 1;
        else if (t != LUA_TNIL) luaL_argerror(L, 3, "split: false or a byte position (1-based)");
    }
    if (lua_isnoneornil(L, 2)) { lua_settop(L, 1); lua_pushliteral(L, "<manifest>"); }
    luaL_checkstring(L, 2);
    lua_settop(L, 2);
    lua_pushboolean(L, active_only);
    lua_pushboolean(L, by_shape);
    /* the second thread's state lives in this frame: whatever parse does,
     * the thread is stopped and joined before m_parse returns */
    struct msplit ms;
    memset(&ms, 0, sizeof ms);
    lua_pushlightuserdata(L, &ms);
    lua_pushinteger(L, split);
    lua_pushcfunction(L, parse_protected);
    lua_insert(L, 1);
    int st = lua_pcall(L, 6, 1, 0);
    ms_free(&ms);
    if (st != LUA_OK) {
        if (st == LUA_ERRMEM || !lua_isstring(L, -1)) return lua_error(L);
        lua_pushnil(L);
        lua_insert(L, -2);
        return 2;
    }
    return 1;
}

/* ---- stream methods ---- */

static int s_objects(lua_State *L);
static struct mstream *check_stream(lua_State *L);

/* stream:seam() -> the byte (1-based) where the documents parsed on a
 * second thread began, or nil when one thread read the whole stream */
static int s_seam(lua_State *L)
{
    struct mstream *s = check_stream(L);
    if (s->seam) lua_pushinteger(L, (lua_Integer)s->seam + 1); else lua_pushnil(L);
    return 1;
}

/* stream:active() -> descriptions of at least every object that targets
 * Fluence or asks for a selection (after a parse with active_only: those
 * parse made, handed over once; otherwise or later: every object's). */
static int s_active(lua_State *L)
{
    check_stream(L);
    lua_settop(L, 1);
    if (lua_getiuservalue(L, 1, UV_OBJECTS) == LUA_TTABLE) {
        lua_pushnil(L);
        lua_setiuservalue(L, 1, UV_OBJECTS);
        return 1;
    }
    lua_settop(L, 1);
    return s_objects(L);
}

static struct mstream *check_stream(lua_State *L) { return luaL_checkudata(L, 1, STREAM_MT); }

/* The first call hands over the tables parse built (nobody else holds
 * them, and copying 20,000 objects cost as much as building them); every
 * later call parses the text again for tables of its own.  So each call
 * still returns tables its caller alone may change. */
static int s_objects(lua_State *L)
{
    struct mstream *s = check_stream(L);
    lua_settop(L, 1);
    /* parse's own tables, unless it made those of active objects only */
    if (!s->active_only && lua_getiuservalue(L, 1, UV_OBJECTS) == LUA_TTABLE) {
        lua_pushnil(L);
        lua_setiuservalue(L, 1, UV_OBJECTS);
        return 1;
    }
    lua_settop(L, 1);
    lua_pushcfunction(L, parse_protected);
    lua_getiuservalue(L, 1, UV_TEXT);
    lua_getiuservalue(L, 1, UV_NAME);
    lua_call(L, 2, 1);
    lua_getiuservalue(L, -1, UV_OBJECTS);
    return 1;
}

/* stream:warnings() -> {"name:LINE:COL: message\n    line\n    ^", ...}:
 * what parse found that passes through but deserves a word (a key written
 * twice outside Fluence objects) */
static int s_warnings(lua_State *L)
{
    check_stream(L);
    lua_getiuservalue(L, 1, UV_WARNINGS);
    lua_newtable(L);
    for (lua_Integer i = 1; lua_rawgeti(L, -2, i) != LUA_TNIL; i++) lua_rawseti(L, -2, i);
    lua_pop(L, 1);
    return 1;
}

static int s_is_json(lua_State *L)
{
    lua_pushboolean(L, check_stream(L)->is_json);
    return 1;
}

static size_t check_index(lua_State *L, struct mstream *s, int arg)
{
    lua_Integer i = luaL_checkinteger(L, arg);
    luaL_argcheck(L, i >= 1 && (size_t)i <= s->nobjs, arg, "no such object");
    return (size_t)i;
}

static void push_located(lua_State *L, size_t byte, const char *msg)
{
    struct mparse tmp;
    memset(&tmp, 0, sizeof tmp);
    lua_getiuservalue(L, 1, UV_TEXT);
    tmp.text = check_text(L, -1, &tmp.len);
    lua_getiuservalue(L, 1, UV_NAME);
    tmp.name = lua_tostring(L, -1);
    mp_locate(L, &tmp, byte, msg);
    lua_replace(L, -3);
    lua_pop(L, 1);
}

/* Pending annotations are kept per object and scope: pending[i][SCOPE_*]. */
enum { SCOPE_OBJECT = 1, SCOPE_TEMPLATES = 2 };

static int s_set_annotations(lua_State *L)
{
    struct mstream *s = check_stream(L);
    size_t index = check_index(L, s, 2);
    luaL_checktype(L, 3, LUA_TTABLE);
    static const char *const scopes[] = {"object", "templates", NULL};
    int scope = lua_isnoneornil(L, 4) ? 0 : luaL_checkoption(L, 4, NULL, scopes) + 1;
    lua_settop(L, 3);
    lua_pushnil(L);                                                   /* 4 */
    const struct mobj *o = &s->objs[index - 1];
    lua_pushnil(L);
    while (lua_next(L, 3)) {
        if (lua_type(L, -2) != LUA_TSTRING || lua_type(L, -1) != LUA_TSTRING)
            return luaL_error(L, "set_annotations: keys and values must be strings");
        size_t kl, vl;
        const char *k = lua_tolstring(L, -2, &kl), *v = lua_tolstring(L, -1, &vl);
        if (kl == 0 || kl > 1000 || !utf8_valid(k, kl) || !utf8_valid(v, vl)) {
            lua_pushnil(L);   /* YAML limits implicit keys to 1024 characters */
            lua_pushfstring(L, "annotation %s: %s", kl ? k : "\"\"",
                            kl == 0 ? "empty key" : kl > 1000 ? "key too long" : "not valid UTF-8");
            return 2;
        }
        for (size_t i = o->site_first; i < o->site_first + o->site_count; i++) {
            const struct msite *st = &s->st.sites[i];
            if (st->mode == SITE_ERROR) {
                lua_pushnil(L);
                push_located(L, st->errpos, st->errmsg);
                return 2;
            }
            for (size_t e = st->ent_first; e < st->ent_first + st->ent_count; e++) {
                const struct mentry *en = &s->st.ents[e];
                if (en->err && en->klen == kl && memcmp(s->st.strs + en->key, k, kl) == 0) {
                    lua_pushnil(L);
                    push_located(L, en->vstart, en->err);
                    return 2;
                }
            }
        }
        lua_pop(L, 1);
    }
    lua_getiuservalue(L, 1, UV_PENDING);                              /* 5 */
    if (lua_rawgeti(L, 5, (lua_Integer)index) == LUA_TNIL) {
        lua_pop(L, 1);
        lua_createtable(L, 2, 0);
        lua_newtable(L); lua_rawseti(L, -2, SCOPE_OBJECT);
        lua_newtable(L); lua_rawseti(L, -2, SCOPE_TEMPLATES);
        lua_pushvalue(L, -1);
        lua_rawseti(L, 5, (lua_Integer)index);
    }
    for (int sc = SCOPE_OBJECT; sc <= SCOPE_TEMPLATES; sc++) {       /* 6: {object, templates} */
        if (scope && scope != sc) continue;
        lua_rawgeti(L, 6, sc);                                        /* 7 */
        lua_pushnil(L);
        while (lua_next(L, 3)) {
            lua_pushvalue(L, -2);
            lua_insert(L, -2);
            lua_rawset(L, 7);
        }
        lua_pop(L, 1);
    }
    lua_getiuservalue(L, 1, UV_CACHE);
    lua_pushnil(L);
    lua_rawseti(L, -2, (lua_Integer)o->doc + 1);
    lua_pushnil(L);
    lua_setiuservalue(L, 1, UV_EDITS);
    lua_pushboolean(L, 1);
    return 1;
}

/* stream:annotation_span(i, key, value) -> first, last, line | nil: the
 * bytes (1-based, inclusive) of the value of annotation key as written in
 * the text, and where its line starts (a block scalar's indentation is
 * counted from there): the first one on object i, else on its Fluence pod templates in
 * order (where the request is read from), so a caller can point inside it.
 * nil when that one is known to hold another value (the object's came
 * through a merge key) or there is none fluence could also write.  An
 * alias or anchored value's span is returned unchecked: the caller checks
 * what it decodes there. */
static int s_annotation_span(lua_State *L)
{
    struct mstream *s = check_stream(L);
    const struct mobj *o = &s->objs[check_index(L, s, 2) - 1];
    size_t kl, vl;
    const char *k = luaL_checklstring(L, 3, &kl), *v = luaL_checklstring(L, 4, &vl);
    for (size_t i = o->site_first; i < o->site_first + o->site_count; i++) {
        const struct msite *st = &s->st.sites[i];
        for (size_t e = st->ent_first; st->mode == SITE_INSERT && e < st->ent_first + st->ent_count; e++) {
            const struct mentry *en = &s->st.ents[e];
            if (en->klen != kl || memcmp(s->st.strs + en->key, k, kl) != 0) continue;
            if (en->vend <= en->vstart ||
                (en->vlen != (size_t)-1 && (en->vlen != vl || memcmp(s->st.strs + en->val, v, vl) != 0))) {
                lua_pushnil(L);
                return 1;
            }
            size_t len, line = en->vstart;
            lua_getiuservalue(L, 1, UV_TEXT);
            const char *text = check_text(L, -1, &len);
            while (line > 0 && text[line - 1] != '\n') line--;
            lua_pushinteger(L, (lua_Integer)en->vstart + 1);
            lua_pushinteger(L, (lua_Integer)en->vend);
            lua_pushinteger(L, (lua_Integer)line + 1);
            return 3;
        }
    }
    lua_pushnil(L);
    return 1;
}

/* stream:source(first, last) -> the text's bytes first..last (1-based) */
static int s_source(lua_State *L)
{
    check_stream(L);
    lua_Integer first = luaL_checkinteger(L, 2), last = luaL_checkinteger(L, 3);
    size_t len;
    lua_getiuservalue(L, 1, UV_TEXT);
    const char *text = check_text(L, -1, &len);
    if (first < 1) first = 1;
    if (last > (lua_Integer)len) last = (lua_Integer)len;
    lua_pushlstring(L, text + first - 1, last >= first ? (size_t)(last - first + 1) : 0);
    return 1;
}

/* stream:locate(byte, message) -> "NAME:LINE:COL: message", the line and a
 * caret under byte (1-based) */
static int s_locate(lua_State *L)
{
    check_stream(L);
    lua_Integer byte = luaL_checkinteger(L, 2);
    const char *msg = luaL_checkstring(L, 3);
    lua_settop(L, 3);
    push_located(L, byte > 0 ? (size_t)byte - 1 : 0, msg);
    return 1;
}

/* stream:position(byte) -> name, line, column: where byte (1-based) is, for
 * a location that travels as fields (lua/fluence/location.lua) */
static int s_position(lua_State *L)
{
    check_stream(L);
    lua_Integer byte = luaL_checkinteger(L, 2);
    struct mparse tmp;
    memset(&tmp, 0, sizeof tmp);
    lua_getiuservalue(L, 1, UV_TEXT);
    tmp.text = check_text(L, -1, &tmp.len);
    lua_getiuservalue(L, 1, UV_NAME);
    tmp.name = lua_tostring(L, -1);
    size_t line, col;
    const char *name = mp_position(&tmp, byte > 0 ? (size_t)byte - 1 : 0, &line, &col);
    lua_pushstring(L, name);
    lua_pushinteger(L, (lua_Integer)line);
    lua_pushinteger(L, (lua_Integer)col);
    return 3;
}

/* ---- edits ---- */

struct edit { size_t pos, del_end, seq, toff, tlen; };
struct edits { struct edit *e; size_t n, cap; };

static int edits_gc(lua_State *L)
{
    struct edits *e = lua_touserdata(L, 1);
    free(e->e);
    e->e = NULL;
    return 0;
}

static int cmp_edit(const void *a, const void *b)
{
    const struct edit *x = a, *y = b;
    if (x->pos != y->pos) return x->pos < y->pos ? -1 : 1;
    return x->seq < y->seq ? -1 : x->seq > y->seq;
}

static int cmp_kv(const void *a, const void *b)
{
    const struct mkv *x = a, *y = b;
    size_t n = x->kl < y->kl ? x->kl : y->kl;
    int c = memcmp(x->k, y->k, n);
    return c ? c : (x->kl > y->kl) - (x->kl < y->kl);
}

static void add_edit(lua_State *L, struct edits *ed, struct strbuf *tb, size_t pos, size_t del_end, size_t toff)
{
    ed->e = fluence_grow(L, ed->e, &ed->cap, ed->n + 1, sizeof *ed->e);
    struct edit *e = &ed->e[ed->n];
    e->pos = pos;
    e->del_end = del_end;
    e->seq = ed->n++;
    e->toff = toff;
    e->tlen = tb->len - toff;
}

/* Sets kv->ev to the value (on the top of the stack) written as a scalar,
 * from the cache table at index cache: one shared decision stamps thousands
 * of objects, and each object's pod templates, with the same audit. */
static void scalar_cached(lua_State *L, int cache, struct strbuf *scratch, struct mkv *kv, int quote)
{
    lua_pushvalue(L, -1);
    if (lua_rawget(L, cache) != LUA_TSTRING) {
        lua_pop(L, 1);
        scratch->len = 0;
        if (!me_scalar(L, scratch, kv->v, kv->vl, quote)) return;
        lua_pushvalue(L, -1);
        strbuf_pushresult(L, scratch);
        lua_rawset(L, cache);
        lua_pushvalue(L, -1);
        lua_rawget(L, cache);
    }
    kv->ev = lua_tolstring(L, -1, &kv->evl);      /* anchored by the cache */
    lua_pop(L, 1);
}

/* Builds the sorted edit list of every pending annotation.  Pushes the edits
 * userdata and the text buffer they point into. */
static struct edits *build_edits(lua_State *L, struct mstream *s, struct strbuf **tbp)
{
    struct edits *ed = lua_newuserdatauv(L, sizeof *ed, 0);
    memset(ed, 0, sizeof *ed);
    lua_newtable(L);
    lua_pushcfunction(L, edits_gc);
    lua_setfield(L, -2, "__gc");
    lua_setmetatable(L, -2);
    int edx = lua_gettop(L);
    struct strbuf *tb = strbuf_push(L);
    *tbp = tb;
    int top = lua_gettop(L);
    /* merge the pending annotations per site target: target -> {site, kv} */
    lua_newtable(L);
    int merged = top + 1;
    lua_newtable(L);                   /* array of targets, in first-seen order */
    int order = top + 2;
    lua_Integer norder = 0;
    lua_getiuservalue(L, 1, UV_PENDING);
    int pending = top + 3;
    lua_newtable(L);                   /* long values as written: plain, then JSON */
    lua_newtable(L);
    int cache = top + 4;
    struct strbuf *scratch = strbuf_push(L);
    for (size_t oi = 0; oi < s->nobjs; oi++) {
        if (lua_rawgeti(L, pending, (lua_Integer)oi + 1) == LUA_TNIL) { lua_pop(L, 1); continue; }
        int scoped = lua_gettop(L);
        lua_rawgeti(L, scoped, SCOPE_OBJECT);
        lua_rawgeti(L, scoped, SCOPE_TEMPLATES);
        const struct mobj *o = &s->objs[oi];
        for (size_t si = o->site_first; si < o->site_first + o->site_count; si++) {
            const struct msite *st = &s->st.sites[si];
            if (st->mode == SITE_ERROR) continue;
            /* the first site is the object's own metadata; the rest are its
             * pod templates */
            int kv = si == o->site_first ? scoped + 1 : scoped + 2;
            lua_pushnil(L);
            if (!lua_next(L, kv)) continue;                           /* nothing for this scope */
            lua_pop(L, 2);
            lua_pushinteger(L, (lua_Integer)st->target);
            if (lua_rawget(L, merged) == LUA_TNIL) {
                lua_pop(L, 1);
                lua_createtable(L, 0, 2);
                lua_pushinteger(L, (lua_Integer)si);
                lua_setfield(L, -2, "site");
                lua_newtable(L);
                lua_setfield(L, -2, "kv");
                lua_pushinteger(L, (lua_Integer)st->target);
                lua_pushvalue(L, -2);
                lua_rawset(L, merged);
                lua_pushinteger(L, (lua_Integer)st->target);
                lua_rawseti(L, order, ++norder);
            }
            lua_getfield(L, -1, "kv");
            lua_pushnil(L);
            while (lua_next(L, kv)) {
                lua_pushvalue(L, -2);
                lua_insert(L, -2);
                lua_rawset(L, -4);
            }
            lua_pop(L, 2);
        }
        lua_pop(L, 3);
    }
    for (lua_Integer oi = 1; oi <= norder; oi++) {
        lua_rawgeti(L, order, oi);
        lua_rawget(L, merged);
        lua_getfield(L, -1, "site");
        const struct msite *st = &s->st.sites[lua_tointeger(L, -1)];
        lua_pop(L, 1);
        lua_getfield(L, -1, "kv");
        int kv = lua_gettop(L);
        size_t n = 0;
        lua_pushnil(L);
        while (lua_next(L, kv)) { n++; lua_pop(L, 1); }
        struct mkv *kvs = lua_newuserdatauv(L, (n ? n : 1) * sizeof *kvs, 0);
        n = 0;
        lua_pushnil(L);
        while (lua_next(L, kv)) {
            kvs[n].k = lua_tolstring(L, -2, &kvs[n].kl);    /* anchored by the kv table */
            kvs[n].v = lua_tolstring(L, -1, &kvs[n].vl);
            kvs[n].ev = NULL;
            if (kvs[n].vl >= 64) scalar_cached(L, cache + (st->json != 0), scratch, &kvs[n], st->json);
            n++;
            lua_pop(L, 1);
        }
        qsort(kvs, n, sizeof *kvs, cmp_kv);
        /* existing keys are replaced in place; the others are added together */
        size_t nnew = 0;
        for (size_t i = 0; i < n; i++) {
            const struct mentry *hit = NULL;
            for (size_t e = st->ent_first; e < st->ent_first + st->ent_count; e++) {
                const struct mentry *en = &s->st.ents[e];
                if (en->klen == kvs[i].kl && memcmp(s->st.strs + en->key, kvs[i].k, en->klen) == 0) hit = en;
            }
            if (!hit) { kvs[nnew++] = kvs[i]; continue; }
            if (hit->vlen == kvs[i].vl && memcmp(s->st.strs + hit->val, kvs[i].v, hit->vlen) == 0) continue;
            size_t toff = tb->len;
            if (hit->vstart == hit->vend) strbuf_addc(L, tb, ' ');
            me_scalar(L, tb, kvs[i].v, kvs[i].vl, st->json || hit->quote);
            add_edit(L, ed, tb, hit->vstart, hit->vend, toff);
        }
        if (nnew) {
            size_t toff = tb->len;
            me_site_text(L, tb, st, kvs, nnew);
            add_edit(L, ed, tb, st->pos, st->del_end, toff);
        }
        lua_pop(L, 3);
    }
    lua_settop(L, edx + 1);
    if (ed->n) qsort(ed->e, ed->n, sizeof *ed->e, cmp_edit);
    return ed;
}

/* The edit list, built once per set of pending annotations: pushes the
 * edits userdata and its text buffer (cached until set_annotations). */
static struct edits *get_edits(lua_State *L, struct mstream *s, struct strbuf **tbp)
{
    if (lua_getiuservalue(L, 1, UV_EDITS) == LUA_TTABLE) {
        lua_rawgeti(L, -1, 1);
        lua_rawgeti(L, -2, 2);
        lua_remove(L, -3);
        *tbp = lua_touserdata(L, -1);
        return lua_touserdata(L, -2);
    }
    lua_pop(L, 1);
    struct edits *ed = build_edits(L, s, tbp);
    lua_createtable(L, 2, 0);
    lua_pushvalue(L, -3);
    lua_rawseti(L, -2, 1);
    lua_pushvalue(L, -2);
    lua_rawseti(L, -2, 2);
    lua_setiuservalue(L, 1, UV_EDITS);
    return ed;
}

/* Pushes text[from, to) with the edits inside that range applied. */
static void splice_edits(lua_State *L, const char *text, size_t from, size_t to, struct edits *ed, struct strbuf *tb)
{
    struct strbuf *out = strbuf_push(L);
    size_t at = from, lo = 0, hi = ed->n;
    while (lo < hi) {                  /* the first edit at or after from */
        size_t mid = lo + (hi - lo) / 2;
        if (ed->e[mid].pos < from) lo = mid + 1; else hi = mid;
    }
    for (size_t i = lo; i < ed->n; i++) {
        const struct edit *e = &ed->e[i];
        if (e->pos > to) break;
        if (e->pos < at) luaL_error(L, "manifest: overlapping edits (a bug)");
        strbuf_add(L, out, text + at, e->pos - at);
        strbuf_add(L, out, tb->data + e->toff, e->tlen);
        at = e->del_end;
    }
    strbuf_add(L, out, text + at, to - at);
    strbuf_pushresult(L, out);
    lua_remove(L, -2);
}

static int s_render(lua_State *L)
{
    struct mstream *s = check_stream(L);
    lua_settop(L, 1);
    size_t len;
    lua_getiuservalue(L, 1, UV_TEXT);
    const char *text = check_text(L, -1, &len);
    struct strbuf *tb;
    struct edits *ed = get_edits(L, s, &tb);
    if (ed->n == 0) {
        if (lua_type(L, 2) != LUA_TSTRING) lua_pushlstring(L, text, len); else lua_pushvalue(L, 2);
        return 1;
    }
    splice_edits(L, text, 0, len, ed, tb);
    return 1;
}

/* stream:write(fd) -> true | nil, message: writes exactly what render()
 * returns, straight from the text and the edit list, so the output never
 * exists as a second copy of the stream in memory. */
static int s_write(lua_State *L)
{
    enum { NIOV = 64 };
    struct mstream *s = check_stream(L);
    int fd = (int)luaL_checkinteger(L, 2);
    lua_settop(L, 2);
    size_t len;
    lua_getiuservalue(L, 1, UV_TEXT);
    const char *text = check_text(L, 3, &len);
    struct strbuf *tb;
    struct edits *ed = get_edits(L, s, &tb);
    struct iovec iov[NIOV];
    int n = 0, err = 0;
    size_t at = 0, written = 0;
    int mapped = mapped_file(L, 3) != NULL;    /* written pages go back (as parsed ones did) */
    for (size_t i = 0; i <= ed->n && !err; i++) {
        size_t pos = i < ed->n ? ed->e[i].pos : len;
        if (pos < at) return luaL_error(L, "manifest: overlapping edits (a bug)");
        if (pos > at) iov[n++] = (struct iovec){ (void *)(text + at), pos - at };
        if (i < ed->n) {
            if (ed->e[i].tlen) iov[n++] = (struct iovec){ tb->data + ed->e[i].toff, ed->e[i].tlen };
            at = ed->e[i].del_end;
        }
        if (n >= NIOV - 2 || i == ed->n) {
            err = fluence_writev(fd, iov, n);
            n = 0;
            size_t done = i == ed->n ? len : at;
            if (mapped && !err && done > written + FLUENCE_RELEASE_LAG) {
                fluence_release(text + written, text + done);
                written = done;
            }
        }
    }
    if (err) {
        lua_pushnil(L);
        lua_pushstring(L, strerror(err));
        return 2;
    }
    lua_pushboolean(L, 1);
    return 1;
}

/* Appends the JSON of every object of text (re-parsed) to out: separated
 * by commas at indent*depth (sep), or each ended by a NUL.  drop: MJ_OBJECT
 * (objects as sent to a server) or 0. */
static void emit_objects(lua_State *L, const char *name, const char *text, size_t len,
                         struct strbuf *out, int indent, int depth, int drop, size_t *count, int sep)
{
    struct mparse *p = mp_push(L, name, text, len);
    struct mdoc d;
    while (mp_next_doc(L, p, &d)) {
        const struct mtree *t = &p->tree;
        if (!d.root || mt_is_null(t, d.root)) continue;
        size_t items;
        if (list_items(t, d.root, &items)) {
            for (size_t c = mt_resolve(t, items, NULL)->first; c; c = t->nodes[c].next) {
                if (sep && (*count)++) strbuf_addc(L, out, ',');
                if (sep) { strbuf_addc(L, out, '\n'); for (int i = 0; i < indent * depth; i++) strbuf_addc(L, out, ' '); }
                mj_emit(L, p, out, c, indent, depth, drop);
                if (!sep) { strbuf_addc(L, out, 0); (*count)++; }
            }
        } else {
            if (sep && (*count)++) strbuf_addc(L, out, ',');
            if (sep) { strbuf_addc(L, out, '\n'); for (int i = 0; i < indent * depth; i++) strbuf_addc(L, out, ' '); }
            /* a document's own object is checked as kubectl checks it (a
             * List's items are not: kubectl leaves them to the server) */
            size_t obj;
            const struct mnode *on = mt_resolve(t, d.root, &obj);
            if (drop && on && on->type == MN_MAP) mm_check(L, p, obj);
            mj_emit(L, p, out, d.root, indent, depth, drop);
            if (!sep) { strbuf_addc(L, out, 0); (*count)++; }
        }
    }
    mp_free(p);
    lua_pop(L, 1);
}

static int json_protected(lua_State *L)
{
    /* 1 stream, 2 index or nil; 3 rendered text (range), 4 name, 5 doc first object */
    size_t len;
    const char *text = lua_tolstring(L, 3, &len);
    const char *name = lua_tostring(L, 4);
    struct strbuf *out = strbuf_push(L);                       /* 6 */
    size_t count = 0;
    if (lua_isnil(L, 2)) {
        struct strbuf *items = strbuf_push(L);                 /* 7 */
        emit_objects(L, name, text, len, items, 4, 2, 0, &count, 1);
        if (count == 1) {
            struct mparse *p = mp_push(L, name, text, len);
            struct mdoc d;
            size_t items_node;
            while (mp_next_doc(L, p, &d)) {
                if (!d.root || mt_is_null(&p->tree, d.root)) continue;
                if (list_items(&p->tree, d.root, &items_node))
                    d.root = mt_resolve(&p->tree, items_node, NULL)->first;
                mj_emit(L, p, out, d.root, 4, 0, 0);
                break;
            }
            mp_free(p);
        } else {
            strbuf_adds(L, out, "{\n    \"apiVersion\": \"v1\",\n    \"kind\": \"List\",\n    \"items\": [");
            strbuf_add(L, out, items->data, items->len);
            strbuf_adds(L, out, count ? "\n    ]\n}" : "]\n}");
        }
        strbuf_addc(L, out, '\n');
        strbuf_pushresult(L, out);
        return 1;
    }
    /* every object of one document, NUL-separated, into the cache table at 5 */
    emit_objects(L, name, text, len, out, 0, 0, 1, &count, 0);
    lua_newtable(L);
    lua_Integer first = lua_tointeger(L, 5);
    const char *q = out->data, *e = out->data + out->len;
    for (lua_Integer i = 0; q && q < e; i++) {
        const char *z = memchr(q, 0, (size_t)(e - q));
        lua_pushlstring(L, q, (size_t)(z - q));
        lua_rawseti(L, -2, first + i + 1);
        q = z + 1;
    }
    return 1;
}

static int s_render_json(lua_State *L)
{
    check_stream(L);
    lua_settop(L, 1);
    lua_pushcfunction(L, json_protected);
    lua_pushvalue(L, 1);
    lua_pushnil(L);
    lua_getfield(L, 1, "render");
    lua_pushvalue(L, 1);
    lua_call(L, 1, 1);
    lua_getiuservalue(L, 1, UV_NAME);
    lua_pushinteger(L, 0);
    if (lua_pcall(L, 5, 1, 0) != LUA_OK) { lua_pushnil(L); lua_insert(L, -2); return 2; }
    return 1;
}

static int s_object_json(lua_State *L)
{
    struct mstream *s = check_stream(L);
    size_t index = check_index(L, s, 2);
    lua_settop(L, 2);
    size_t doc = s->objs[index - 1].doc;
    lua_getiuservalue(L, 1, UV_CACHE);                              /* 3 */
    if (lua_rawgeti(L, 3, (lua_Integer)doc + 1) == LUA_TTABLE) {
        lua_rawgeti(L, -1, (lua_Integer)index);
        return 1;
    }
    lua_pop(L, 1);
    size_t len;
    lua_getiuservalue(L, 1, UV_TEXT);                               /* 4 */
    const char *text = check_text(L, 4, &len);
    struct strbuf *tb;
    get_edits(L, s, &tb);                                           /* 5, 6 */
    struct edits *ed = lua_touserdata(L, 5);
    lua_pushcfunction(L, json_protected);                           /* 7 */
    lua_pushvalue(L, 1);
    lua_pushvalue(L, 2);
    splice_edits(L, text, s->docs[doc].start, s->docs[doc].end, ed, tb);
    lua_getiuservalue(L, 1, UV_NAME);
    lua_pushinteger(L, (lua_Integer)s->doc_obj[doc]);
    if (lua_pcall(L, 5, 1, 0) != LUA_OK) { lua_pushnil(L); lua_insert(L, -2); return 2; }
    lua_pushvalue(L, -1);
    lua_rawseti(L, 3, (lua_Integer)doc + 1);
    lua_rawgeti(L, -1, (lua_Integer)index);
    return 1;
}

int luaopen_fluence_manifest(lua_State *L)
{
    static const luaL_Reg methods[] = {
        {"objects", s_objects}, {"active", s_active}, {"set_annotations", s_set_annotations}, {"render", s_render},
        {"render_json", s_render_json}, {"object_json", s_object_json}, {"is_json", s_is_json},
        {"write", s_write}, {"annotation_span", s_annotation_span}, {"source", s_source},
        {"locate", s_locate}, {"position", s_position}, {"warnings", s_warnings}, {"seam", s_seam},
        {NULL, NULL}
    };
    static const luaL_Reg funcs[] = {
        {"parse", m_parse}, {"read", m_read}, {"indent_json", m_indent_json}, {"kinds", mk_push_table},
        {NULL, NULL}
    };
    static const luaL_Reg text_meta[] = {
        {"__gc", text_gc}, {"__len", text_len}, {"__tostring", text_tostring}, {NULL, NULL}
    };
    luaL_newmetatable(L, TEXT_MT);
    luaL_setfuncs(L, text_meta, 0);
    lua_newtable(L);                   /* no methods: text.render is nil, not an error */
    lua_setfield(L, -2, "__index");
    lua_pop(L, 1);
    luaL_newmetatable(L, STREAM_MT);
    luaL_newlib(L, methods);
    lua_setfield(L, -2, "__index");
    lua_pushcfunction(L, stream_gc);
    lua_setfield(L, -2, "__gc");
    lua_pop(L, 1);
    luaL_newlib(L, funcs);
    return 1;
}
