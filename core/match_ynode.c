/* A YAML document as a small tree: see match_ynode.h. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <yaml.h>
#include "match_ynode.h"
#include "yaml_problem.h"

void ynode_free(ynode *n)
{
    if (!n) return;
    for (int i = 0; i < n->nkids; i++) ynode_free(n->kids[i]);
    free(n->kids);
    free(n->val);
    free(n);
}

static int ynode_push(ynode *p, ynode *k)
{
    if (p->nkids == p->cap) {
        int nc = p->cap ? p->cap * 2 : 8;
        ynode **t = realloc(p->kids, (size_t)nc * sizeof *t);
        if (!t) return -1;
        p->kids = t;
        p->cap = nc;
    }
    p->kids[p->nkids++] = k;
    return 0;
}

/* Builds the tree from libyaml events (first document only). */
ynode *ynode_parse(const char *text, size_t len, char *err, size_t errlen)
{
    yaml_parser_t parser;
    yaml_event_t ev;
    if (!yaml_parser_initialize(&parser)) {
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    yaml_parser_set_input_string(&parser, (const unsigned char *)text, len);
    ynode *stack[256];
    int sp = 0;
    ynode *root = NULL;
    int done = 0;
    while (!done) {
        if (!yaml_parser_parse(&parser, &ev)) {
            const char *tab = fluence_yaml_tab_problem(&parser, text, len);
            snprintf(err, errlen, "%zu:%zu: YAML error: %s", parser.problem_mark.line + 1,
                     parser.problem_mark.column + 1, tab ? tab : parser.problem ? parser.problem : "syntax error");
            goto fail;
        }
        ynode *n = NULL;
        switch (ev.type) {
        case YAML_STREAM_END_EVENT:
        case YAML_DOCUMENT_END_EVENT:
            if (root) done = 1;
            if (ev.type == YAML_STREAM_END_EVENT) done = 1;
            break;
        case YAML_ALIAS_EVENT:
            snprintf(err, errlen, "%zu:%zu: YAML aliases are not supported in jobspecs", ev.start_mark.line + 1,
                     ev.start_mark.column + 1);
            yaml_event_delete(&ev);
            goto fail;
        case YAML_SCALAR_EVENT:
        case YAML_MAPPING_START_EVENT:
        case YAML_SEQUENCE_START_EVENT:
            n = calloc(1, sizeof *n);
            if (!n) {
                snprintf(err, errlen, "out of memory");
                yaml_event_delete(&ev);
                goto fail;
            }
            n->line = (int)ev.start_mark.line + 1;
            n->col = (int)ev.start_mark.column + 1;
            if (ev.type == YAML_SCALAR_EVENT) {
                n->kind = YN_SCALAR;
                n->val = malloc(ev.data.scalar.length + 1);
                if (!n->val) {
                    free(n);
                    snprintf(err, errlen, "out of memory");
                    yaml_event_delete(&ev);
                    goto fail;
                }
                memcpy(n->val, ev.data.scalar.value, ev.data.scalar.length);
                n->val[ev.data.scalar.length] = 0;
                n->plain = ev.data.scalar.style == YAML_PLAIN_SCALAR_STYLE;
            } else {
                n->kind = ev.type == YAML_MAPPING_START_EVENT ? YN_MAP : YN_SEQ;
            }
            if (sp > 0) {
                if (ynode_push(stack[sp - 1], n) < 0) {
                    ynode_free(n);
                    snprintf(err, errlen, "out of memory");
                    yaml_event_delete(&ev);
                    goto fail;
                }
            } else if (!root) {
                root = n;
            } else {
                ynode_free(n);
            }
            if (n->kind != YN_SCALAR) {
                if (sp == 256) {
                    snprintf(err, errlen, "jobspec nesting too deep");
                    yaml_event_delete(&ev);
                    goto fail;
                }
                stack[sp++] = n;
            }
            break;
        case YAML_MAPPING_END_EVENT:
        case YAML_SEQUENCE_END_EVENT:
            if (sp > 0) sp--;
            break;
        default:
            break;
        }
        yaml_event_delete(&ev);
    }
    yaml_parser_delete(&parser);
    if (!root && errlen) err[0] = 0; /* no document: no message */
    return root;
fail:
    yaml_parser_delete(&parser);
    ynode_free(root);
    return NULL;
}

const ynode *ynode_get(const ynode *m, const char *key)
{
    if (!m || m->kind != YN_MAP) return NULL;
    for (int i = 0; i + 1 < m->nkids; i += 2)
        if (m->kids[i]->kind == YN_SCALAR && strcmp(m->kids[i]->val, key) == 0) return m->kids[i + 1];
    return NULL;
}

bool ynode_is_null(const ynode *n)
{
    if (n->kind != YN_SCALAR || !n->plain) return false;
    static const char *const nulls[] = {"", "~", "null", "Null", "NULL"};
    for (size_t i = 0; i < sizeof nulls / sizeof nulls[0]; i++)
        if (!strcmp(n->val, nulls[i])) return true;
    return false;
}

