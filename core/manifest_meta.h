/* fluence.manifest's metadata checks (manifest_meta.c): an object's
 * apiVersion, kind and metadata refused where kubectl refuses them. */
#ifndef FLUENCE_MANIFEST_META_H
#define FLUENCE_MANIFEST_META_H
#include <stddef.h>
#include <lua.h>
#include "manifest_tree.h"

/* Raises, located, when kubectl would refuse object obj's
 * apiVersion, kind or metadata (a value of the wrong type). */
void mm_check(lua_State *L, struct mparse *p, size_t obj);
/* Is value v something kubectl does not read as a string (nor null)?  Then
 * msg says so ("PATH: kubectl reads yes as a boolean ..., not a string"). */
int mm_not_string(const struct mtree *t, size_t v, const char *path, char *msg, size_t cap);
/* Does kubectl read value v as a string (or null)?  mm_not_string's test
 * alone, for the checks that name a path only when it fails. */
int mm_is_string(const struct mtree *t, size_t v);

#endif
