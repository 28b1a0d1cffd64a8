/* Reading an outside file whole, bounded: the one way fluence reads a file
 * it did not write (attribute files, kubeconfigs and the files they name,
 * the service account's, AWS credentials, plugin sources, policy files,
 * jobspecs, test cases; fluence.sys.read_file is its Lua entry point).
 * Large inputs (a manifest, a JGF graph) that are regular files are mapped
 * instead (fluence_map below): the page cache's own pages, no copy.
 *
 * Every file has a size limit, so a device or a FIFO that never ends
 * (/dev/zero as an attribute file) is refused with its name, at the limit,
 * instead of exhausting memory:
 *
 *   FLUENCE_READ_LIMIT   64 MiB: any file but a manifest
 *   fluence_max_input()  512 MiB, or FLUENCE_MAX_INPUT bytes: a manifest
 *                        (a file, or stdin)
 *
 * Credentials and configuration (every file a kubeconfig leads to, the AWS
 * files) are read with FLUENCE_READ_REGULAR: opened without blocking
 * (O_NONBLOCK: a FIFO without a writer, a terminal) and refused unless fstat
 * calls them regular files, so none can hang a run; /dev/null (under any
 * name) is the one device taken, as empty ("KUBECONFIG=/dev/null" means no
 * configuration).  Without the flag a FIFO or a pipe is read to its end
 * (within the limit): `--attributes <(make-attributes)` works, and a plugin
 * reading one stays under its plugin time limit. */
#ifndef FLUENCE_READFILE_H
#define FLUENCE_READFILE_H
#include <stddef.h>
#include <sys/types.h>
#include <lua.h>

#define FLUENCE_READ_LIMIT ((size_t)64 * 1024 * 1024)

enum {
    FLUENCE_READ_SECRET = 1,        /* wipe every copy before freeing it */
    FLUENCE_READ_REGULAR = 2        /* a regular file only (or /dev/null), opened without
                                     * blocking: a FIFO or a device is refused, not waited on */
};

/* The room for the reason of a failed read (fluence_readfile's why). */
#define FLUENCE_READ_WHY 128

/* Reads path ("-": stdin) into a malloc'd buffer with a NUL after its len
 * bytes.  Returns 0, or an errno value: EISDIR for a directory, EFBIG when
 * there are more than limit bytes (also in a file that grows while it is
 * read), ENODEV for what FLUENCE_READ_REGULAR refuses, what open(2) or
 * read(2) said.  why (NULL, or FLUENCE_READ_WHY bytes) then holds the reason
 * as a message shows it, without the path: "not a regular file (a FIFO)",
 * "larger than 64 MiB, ...", "No such file or directory".  The buffer is
 * the caller's to free (and, for a secret, to wipe first). */
int fluence_readfile(const char *path, size_t limit, int flags, char **data, size_t *len, char *why);

/* Writes into why (NULL, or FLUENCE_READ_WHY bytes) the reason for err, as
 * fluence_readfile does: type is the file's (stat's st_mode) for ENODEV,
 * limit the one it was read with for EFBIG (the manifest limit's says how
 * to change it).  For manifest.read, which reads its own way. */
void fluence_read_reason(char *why, int err, mode_t type, size_t limit);

/* The manifest limit: FLUENCE_MAX_INPUT bytes when set, else 512 MiB. */
size_t fluence_max_input(void);

/* Maps len bytes of the regular file open at fd read-only, private (flags:
 * FLUENCE_MAP_POPULATE: every page at once; else they are read in order,
 * MADV_SEQUENTIAL), for the large inputs: manifests (manifest.c) and JGF
 * graphs (match.c).  A file truncated while it is mapped would end the
 * process with SIGBUS: a handler names it instead -- "fluence: PATH: the
 * file changed (was truncated) while it was being read" -- and exits with
 * code 3, as for any input that does not read.  NULL when it cannot be
 * mapped (64 maps at once, or mmap refused): read it instead. */
enum { FLUENCE_MAP_POPULATE = 1 };
const char *fluence_map(int fd, size_t len, const char *path, int flags);
void fluence_unmap(const char *p, size_t len);
/* Hands the whole pages of [from, to) of a mapping fluence_map made back to
 * the kernel, once read (parsed, written out): they leave the process's
 * memory and, should they be read again, come back from the file.  A large
 * input is read front to back, so its peak memory is what is made of it,
 * not the text as well. */
void fluence_release(const char *from, const char *to);

/* What a parse keeps mapped behind the document it reached (libyaml reads
 * ahead, errors quote back): released in steps of as much again. */
#define FLUENCE_RELEASE_LAG ((size_t)8 << 20)
/* A parse of mapped text has reached byte `at`: what lies more than
 * FLUENCE_RELEASE_LAG behind it goes back, in steps of as much again;
 * *released is where the last step ended (0 at first).  Every parse of a
 * mapped text (both threads of a split one, manifest_split.h) steps so. */
void fluence_release_behind(const char *text, size_t *released, size_t at);

/* [-0, +1]  "PATH: why" ("-" named <stdin>). */
const char *fluence_push_read_error(lua_State *L, const char *path, const char *why);

#endif
