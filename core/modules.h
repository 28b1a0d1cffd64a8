/* The registry of fluence.* C modules.  The table is generated at build time
 * (tools/gen-modules.sh) from every luaopen_fluence_NAME in core/, and the
 * runtime preloads each one so `require "fluence.NAME"` finds it. */
#ifndef FLUENCE_MODULES_H
#define FLUENCE_MODULES_H
#include <lua.h>

struct fluence_module {
    const char *name;
    lua_CFunction open;
};

extern const struct fluence_module fluence_modules[];

#endif
