/* fluence.manifest, part 4: wrong-typed fields on the paths fluence reads.
 *
 * A Kubernetes object whose metadata is a list, whose annotations are a
 * list or whose spec.template is a string cannot be read the way fluence
 * reads objects: its policy, its group label or its scheduler would go
 * unseen and the object would pass through silently.  For an object that is
 * fluence's to touch that is bad input, located at the field; any other
 * object passes through untouched (manifest.c decides, with what this file
 * finds).
 *
 * Two classes: fields that decide whether the object targets Fluence
 * (metadata, labels, spec, pod templates, containers), which matter as soon
 * as the object targets Fluence or carries a select-policy; and
 * annotations, which matter when the object targets Fluence.  A label or
 * annotation value, a name or namespace, must also be a string as kubectl
 * reads YAML (`tier: 1` and `enabled: yes` are not: kubectl refuses them,
 * and fluence reads these fields). */
#include <stdio.h>
#include <string.h>
#include "escape.h"
#include "manifest_meta.h"
#include "manifest_shape.h"

static const char *found(const struct mtree *t, size_t v)
{
    const struct mnode *n = mt_resolve(t, v, NULL);
    if (n->type == MN_MAP) return "a mapping";
    if (n->type == MN_SEQ) return "a sequence";
    if ((n->flags & MF_STR) || mt_plain_is_string(t->arena + n->val, n->len)) return "a string";
    return "a number or boolean";
}

/* Records message msg at value v (as written: an alias points here, not at
 * its anchor), the first of each class. */
static void record_text(const struct mtree *t, struct mshape *s, int decides, size_t v, const char *msg)
{
    struct mshape_error *e = &s->err[decides ? 1 : 0];
    if (e->msg[0]) return;
    e->at = t->nodes[v].start;
    snprintf(e->msg, sizeof e->msg, "%s", msg);
}

/* A field's path as a message names it: a prefix ("" or "spec.template.")
 * and the rest, joined only when there is something to say (nearly every
 * object passes: joining them up front was a fifth of reading an object). */
#define PATH_MAX_LEN 160
static void join(char *out, const char *prefix, const char *rest)
{
    snprintf(out, PATH_MAX_LEN, "%s%s", prefix, rest);
}

static void record(const struct mtree *t, struct mshape *s, int decides, size_t v,
                   const char *path, const char *want)
{
    char msg[sizeof s->err[0].msg];
    snprintf(msg, sizeof msg, "%s must be %s, not %s", path, want, found(t, v));
    record_text(t, s, decides, v, msg);
}

/* A scalar kubectl reads as something else than the string the field
 * takes (`tier: 1`, `enabled: yes`): kubectl refuses it (the object's own
 * metadata) or the server does (a pod template's) */
static void want_string(const struct mtree *t, struct mshape *s, int decides, size_t v, const char *path)
{
    char msg[sizeof s->err[0].msg];
    if (v && !mm_is_string(t, v) && mm_not_string(t, v, path, msg, sizeof msg)) record_text(t, s, decides, v, msg);
}

/* The value of key in map when it has the wanted type; 0 when absent or null
 * (as if absent) or when it has another type (recorded at prefix + rest). */
static size_t expect(const struct mtree *t, struct mshape *s, size_t map, const char *key, int want,
                     int decides, const char *prefix, const char *rest)
{
    if (!map) return 0;
    size_t v = mt_get(t, map, key, NULL), r;
    if (!v || mt_is_null(t, v)) return 0;
    if (mt_resolve(t, v, &r)->type == want) return r;
    char path[PATH_MAX_LEN];
    join(path, prefix, rest);
    record(t, s, decides, v, path, want == MN_MAP ? "a mapping" : "a sequence (a list)");
    return 0;
}

/* String maps: annotations and labels.  A value that is not a scalar would
 * be dropped unseen (a select-policy written as a list). */
static void string_map(const struct mtree *t, struct mshape *s, size_t meta, const char *key, int decides,
                       const char *prefix, const char *rest)
{
    size_t m = expect(t, s, meta, key, MN_MAP, decides, prefix, rest);
    if (!m) return;
    for (size_t k = t->nodes[m].first; k; k = t->nodes[t->nodes[k].next].next) {
        size_t v = t->nodes[k].next;
        const struct mnode *kn = mt_resolve(t, k, NULL), *vn = mt_resolve(t, v, NULL);
        if (kn->type != MN_SCALAR || mt_is_merge_key(t, k)) continue;
        if (vn->type == MN_SCALAR && mm_is_string(t, v)) continue;
        char path[PATH_MAX_LEN], shown[64], what[PATH_MAX_LEN + 64];
        join(path, prefix, rest);
        fluence_escape_into(shown, sizeof shown, t->arena + kn->val, kn->len, 0);
        snprintf(what, sizeof what, "%s %s", path, shown);
        if (vn->type == MN_SCALAR) want_string(t, s, decides, v, what);
        else record(t, s, decides, v, what, "a string");
    }
}

static void metadata(const struct mtree *t, struct mshape *s, size_t holder, const char *prefix)
{
    size_t meta = expect(t, s, holder, "metadata", MN_MAP, 1, prefix, "metadata");
    static const char *const names[][2] = {{"name", "metadata.name"}, {"generateName", "metadata.generateName"},
                                           {"namespace", "metadata.namespace"}};
    for (int i = 0; meta && i < 3; i++) {
        size_t v = mt_get(t, meta, names[i][0], NULL);
        if (!v || mm_is_string(t, v)) continue;
        char path[PATH_MAX_LEN];
        join(path, prefix, names[i][1]);
        want_string(t, s, 1, v, path);
    }
    string_map(t, s, meta, "annotations", 0, prefix, "metadata.annotations");
    string_map(t, s, meta, "labels", 1, prefix, "metadata.labels");
}

/* spec.schedulerName: fluence, whatever the rest of the pod looks like */
static void scheduler(const struct mtree *t, struct mshape *s, size_t spec)
{
    const char *name = spec ? mt_str(t, mt_get(t, spec, "schedulerName", NULL)) : NULL;
    if (name && strcmp(name, "fluence") == 0) s->scheduler = 1;
}

/* A pod template: metadata, spec, spec.containers. */
static void pod(const struct mtree *t, struct mshape *s, size_t node, const char *prefix)
{
    metadata(t, s, node, prefix);
    size_t spec = expect(t, s, node, "spec", MN_MAP, 1, prefix, "spec");
    scheduler(t, s, spec);
    expect(t, s, spec, "containers", MN_SEQ, 1, prefix, "spec.containers");
    expect(t, s, spec, "initContainers", MN_SEQ, 1, prefix, "spec.initContainers");
}

void ms_check(const struct mtree *t, size_t obj, struct mshape *s)
{
    memset(s, 0, sizeof *s);
    metadata(t, s, obj, "");
    size_t spec = expect(t, s, obj, "spec", MN_MAP, 1, "", "spec");
    if (!spec) return;
    /* a Pod: spec.containers */
    scheduler(t, s, spec);
    expect(t, s, spec, "containers", MN_SEQ, 1, "", "spec.containers");
    expect(t, s, spec, "initContainers", MN_SEQ, 1, "", "spec.initContainers");
    /* a workload: spec.template; a CronJob: spec.jobTemplate.spec.template */
    size_t tmpl = expect(t, s, spec, "template", MN_MAP, 1, "", "spec.template");
    if (tmpl) pod(t, s, tmpl, "spec.template.");
    size_t jt = expect(t, s, spec, "jobTemplate", MN_MAP, 1, "", "spec.jobTemplate");
    size_t jspec = expect(t, s, jt, "spec", MN_MAP, 1, "", "spec.jobTemplate.spec");
    size_t jtmpl = expect(t, s, jspec, "template", MN_MAP, 1, "", "spec.jobTemplate.spec.template");
    if (jtmpl) pod(t, s, jtmpl, "spec.jobTemplate.spec.template.");
}
