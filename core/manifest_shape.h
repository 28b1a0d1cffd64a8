/* fluence.manifest's shape checks (manifest_shape.c). */
#ifndef FLUENCE_MANIFEST_SHAPE_H
#define FLUENCE_MANIFEST_SHAPE_H
#include <stddef.h>
#include "manifest_tree.h"

/* Wrong-typed fields on the paths fluence reads (metadata,
 * annotations, labels, spec, pod templates, containers) of object obj.  The
 * first problem of each class, located at its key: err[1] among the fields
 * that decide whether the object targets Fluence, err[0] among annotations.
 * msg[0] == 0: none.  scheduler: a spec on those paths names the fluence
 * scheduler (so the object targets Fluence even if its pod is malformed). */
struct mshape_error { size_t at; char msg[192]; };
struct mshape { struct mshape_error err[2]; int scheduler; };
void ms_check(const struct mtree *t, size_t obj, struct mshape *s);

#endif
