/* Plain YAML scalars resolved by the YAML 1.2 core schema, shared by every
 * decoder that must agree on what a scalar is (fluence.yaml, fluence.attrfile):
 * null, true/false, integers (also 0x / 0o), floats (.inf, .nan), else a
 * string.  A quoted or !!str scalar is a string and never comes here. */
#ifndef FLUENCE_YAML_SCALAR_H
#define FLUENCE_YAML_SCALAR_H
#include <stddef.h>
#include <lua.h>

/* [-0, +1]  Pushes the value of plain scalar s (NUL-terminated, len bytes);
 * null is pushed as a light userdata NULL, for the caller to replace. */
void fluence_yaml_plain(lua_State *L, const char *s, size_t len);

#endif
