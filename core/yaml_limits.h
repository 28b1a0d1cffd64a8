/* The bounds every YAML reader in fluence holds its input to: fluence.yaml
 * (kubeconfigs, the cluster's fluence-resources, attribute files the fast
 * reader leaves to it) and the manifest reader.  fluence.attrfile takes no
 * anchors or aliases and nests only as its format does, so it needs none.
 *
 * YAML's aliases let a few bytes stand for a huge value, or (an alias inside
 * its own anchor) a cyclic one; every consumer walks the value as though it
 * were expanded (the offerings walk, a manifest's JSON for apply, the
 * resource graph), so a reader refuses, with the place named:
 *
 *   depth      collections nested more than FLUENCE_YAML_MAX_DEPTH deep;
 *   cycles     an alias naming a node that is still open (it would contain
 *              itself), and a merge key ("<<") whose value is not a mapping
 *              or a list of mappings (merging never recurses);
 *   expansion  aliases that together stand for more than the budget below:
 *              a budget proportional to the input (FLOOR + RATIO x its bytes),
 *              as hardened loaders bound alias expansion by the document's
 *              own size rather than by a fixed count.  An alias costs the
 *              weight of the node it names: a scalar weighs 1 + its length in
 *              bytes, a collection 1 + the weights of its members, so the
 *              budget is roughly the bytes the aliases would expand to.  The
 *              budget is for a whole input (every document of a stream). */
#ifndef FLUENCE_YAML_LIMITS_H
#define FLUENCE_YAML_LIMITS_H
#include <stddef.h>

#define FLUENCE_YAML_MAX_DEPTH 256
#define FLUENCE_YAML_ALIAS_FLOOR (1024.0 * 1024.0)
#define FLUENCE_YAML_ALIAS_RATIO 4.0

#define FLUENCE_YAML_TOO_DEEP "nesting too deep (more than 256 levels)"
#define FLUENCE_YAML_TOO_BIG "aliases expand to too large a document (more than 1 MiB plus 4 times " \
                             "the input's size; a \"billion laughs\" attack?)"
#define FLUENCE_YAML_BAD_MERGE "merge key \"<<\" needs a mapping or a list of mappings"

/* The weight of alias expansion an input of len bytes may hold. */
static inline double fluence_yaml_alias_budget(size_t len)
{
    return FLUENCE_YAML_ALIAS_FLOOR + FLUENCE_YAML_ALIAS_RATIO * (double)len;
}

/* The weight of a scalar of len bytes. */
static inline double fluence_yaml_scalar_weight(size_t len)
{
    return 1.0 + (double)len;
}

#endif
