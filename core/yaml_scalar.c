/* Plain YAML scalars resolved by the YAML 1.2 core schema (yaml_scalar.h). */
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "yaml_scalar.h"

static int match_ci(const char *s, const char *a, const char *b, const char *c)
{
    return strcmp(s, a) == 0 || strcmp(s, b) == 0 || strcmp(s, c) == 0;
}

void fluence_yaml_plain(lua_State *L, const char *s, size_t len)
{
    if (len == 0 || (len == 1 && s[0] == '~')) {
        lua_pushlightuserdata(L, NULL);   /* the caller replaces it (json.null) */
        return;
    }
    /* the words all start with one of these (and strchr finds the NUL too) */
    if (strchr("nNtTfF.+-", s[0])) {
        if (match_ci(s, "null", "Null", "NULL")) { lua_pushlightuserdata(L, NULL); return; }
        if (match_ci(s, "true", "True", "TRUE")) { lua_pushboolean(L, 1); return; }
        if (match_ci(s, "false", "False", "FALSE")) { lua_pushboolean(L, 0); return; }
        if (match_ci(s, ".inf", ".Inf", ".INF") || match_ci(s, "+.inf", "+.Inf", "+.INF")) {
            lua_pushnumber(L, HUGE_VAL); return;
        }
        if (match_ci(s, "-.inf", "-.Inf", "-.INF")) { lua_pushnumber(L, -HUGE_VAL); return; }
        if (match_ci(s, ".nan", ".NaN", ".NAN")) { lua_pushnumber(L, NAN); return; }
    }
    const char *p = s;
    int sign = (*p == '-' || *p == '+');
    if (sign) p++;
    if (p[0] == '0' && (p[1] == 'x' || p[1] == 'o') && p[2] && !sign) {
        char *end;
        errno = 0;
        unsigned long long v = strtoull(p + 2, &end, p[1] == 'x' ? 16 : 8);
        if (*end == 0 && errno == 0 && v <= (unsigned long long)LLONG_MAX) {
            lua_pushinteger(L, (lua_Integer)v);
            return;
        }
    }
    /* decimal integer: [-+]?[0-9]+ */
    size_t i = 0;
    while (p[i] >= '0' && p[i] <= '9') i++;
    if (i > 0 && p[i] == 0) {
        char *end;
        errno = 0;
        long long v = strtoll(s, &end, 10);
        if (errno == 0) { lua_pushinteger(L, (lua_Integer)v); return; }
        lua_pushnumber(L, strtod(s, NULL));   /* too big for an integer: a float */
        return;
    }
    /* float: [-+]? ( \. [0-9]+ | [0-9]+ ( \. [0-9]* )? ) ( [eE] [-+]? [0-9]+ )? */
    i = 0;
    size_t digits = 0;
    while (p[i] >= '0' && p[i] <= '9') { i++; digits++; }
    if (p[i] == '.') { i++; while (p[i] >= '0' && p[i] <= '9') { i++; digits++; } }
    if (digits > 0 && (p[i] == 'e' || p[i] == 'E')) {
        size_t j = i + 1;
        if (p[j] == '-' || p[j] == '+') j++;
        size_t e = 0;
        while (p[j] >= '0' && p[j] <= '9') { j++; e++; }
        if (e > 0) i = j; else digits = 0;
    }
    if (digits > 0 && p[i] == 0) { lua_pushnumber(L, strtod(s, NULL)); return; }
    lua_pushlstring(L, s, len);
}

