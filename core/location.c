/* Located error messages with a source excerpt and a caret (see location.h). */
#include <string.h>
#include <lauxlib.h>
#include "escape.h"
#include "location.h"

#define EXCERPT_MAX 120   /* clip very long lines (a 1 GB line must not be echoed) */

void fluence_push_located(lua_State *L, const char *name, const char *text,
                          size_t len, size_t line, size_t col, const char *msg)
{
    /* the name and the message are one line whatever they quote (a YAML
     * key with a newline in it: escape.h) */
    fluence_push_escaped(L, name, strlen(name), 0);
    fluence_push_escaped(L, msg, strlen(msg), 0);
    if (col > 0)
        lua_pushfstring(L, "%s:%d:%d: %s", lua_tostring(L, -2), (int)line, (int)col, lua_tostring(L, -1));
    else
        lua_pushfstring(L, "%s:%d: %s", lua_tostring(L, -2), (int)line, lua_tostring(L, -1));
    lua_replace(L, -3);
    lua_pop(L, 1);
    luaL_Buffer b;
    luaL_buffinit(L, &b);
    lua_pushvalue(L, -2);
    luaL_addvalue(&b);

    /* find the line */
    const char *p = text, *end = text + len;
    for (size_t l = 1; p && p < end && l < line; l++) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        p = nl ? nl + 1 : NULL;
    }
    if (text && p && p <= end && line > 0) {
        const char *eol = memchr(p, '\n', (size_t)(end - p));
        size_t n = eol ? (size_t)(eol - p) : (size_t)(end - p);
        if (n > 0 && p[n - 1] == '\r') n--;
        size_t start = 0, c = col ? col - 1 : 0;
        if (n > EXCERPT_MAX) {
            start = c > EXCERPT_MAX / 2 ? c - EXCERPT_MAX / 2 : 0;
            if (start > n) start = n;
            n = n - start > EXCERPT_MAX ? EXCERPT_MAX : n - start;
        }
        if (n > 0 || col > 0) {
            luaL_addstring(&b, "\n    ");
            fluence_escape(&b, p + start, n, FLUENCE_ESC_COLUMNS);
            if (col > 0) {
                luaL_addstring(&b, "\n    ");
                for (size_t i = start; i < c && i - start < EXCERPT_MAX; i++) luaL_addchar(&b, ' ');
                luaL_addchar(&b, '^');
            }
        }
    }
    luaL_pushresult(&b);
    lua_remove(L, -2);
}
