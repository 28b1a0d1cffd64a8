/* Reading an outside file whole, bounded: the one way fluence reads a file
 * it did not write (attribute files, kubeconfigs and the files they name,
 * AWS credentials, plugin sources, policy files, jobspecs, test cases).
 * Manifests are read by manifest.read (core/manifest.c: mapped, for speed)
 * under the manifest limit below; JGF graphs by core/match_graph.c.
 *
 * Every file has a size limit, so a device or a FIFO that never ends
 * (/dev/zero as an attribute file) is refused with its name, at the limit,
 * instead of exhausting memory:
 *
 *   FLUENCE_READ_LIMIT   64 MiB: any file but a manifest
 *   fluence_max_input()  512 MiB, or FLUENCE_MAX_INPUT bytes: a manifest
 *                        (a file, or stdin) */
#ifndef FLUENCE_READFILE_H
#define FLUENCE_READFILE_H
#include <stddef.h>
#include <lua.h>

#define FLUENCE_READ_LIMIT ((size_t)64 * 1024 * 1024)

enum {
    FLUENCE_READ_SECRET = 1,        /* wipe every copy before freeing it */
    FLUENCE_READ_REGULAR = 2        /* a regular file only (ENODEV otherwise), opened
                                     * without blocking: a FIFO is refused, not waited on */
};

/* Reads path ("-": stdin) into a malloc'd buffer with a NUL after its len
 * bytes.  Returns 0, or an errno value: EISDIR for a directory, EFBIG when
 * there are more than limit bytes, ENODEV for what FLUENCE_READ_REGULAR
 * refuses.  The buffer is the caller's to free (and,
 * for a secret, to wipe first). */
int fluence_readfile(const char *path, size_t limit, int flags, char **data, size_t *len);

/* The manifest limit: FLUENCE_MAX_INPUT bytes when set, else 512 MiB. */
size_t fluence_max_input(void);

/* [-0, +1]  "PATH: reason" for what fluence_readfile returned: for EFBIG
 * the limit, and how to change it when it is the manifest limit ("-" is
 * named <stdin>). */
const char *fluence_push_read_error(lua_State *L, const char *path, int err, size_t limit);

#endif
