/* Text from outside (a cluster, a file, a plugin, a server) made safe for a
 * terminal or a log line, as Go's %q makes it: the one escaping of every
 * message fluence prints.  Control characters (C0, DEL, C1), line and
 * paragraph separators, bidirectional and other invisible format
 * characters, and bytes that are not UTF-8 become \n, \r, \t, \x1b, \u2028
 * ...; everything printable stays as it is.  So an ANSI escape sequence or a
 * carriage return in a backend name cannot repaint the terminal, and a
 * newline in one cannot forge a second line. */
#ifndef FLUENCE_ESCAPE_H
#define FLUENCE_ESCAPE_H
#include <stddef.h>
#include <lua.h>
#include <lauxlib.h>

enum {
    FLUENCE_ESC_QUOTE = 1,       /* Go's %q: in double quotes, " and \ escaped too */
    FLUENCE_ESC_KEEP_LINES = 2,  /* a text of several lines: \n and \t stay (stderr as a whole) */
    FLUENCE_ESC_COLUMNS = 4      /* a source line a caret points into (location.c): one column
                                  * per byte kept, so a C0 control or DEL shows as '?' and a tab
                                  * as a space; what else is hidden the printer escapes */
};

/* Appends s (len bytes) to b, escaped. */
void fluence_escape(luaL_Buffer *b, const char *s, size_t len, int flags);

/* Writes s escaped into out (cap bytes with the NUL), cut short with "..."
 * when it does not fit; returns the length written.  For messages built in
 * fixed buffers. */
size_t fluence_escape_into(char *out, size_t cap, const char *s, size_t len, int flags);

/* [-0, +1, m]  Pushes s escaped; returns it. */
const char *fluence_push_escaped(lua_State *L, const char *s, size_t len, int flags);

/* Does s need any escaping with flags (a fast path: most text does not)? */
int fluence_needs_escape(const char *s, size_t len, int flags);

#endif
