/* Error messages that point into text: "NAME:LINE:COL: message", then the
 * source line and a caret under the column.  Shared by every parser. */
#ifndef FLUENCE_LOCATION_H
#define FLUENCE_LOCATION_H
#include <stddef.h>
#include <lua.h>

/* Pushes the formatted message.  line and col are 1-based; col 0 means "no
 * column" (no caret).  Long lines are clipped around the column. */
void fluence_push_located(lua_State *L, const char *name, const char *text,
                          size_t len, size_t line, size_t col, const char *msg);

#endif
