/* fluence.manifest's editing (manifest_edit.c): where and how annotations
 * are written, scalar quoting, the text inserted at each site. */
#ifndef FLUENCE_MANIFEST_EDIT_H
#define FLUENCE_MANIFEST_EDIT_H
#include <stddef.h>
#include <stdint.h>
#include <lua.h>
#include "manifest_tree.h"

struct strbuf;
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

#endif
