/* Growable buffers owned by Lua userdata (see strbuf.h). */
#include <stdlib.h>
#include <string.h>
#include <lauxlib.h>
#include "strbuf.h"

static int strbuf_gc(lua_State *L)
{
    struct strbuf *b = lua_touserdata(L, 1);
    free(b->data);
    b->data = NULL;
    b->len = b->cap = 0;
    return 0;
}

struct strbuf *strbuf_push(lua_State *L)
{
    struct strbuf *b = lua_newuserdatauv(L, sizeof *b, 0);
    memset(b, 0, sizeof *b);
    if (luaL_newmetatable(L, "fluence.strbuf")) {
        lua_pushcfunction(L, strbuf_gc);
        lua_setfield(L, -2, "__gc");
    }
    lua_setmetatable(L, -2);
    return b;
}

void strbuf_add(lua_State *L, struct strbuf *b, const char *s, size_t n)
{
    if (b->len + n > b->cap) {
        size_t cap = b->cap ? b->cap : 256;
        while (cap < b->len + n) {
            if (cap > ((size_t)-1) / 2) luaL_error(L, "not enough memory");
            cap *= 2;
        }
        char *p = realloc(b->data, cap);
        if (!p) luaL_error(L, "not enough memory");
        b->data = p;
        b->cap = cap;
    }
    if (n) memcpy(b->data + b->len, s, n);
    b->len += n;
}

void strbuf_addc(lua_State *L, struct strbuf *b, char c) { strbuf_add(L, b, &c, 1); }
void strbuf_adds(lua_State *L, struct strbuf *b, const char *s) { strbuf_add(L, b, s, strlen(s)); }

void strbuf_pushresult(lua_State *L, struct strbuf *b)
{
    lua_pushlstring(L, b->data ? b->data : "", b->len);
}
