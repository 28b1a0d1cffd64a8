/* Finding a Lua source compiled into the binary (the table: embedded.h). */
#ifndef FLUENCE_EMBED_H
#define FLUENCE_EMBED_H
#include "embedded.h"

/* The embedded file at path, or NULL (a bisection: every require asks). */
const struct fluence_embedded *fluence_embedded_find(const char *path);

#endif
