/* Internals shared by the fluence.manifest files:
 *
 *   manifest_tree.c   libyaml events -> a compact per-document node tree with
 *                     exact byte offsets (libyaml marks count characters)
 *   manifest_json.c   a tree node -> JSON text (compact or indented)
 *   manifest_edit.c   where and how to write annotations; scalar quoting;
 *                     splicing the collected edits into the text in one pass
 *   manifest_shape.c  wrong-typed fields (metadata as a list ...) of an object
 *   manifest.c        the Lua module: parse, objects, set_annotations, render
 *
 * Every C allocation hangs off a Lua userdata with __gc, so a Lua error
 * (located parse error, out of memory) never leaks. */
#ifndef FLUENCE_MANIFEST_H
#define FLUENCE_MANIFEST_H
#include <stddef.h>
#include <stdint.h>
#include <yaml.h>
#include <lua.h>

enum { MN_SCALAR = 1, MN_SEQ, MN_MAP, MN_ALIAS };
/* PAIR: [k: v].  MERGE, DUPS (mappings): it has a merge key ("<<"), a key
 * written twice (kubectl keeps the last: manifest.c warns or refuses) */
enum { MF_ANCHORED = 1, MF_STR = 2, MF_FLOW = 4, MF_PAIR = 8, MF_MERGE = 16, MF_DUPS = 32 };

/* One node.  Index 0 is "none".  Children form a linked list (first/next);
 * a mapping's children alternate key, value. */
struct mnode {
    uint8_t type, style, flags;     /* style: yaml_scalar_style_t for scalars */
    uint8_t tag;                    /* scalars: YK_TAG_* (yaml_kubectl.h) */
    uint32_t line, col;             /* start, 0-based (col in characters) */
    size_t start, end;              /* byte offsets into the text */
    size_t val, len;                /* scalar: value in the arena; alias: target node */
    size_t first, next, last, count;
    double weight;                  /* what it stands for, aliases expanded (yaml_limits.h) */
};

struct mtree {
    struct mnode *nodes;
    size_t n, cap;
    char *arena;                    /* scalar values, NUL-terminated */
    size_t alen, acap;
    size_t *stack;                  /* open collections while building */
    size_t depth, scap;
    struct anchor { size_t name, node; } *anchors;   /* open addressing hash */
    size_t acount, anchcap;
    size_t *keyhash;                /* scratch for duplicate-key checks */
    size_t khcap;
    size_t *dups;                   /* the second writing of each duplicate key, in order */
    size_t ndups, capdups;
};

/* A libyaml parser over a string plus the tree of the current document. */
struct mparse {
    yaml_parser_t parser;
    yaml_event_t event;
    int have_event, parser_ready;
    int ascii;                      /* no byte >= 0x80: characters are bytes */
    const char *name, *text;
    size_t len;
    size_t cur_char, cur_byte;      /* cursor mapping character index -> byte */
    size_t prev_end;                /* byte offset where the next document begins */
    double expanded;                /* weight the stream's aliases stand for (yaml_limits.h) */
    struct mtree tree;
};

struct mdoc {
    size_t start, end;              /* bytes: [previous document's end, this end) */
    size_t root;                    /* node index or 0 (empty document) */
};

/* manifest_tree.c */
struct mparse *mp_push(lua_State *L, const char *name, const char *text, size_t len);
int mp_next_doc(lua_State *L, struct mparse *p, struct mdoc *doc);   /* 0 at end */
void mp_free(struct mparse *p);
int mp_error(lua_State *L, struct mparse *p, size_t byte, const char *msg);   /* raises */
/* The file name ("<stdin>" for "-"), line and column (1-based, in bytes) of
 * byte (0-based) of the input. */
const char *mp_position(const struct mparse *p, size_t byte, size_t *line, size_t *col);
void mp_locate(lua_State *L, struct mparse *p, size_t byte, const char *msg); /* pushes */
const struct mnode *mt_resolve(const struct mtree *t, size_t i, size_t *out);
size_t mt_get(const struct mtree *t, size_t map, const char *key, size_t *keynode);
const char *mt_str(const struct mtree *t, size_t i);    /* scalar text (resolved) or NULL */
int mt_is_null(const struct mtree *t, size_t i);
int mt_is_merge_key(const struct mtree *t, size_t k);  /* key node k is "<<" as kubectl reads it */
int mt_plain_is_string(const char *s, size_t len);
/* Scalar node i (resolved) as kubectl reads it (yaml_kubectl.h). */
struct yk_value;
void mt_kubectl(const struct mtree *t, size_t i, struct yk_value *v);

/* manifest_json.c: appends node i as the JSON kubectl sends; indent 0 =
 * compact.  flags: MJ_OBJECT (node i is an object: its
 * metadata.managedFields is left out), MJ_CHECK (also check its
 * apiVersion, kind and metadata as kubectl does, manifest_meta.c). */
enum { MJ_OBJECT = 1, MJ_CHECK = 2, MJ_META = 4 };
struct strbuf;
void mj_emit(lua_State *L, struct mparse *p, struct strbuf *b, size_t i, int indent, int depth, int flags);
void mj_string(lua_State *L, struct strbuf *b, const char *s, size_t len);
/* [-0, +1] Pushes {key, value node, key, value node ...}: the entries of
 * mapping map as kubectl reads them (merge keys applied, the last of a
 * key written twice); returns their number. */
int mj_entries(lua_State *L, struct mparse *p, size_t map);
/* Appends compact JSON text s re-indented (numbers and strings untouched). */
void mj_indent(lua_State *L, struct strbuf *b, const char *s, size_t len, int indent, int depth);

/* manifest_meta.c: raises, located, when kubectl would refuse object obj's
 * apiVersion, kind or metadata (a value of the wrong type). */
void mm_check(lua_State *L, struct mparse *p, size_t obj);
/* Is value v something kubectl does not read as a string (nor null)?  Then
 * msg says so ("PATH: kubectl reads yes as a boolean ..., not a string"). */
int mm_not_string(const struct mtree *t, size_t v, const char *path, char *msg, size_t cap);
/* s escaped for a message (control characters as \xNN), clipped */
size_t mm_shown(char *out, size_t cap, const char *s, size_t len);

/* manifest_kinds.c: where known kinds keep their pods.  A pod: the
 * mapping at path `at` from the object holds its metadata under key `meta`,
 * its schedulerName at path `scheduler` and its containers at `containers`
 * (NULL: none to read); `inherit`: the object's path to the scheduler its
 * pods take when they name none; `group`: the pods target Fluence when the
 * object has the group label (its operator labels them so). */
struct mk_pod { const char *at, *meta, *scheduler, *containers, *inherit; int group; };
struct mk_kind { const char *group, *kind; const struct mk_pod *pods; const char *source; };
extern const struct mk_pod mk_pod_template;        /* the shape: metadata, spec.containers */
const struct mk_kind *mk_find(const char *api_version, const char *kind);
int mk_push_table(lua_State *L);                   /* manifest.kinds() */

/* manifest_edit.c */
enum { SITE_INSERT = 1, SITE_REPLACE_NULL, SITE_ERROR };

/* Where the annotations of one mapping (an object or a pod template) go. */
struct msite {
    int obj;                        /* object index, 0-based */
    int mode;                       /* SITE_* */
    int level;                      /* 0: into annotations, 1: into metadata, 2: into the object */
    int flow, json, pretty, at_begin, empty;
    int compact;                    /* JSON without spaces after ':' and ',' */
    size_t pos, del_end;            /* insert at pos, replacing [pos, del_end) */
    size_t target;                  /* byte offset identifying the edited mapping (dedupe) */
    uint32_t indent, step;          /* column of new entries at level; indentation step */
    int crlf;
    size_t ent_first, ent_count;    /* existing annotation entries (level 0 inserts) */
    const char *outer;              /* the mapping holding annotations: "metadata" ("pod" for a MiniCluster) */
    const char *errmsg;             /* SITE_ERROR */
    size_t errpos;
};

struct mentry {
    size_t key, klen;               /* in the stream's string store */
    size_t vstart, vend;            /* the value's bytes to replace */
    size_t val, vlen;               /* existing string value, or vlen = (size_t)-1 */
    const char *err;                /* cannot be replaced (anchored, not a scalar) */
    int quote;                      /* a '#' follows: a plain value would swallow it */
};

struct mstore {                     /* growable arrays owned by the stream */
    struct msite *sites; size_t nsites, capsites;
    struct mentry *ents; size_t nents, capents;
    char *strs; size_t slen, scap;
};

/* Records the site for the annotations held under key `outer` ("metadata",
 * or "pod" in a MiniCluster's spec) of mapping `map`. */
void me_sites_for(lua_State *L, struct mparse *p, struct mstore *s, int obj, size_t map,
                  const char *outer, int crlf, uint32_t step);
struct mkv {
    const char *k, *v; size_t kl, vl;
    const char *ev; size_t evl;     /* v already written as a scalar (or NULL) */
};
/* Appends the text inserted at st for the new entries kv[0..n) (sorted). */
void me_site_text(lua_State *L, struct strbuf *b, const struct msite *st, const struct mkv *kv, size_t n);
int me_scalar(lua_State *L, struct strbuf *b, const char *s, size_t len, int quote);
int me_valid_utf8(const char *s, size_t len);
void *me_grow(lua_State *L, void *p, size_t *cap, size_t need, size_t size);

/* manifest_shape.c: wrong-typed fields on the paths fluence reads (metadata,
 * annotations, labels, spec, pod templates, containers) of object obj.  The
 * first problem of each class, located at its key: err[1] among the fields
 * that decide whether the object targets Fluence, err[0] among annotations.
 * msg[0] == 0: none.  scheduler: a spec on those paths names the fluence
 * scheduler (so the object targets Fluence even if its pod is malformed). */
struct mshape_error { size_t at; char msg[192]; };
struct mshape { struct mshape_error err[2]; int scheduler; };
void ms_check(const struct mtree *t, size_t obj, struct mshape *s);

#endif
