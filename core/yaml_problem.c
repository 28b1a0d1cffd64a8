/* One wording of libyaml's parse errors (see yaml_problem.h). */
#include <lua.h>
#include "yaml_problem.h"

/* The byte at 0-based line and column (a column counts characters, as
 * libyaml's marks do), or -1 past the end. */
static int byte_at(const char *text, size_t len, size_t line, size_t column)
{
    size_t i = 0;
    for (size_t l = 0; l < line; l++) {
        while (i < len && text[i] != '\n') i++;
        if (i >= len) return -1;
        i++;
    }
    for (size_t c = 0; c < column && i < len && text[i] != '\n'; c++) {
        i++;
        while (i < len && ((unsigned char)text[i] & 0xC0) == 0x80) i++;   /* UTF-8 continuation */
    }
    return i < len ? (unsigned char)text[i] : -1;
}

const char *fluence_yaml_tab_problem(const yaml_parser_t *p, const char *text, size_t len)
{
    if (p->error == YAML_SCANNER_ERROR && text &&
        byte_at(text, len, p->problem_mark.line, p->problem_mark.column) == '\t')
        return "found a tab character where YAML allows only spaces (indent with spaces)";
    return NULL;
}

void fluence_yaml_push_problem(lua_State *L, const yaml_parser_t *p, const char *text, size_t len)
{
    const char *tab = fluence_yaml_tab_problem(p, text, len);
    if (tab) lua_pushstring(L, tab);
    else lua_pushfstring(L, "%s%s%s", p->problem ? p->problem : "invalid YAML",
                         p->context ? " " : "", p->context ? p->context : "");
}
