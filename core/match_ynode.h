/* A YAML document as a small tree (libyaml events, first document only),
 * for the two jobspec readers: fluence's own (match_jobspec.c) and
 * Fluxion's (match_jobspec_fluxion.c). */
#ifndef FLUENCE_MATCH_YNODE_H
#define FLUENCE_MATCH_YNODE_H
#include <stdbool.h>
#include <stddef.h>

enum { YN_SCALAR, YN_MAP, YN_SEQ };

typedef struct ynode {
    int kind;
    int plain;               /* plain (unquoted) scalar */
    char *val;               /* scalar text */
    struct ynode **kids;     /* map: key,value pairs; seq: items */
    int nkids, cap;
    int line, col;           /* 1-based */
} ynode;

/* NULL and a message ("LINE:COL: YAML error: ...") in err when the text is
 * not YAML (or has aliases, or nests deeper than 256). */
ynode *ynode_parse(const char *text, size_t len, char *err, size_t errlen);
void ynode_free(ynode *n);
/* A mapping's value for key (the first, if repeated); NULL when absent. */
const ynode *ynode_get(const ynode *map, const char *key);
/* A plain ~, null, Null, NULL or empty scalar. */
bool ynode_is_null(const ynode *n);

#endif
