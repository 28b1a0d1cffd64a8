/* The pieces of every JSON text fluence writes itself (json.c's encode, the
 * manifests' JSON in manifest_json.c and the strings written into
 * manifests in manifest_edit.c, Fluxion's options in match_reapi.c): the
 * one JSON string escaper, and a line break with its indentation.  (The
 * matcher's writers print through jansson, as Fluxion does, and the
 * kubeconfig's exec credential input is jansson's too.)
 *
 * A string: '"' and '\' escaped; \n, \r and \t by name; other C0 controls,
 * DEL and the C1 controls (U+0080..U+009F) as \u00XX -- the API server reads
 * a server-side apply body as YAML, which refuses them raw; everything else
 * as it is. */
#ifndef FLUENCE_JSON_WRITE_H
#define FLUENCE_JSON_WRITE_H
#include <stddef.h>
#include <lua.h>

enum {
    JW_FFFD = 1,    /* a byte that is not UTF-8 becomes U+FFFD, as Go writes it
                     * (else it is copied: a Lua string is bytes) */
    JW_YAML = 2,    /* also U+2028, U+2029, U+FEFF, U+FFFE, U+FFFF escaped, so
                     * that YAML 1.1 reads the string back exactly (it folds
                     * the line separators) */
    JW_NL = 4       /* a "\n" added at the end (a block scalar's clipped break) */
};

/* Receives the text piece by piece. */
typedef void (*jw_sink)(void *to, const char *s, size_t n);

/* Writes s (len bytes) as a JSON string, in its double quotes. */
void jw_string_to(jw_sink out, void *to, const char *s, size_t len, int flags);

struct strbuf;
/* The same appended to b (raises on out of memory). */
void jw_string(lua_State *L, struct strbuf *b, const char *s, size_t len, int flags);
/* Indented text: a line break and indent * depth spaces (nothing when
 * indent is 0: compact). */
void jw_newline(lua_State *L, struct strbuf *b, int indent, int depth);

#endif
