/* Finding a file compiled into the binary (embedded.h holds the generated
 * table): a bisection, the table being sorted by path. */
#include <stdlib.h>
#include <string.h>
#include "embed.h"

static int by_path(const void *key, const void *entry)
{
    return strcmp(key, ((const struct fluence_embedded *)entry)->path);
}

const struct fluence_embedded *fluence_embedded_find(const char *path)
{
    return bsearch(path, fluence_embedded_files, fluence_embedded_count, sizeof fluence_embedded_files[0], by_path);
}
