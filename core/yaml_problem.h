/* The message for a libyaml parse error, the same in every YAML reader. */
#ifndef FLUENCE_YAML_PROBLEM_H
#define FLUENCE_YAML_PROBLEM_H
#include <stddef.h>
#include <lua.h>
#include <yaml.h>

/* Pushes "PROBLEM CONTEXT" for the parser's error, or, when the character
 * at the problem mark is a tab, a message saying so: libyaml words a tab
 * used to indent as "found character that cannot start any token", which
 * does not name the invisible culprit.  text/len: the parsed input. */
void fluence_yaml_push_problem(lua_State *L, const yaml_parser_t *p, const char *text, size_t len);

/* That message when the problem is a tab, else NULL (for readers that
 * word their errors without Lua). */
const char *fluence_yaml_tab_problem(const yaml_parser_t *p, const char *text, size_t len);

#endif
