/* fluence.manifest's reading (manifest_tree.c): libyaml events -> a compact
 * per-document node tree with exact byte offsets (libyaml marks count
 * characters), and the questions asked of it.  The other manifest units
 * read documents through this; the parser is a Lua userdata with __gc, so
 * a Lua error (a located parse error, out of memory) never leaks. */
#ifndef FLUENCE_MANIFEST_TREE_H
#define FLUENCE_MANIFEST_TREE_H
#include <setjmp.h>
#include <stdatomic.h>
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
    int ascii_end;                  /* ascii_to is final: a byte >= 0x80 there, or the end */
    size_t ascii_to;                /* bytes [0, ascii_to) are ASCII: characters are bytes */
    const char *name, *text;
    size_t len;
    size_t cur_char, cur_byte;      /* cursor mapping character index -> byte */
    size_t prev_end;                /* byte offset where the next document begins */
    size_t prev_line;               /* its line (libyaml's count, 0-based) */
    double expanded;                /* weight the stream's aliases stand for (yaml_limits.h) */
    double budget;                  /* what they may: the whole input's (yaml_limits.h) */
    jmp_buf *fail;                  /* set: a parse off the main thread (manifest_split.c):
                                       errors jump here, never into Lua */
    const atomic_int *stop;         /* with fail: set when the result is no longer wanted */
    struct mtree tree;
};

struct mdoc {
    size_t start, end;              /* bytes: [previous document's end, this end) */
    size_t root;                    /* node index or 0 (empty document) */
};

struct mparse *mp_push(lua_State *L, const char *name, const char *text, size_t len);
/* p over text without Lua (no userdata, no UTF-16 check): 0, or -1 out of memory */
int mp_init(struct mparse *p, const char *name, const char *text, size_t len);
/* With p->fail set, L may be NULL: an error jumps to *p->fail. */
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

#endif
