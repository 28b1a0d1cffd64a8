/* fluence.manifest, part 5: an object's metadata checked as kubectl checks it
 * before sending anything.
 *
 * kubectl (cli-runtime's metadataValidatingDecoder) decodes a document's
 * apiVersion, kind and metadata into Go types, and refuses the whole input
 * on the first value of another type: `labels: {tier: 1}` ("json: cannot
 * unmarshal number into Go struct field ObjectMeta.metadata.labels of type
 * string"), `annotations: {enabled: yes}` (YAML 1.1: a boolean).  fluence
 * refuses what kubectl refuses, located at the value, naming the field and
 * saying what kubectl says; of several, the one kubectl reports (Go decodes
 * the fields in kubectl's JSON, whose keys are sorted).  Items of a List
 * are not checked (kubectl does not either: the server refuses them). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <lauxlib.h>
#include "escape.h"
#include "manifest_json.h"
#include "manifest_meta.h"
#include "yaml_kubectl.h"

enum { W_STRING, W_MAP, W_SEQ, W_INT, W_BOOL, W_TIME };

struct problem {
    char order[256];            /* the JSON path, components separated by \1 */
    size_t at;
    char msg[600];
    int set;
};

/* What kubectl reads node v as: Go's JSON word (string, number, bool,
 * object, array, null) */
static const char *json_word(const struct mtree *t, size_t v, struct yk_value *yv)
{
    const struct mnode *n = mt_resolve(t, v, NULL);
    if (!n) return "null";
    if (n->type == MN_MAP) return "object";
    if (n->type == MN_SEQ) return "array";
    mt_kubectl(t, v, yv);
    switch (yv->kind) {
    case YK_NULL: return "null";
    case YK_BOOL: return "bool";
    case YK_INT: case YK_UINT: case YK_FLOAT: return "number";
    default: return "string";     /* a string, a !!binary; a scalar in error fails when written */
    }
}

/* "kubectl reads 1 as a number" / "a mapping" */
static void reading(const struct mtree *t, size_t v, const char *word, char *out, size_t cap)
{
    const struct mnode *n = mt_resolve(t, v, NULL);
    if (n->type == MN_MAP) { snprintf(out, cap, "a mapping"); return; }
    if (n->type == MN_SEQ) { snprintf(out, cap, "a sequence"); return; }
    char shown[64];
    fluence_escape_into(shown, sizeof shown, t->arena + n->val, n->len, 0);
    const char *as = strcmp(word, "bool") == 0 ? "a boolean" : strcmp(word, "number") == 0 ? "a number" :
                     strcmp(word, "null") == 0 ? "null" : "a string";
    if (n->style == YAML_PLAIN_SCALAR_STYLE && n->tag == YK_TAG_NONE && strcmp(as, "a string") != 0)
        snprintf(out, cap, "kubectl reads %s as %s (YAML 1.1)", n->len ? shown : "an empty value", as);
    else snprintf(out, cap, "%s", as);
}

int mm_is_string(const struct mtree *t, size_t v)
{
    struct yk_value yv;
    const char *word = json_word(t, v, &yv);
    return strcmp(word, "string") == 0 || strcmp(word, "null") == 0;
}

int mm_not_string(const struct mtree *t, size_t v, const char *path, char *msg, size_t cap)
{
    struct yk_value yv;
    const char *word = json_word(t, v, &yv);
    if (strcmp(word, "string") == 0 || strcmp(word, "null") == 0) return 0;
    char r[128];
    reading(t, v, word, r, sizeof r);
    const struct mnode *n = mt_resolve(t, v, NULL);
    char shown[64] = "";
    if (n->type == MN_SCALAR) fluence_escape_into(shown, sizeof shown, t->arena + n->val, n->len, 0);
    snprintf(msg, cap, "%s: %s, not a string%s%s%s", path, r, n->type == MN_SCALAR ? ": quote it (\"" : "",
             shown, n->type == MN_SCALAR ? "\")" : "");
    return 1;
}

/* Records a problem at value v of the field at JSON path order (olen
 * bytes): kept when kubectl would report it first. */
static void consider(struct problem *pr, const char *order, size_t olen, size_t at, const char *msg)
{
    if (pr->set) {
        size_t n = strlen(pr->order);
        int c = memcmp(order, pr->order, olen < n ? olen : n);
        if (c > 0 || (c == 0 && olen >= n)) return;
    }
    pr->set = 1;
    snprintf(pr->order, sizeof pr->order, "%.*s", (int)olen, order);
    pr->at = at;
    snprintf(pr->msg, sizeof pr->msg, "%s", msg);
}

/* RFC 3339 as Go's time.Parse(time.RFC3339) takes it */
static int rfc3339(const char *s)
{
    const char *f = "dddd-dd-ddTdd:dd:dd";
    for (; *f; f++, s++) {
        if (*f == 'd' ? !(*s >= '0' && *s <= '9') : *s != *f) return 0;
    }
    if (*s == '.') { s++; if (!(*s >= '0' && *s <= '9')) return 0; while (*s >= '0' && *s <= '9') s++; }
    if (*s == 'Z') return s[1] == 0;
    return (*s == '+' || *s == '-') && s[1] >= '0' && s[1] <= '9' && s[2] >= '0' && s[2] <= '9' && s[3] == ':' &&
           s[4] >= '0' && s[4] <= '9' && s[5] >= '0' && s[5] <= '9' && s[6] == 0;
}

/* Checks value v (of the field at path, JSON order `order`) against what
 * Go type gotype of struct field gofield wants. */
static void check_value(const struct mtree *t, struct problem *pr, size_t v, int want, const char *path,
                        const char *order, size_t olen, const char *gofield, const char *gotype)
{
    if (!v) return;
    struct yk_value yv;
    const char *word = json_word(t, v, &yv);
    if (strcmp(word, "null") == 0) return;
    char got[80];
    snprintf(got, sizeof got, "%s", word);
    int ok;
    switch (want) {
    case W_STRING: case W_TIME: ok = strcmp(word, "string") == 0; break;
    case W_MAP: ok = strcmp(word, "object") == 0; break;
    case W_SEQ: ok = strcmp(word, "array") == 0; break;
    case W_BOOL: ok = strcmp(word, "bool") == 0; break;
    default: {                                             /* W_INT: an int64 */
        char num[40] = "";
        ok = yv.kind == YK_INT;
        if (!ok && strcmp(word, "number") == 0) {
            if (yv.kind == YK_UINT) snprintf(num, sizeof num, "%llu", yv.u);
            else if (yk_json_number(&yv, num) && !strpbrk(num, ".eE")) {
                char *end;
                errno = 0;
                strtoll(num, &end, 10);
                ok = *end == 0 && errno != ERANGE;       /* 1e3 is sent as 1000 */
            }
            if (!ok) snprintf(got, sizeof got, "number %s", num);
        }
    }
    }
    char msg[600];
    if (ok && want == W_TIME) {
        const struct mnode *n = mt_resolve(t, v, NULL);
        if (rfc3339(t->arena + n->val)) return;
        char shown[64];
        fluence_escape_into(shown, sizeof shown, t->arena + n->val, n->len, 0);
        snprintf(msg, sizeof msg, "%s: \"%s\" is not a time as RFC 3339 writes it (2006-01-02T15:04:05Z), nor null; "
                 "kubectl refuses the document (parsing time \"%s\" as \"2006-01-02T15:04:05Z07:00\")",
                 path, shown, shown);
        consider(pr, order, olen, t->nodes[v].start, msg);
        return;
    }
    if (ok) return;
    static const char *const wanted[] = {"a string", "a mapping", "a sequence (a list)", "an integer",
                                         "true or false", "a string (a time)"};
    char r[128];
    reading(t, v, word, r, sizeof r);
    const struct mnode *n = mt_resolve(t, v, NULL);
    char hint[80] = "";
    if (want == W_STRING && n->type == MN_SCALAR) {
        char shown[64];
        fluence_escape_into(shown, sizeof shown, t->arena + n->val, n->len, 0);
        snprintf(hint, sizeof hint, ": quote it (\"%s\")", shown);
    }
    snprintf(msg, sizeof msg, "%s: %s, not %s%s; kubectl refuses the document (json: cannot unmarshal %s into "
             "Go struct field %s of type %s)", path, r, wanted[want], hint, got, gofield, gotype);
    consider(pr, order, olen, t->nodes[v].start, msg);
}

/* The string values of a map[string]string (labels, annotations) */
static void string_map(lua_State *L, struct mparse *p, struct problem *pr, size_t v, const char *field)
{
    const struct mtree *t = &p->tree;
    char path[160], order[256], gofield[64];
    snprintf(path, sizeof path, "metadata.%s", field);
    snprintf(order, sizeof order, "metadata\1%s", field);
    snprintf(gofield, sizeof gofield, "ObjectMeta.metadata.%s", field);
    check_value(t, pr, v, W_MAP, path, order, strlen(order), gofield, "map[string]string");
    size_t m;
    const struct mnode *mn = mt_resolve(t, v, &m);
    if (!mn || mn->type != MN_MAP) return;
    int e = lua_gettop(L) + 1;
    int n = mj_entries(L, p, m);
    for (int j = 0; j < n; j++) {
        size_t klen;
        lua_rawgeti(L, e, 2 * j + 1);
        const char *key = lua_tolstring(L, -1, &klen);
        lua_rawgeti(L, e, 2 * j + 2);
        size_t val = (size_t)lua_tointeger(L, -1);
        char shown[80];
        fluence_escape_into(shown, sizeof shown, key, klen, 0);
        snprintf(path, sizeof path, "metadata.%s %s", field, shown);
        int olen = snprintf(order, sizeof order, "metadata\1%s\1%.*s", field, (int)(klen < 200 ? klen : 200), key);
        check_value(t, pr, val, W_STRING, path, order, (size_t)olen < sizeof order ? (size_t)olen : sizeof order - 1,
                    gofield, "string");
        lua_pop(L, 2);
    }
    lua_pop(L, 1);
}

/* The items of a list field: each item's check */
static void list_items(lua_State *L, struct mparse *p, struct problem *pr, size_t v, const char *field,
                       const char *gotype, int owners)
{
    const struct mtree *t = &p->tree;
    char path[160], order[256], gofield[96];
    snprintf(path, sizeof path, "metadata.%s", field);
    snprintf(order, sizeof order, "metadata\1%s", field);
    snprintf(gofield, sizeof gofield, "ObjectMeta.metadata.%s", field);
    check_value(t, pr, v, W_SEQ, path, order, strlen(order), gofield, gotype);
    size_t s;
    const struct mnode *sn = mt_resolve(t, v, &s);
    if (!sn || sn->type != MN_SEQ || strcmp(gotype, "[]v1.ManagedFieldsEntry") == 0) return;
    size_t idx = 0;
    for (size_t c = sn->first; c; c = t->nodes[c].next, idx++) {
        snprintf(path, sizeof path, "metadata.%s[%zu]", field, idx);
        int olen = snprintf(order, sizeof order, "metadata\1%s\1%010zu", field, idx);
        if (!owners) {
            check_value(t, pr, c, W_STRING, path, order, (size_t)olen, gofield, "string");
            continue;
        }
        check_value(t, pr, c, W_MAP, path, order, (size_t)olen, gofield, "v1.OwnerReference");
        if (!mt_resolve(t, c, NULL) || mt_resolve(t, c, NULL)->type != MN_MAP) continue;
        static const struct { const char *key; int want; const char *type; } fields[] = {
            {"apiVersion", W_STRING, "string"}, {"blockOwnerDeletion", W_BOOL, "bool"},
            {"controller", W_BOOL, "bool"}, {"kind", W_STRING, "string"}, {"name", W_STRING, "string"},
            {"uid", W_STRING, "types.UID"},
        };
        for (size_t f = 0; f < sizeof fields / sizeof fields[0]; f++) {
            char fpath[200], forder[256], fgo[96];
            snprintf(fpath, sizeof fpath, "%s.%s", path, fields[f].key);
            int fl = snprintf(forder, sizeof forder, "%s\1%s", order, fields[f].key);
            snprintf(fgo, sizeof fgo, "OwnerReference.metadata.ownerReferences.%s", fields[f].key);
            check_value(t, pr, mt_get(t, c, fields[f].key, NULL), fields[f].want, fpath, forder, (size_t)fl, fgo,
                        fields[f].type);
        }
    }
}

void mm_check(lua_State *L, struct mparse *p, size_t obj)
{
    const struct mtree *t = &p->tree;
    struct problem pr;
    pr.set = 0;
    luaL_checkstack(L, 8, "manifest");
    check_value(t, &pr, mt_get(t, obj, "apiVersion", NULL), W_STRING, "apiVersion", "apiVersion", 10,
                "metadataOnlyObject.apiVersion", "string");
    check_value(t, &pr, mt_get(t, obj, "kind", NULL), W_STRING, "kind", "kind", 4,
                "metadataOnlyObject.kind", "string");
    size_t meta = mt_get(t, obj, "metadata", NULL);
    check_value(t, &pr, meta, W_MAP, "metadata", "metadata", 8, "metadataOnlyObject.metadata", "v1.ObjectMeta");
    const struct mnode *mn = mt_resolve(t, meta, &meta);
    if (mn && mn->type == MN_MAP) {
        static const struct { const char *key; int want; const char *type; } fields[] = {
            {"creationTimestamp", W_TIME, "string"}, {"deletionGracePeriodSeconds", W_INT, "int64"},
            {"deletionTimestamp", W_TIME, "string"}, {"generateName", W_STRING, "string"},
            {"generation", W_INT, "int64"}, {"name", W_STRING, "string"}, {"namespace", W_STRING, "string"},
            {"resourceVersion", W_STRING, "string"}, {"selfLink", W_STRING, "string"},
            {"uid", W_STRING, "types.UID"},
        };
        for (size_t f = 0; f < sizeof fields / sizeof fields[0]; f++) {
            char path[64], order[64], go[96];
            snprintf(path, sizeof path, "metadata.%s", fields[f].key);
            int ol = snprintf(order, sizeof order, "metadata\1%s", fields[f].key);
            snprintf(go, sizeof go, "ObjectMeta.metadata.%s", fields[f].key);
            check_value(t, &pr, mt_get(t, meta, fields[f].key, NULL), fields[f].want, path, order, (size_t)ol, go,
                        fields[f].type);
        }
        string_map(L, p, &pr, mt_get(t, meta, "annotations", NULL), "annotations");
        string_map(L, p, &pr, mt_get(t, meta, "labels", NULL), "labels");
        list_items(L, p, &pr, mt_get(t, meta, "finalizers", NULL), "finalizers", "[]string", 0);
        list_items(L, p, &pr, mt_get(t, meta, "managedFields", NULL), "managedFields", "[]v1.ManagedFieldsEntry", 0);
        list_items(L, p, &pr, mt_get(t, meta, "ownerReferences", NULL), "ownerReferences", "[]v1.OwnerReference", 1);
    }
    if (pr.set) mp_error(L, p, pr.at, pr.msg);
}
