/* fluence.manifest's JSON (manifest_json.c): a document tree as the JSON
 * kubectl sends, for server-side apply and -o json. */
#ifndef FLUENCE_MANIFEST_JSON_H
#define FLUENCE_MANIFEST_JSON_H
#include <stddef.h>
#include <lua.h>
#include "manifest_tree.h"

/* Appends node i as the JSON kubectl sends; indent 0 = compact.  flags:
 * MJ_OBJECT (node i is an object: its metadata.managedFields is left out;
 * MJ_META is what its metadata is emitted with). */
enum { MJ_OBJECT = 1, MJ_META = 4 };
struct strbuf;
void mj_emit(lua_State *L, struct mparse *p, struct strbuf *b, size_t i, int indent, int depth, int flags);
/* [-0, +1] Pushes {key, value node, key, value node ...}: the entries of
 * mapping map as kubectl reads them (merge keys applied, the last of a
 * key written twice); returns their number. */
int mj_entries(lua_State *L, struct mparse *p, size_t map);
/* Appends compact JSON text s re-indented (numbers and strings untouched). */
void mj_indent(lua_State *L, struct strbuf *b, const char *s, size_t len, int indent, int depth);

#endif
