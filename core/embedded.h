/* Lua sources compiled into the binary as Lua 5.4 bytecode with debug info,
 * keyed by their path in the source tree ("lua/fluence/cli.lua",
 * "policies/x.lua").  The table is generated at build time (tools/embed.lua),
 * sorted by path in strcmp's order; core/embed.c finds a file in it. */
#ifndef FLUENCE_EMBEDDED_H
#define FLUENCE_EMBEDDED_H
#include <stddef.h>

struct fluence_embedded {
    const char *path;
    const char *data;
    size_t len;
};

extern const struct fluence_embedded fluence_embedded_files[];   /* ends with {0, 0, 0} */
extern const size_t fluence_embedded_count;

#endif
