/* fluence.manifest's table of known kinds (manifest_kinds.c). */
#ifndef FLUENCE_MANIFEST_KINDS_H
#define FLUENCE_MANIFEST_KINDS_H
#include <lua.h>

/* Where known kinds keep their pods.  A pod: the
 * mapping at path `at` from the object holds its metadata under key `meta`,
 * its schedulerName at path `scheduler` and its containers at `containers`
 * (NULL: none to read); `inherit`: the object's path to the scheduler its
 * pods take when they name none; `group`: the pods target Fluence when the
 * object has the group label (its operator labels them so). */
struct mk_pod { const char *at, *meta, *scheduler, *containers, *inherit; int group; };
struct mk_kind { const char *group, *kind; const struct mk_pod *pods; const char *source; };
extern const struct mk_pod mk_pod_template;        /* the shape: metadata, spec.containers */
const struct mk_kind *mk_find(const char *api_version, const char *kind);
int mk_push_table(lua_State *L);                   /* manifest.kinds() */

#endif
