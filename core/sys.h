/* What other C modules share with fluence.sys (core/sys.c): reading a file
 * that must be a regular file, bounded. */
#ifndef FLUENCE_SYS_H
#define FLUENCE_SYS_H
#include <stddef.h>

/* Reads the regular file at path whole, at most max bytes, into a malloc'd
 * buffer with a NUL after the data (*len: the length, when len is not NULL).
 *
 * Every credential, token and configuration file fluence reads comes through
 * here (kubeconfigs and the files they name, the service account's, AWS's),
 * so that none can hang a run or fill its memory: the open never blocks
 * (O_NONBLOCK: a FIFO without a writer, a terminal), anything fstat does not
 * call a regular file is refused (a FIFO, /dev/zero, a socket, a directory),
 * and so is a file over max bytes, also one that grows while it is read.
 * /dev/null (under any name) is the one device taken: it reads as empty,
 * as "KUBECONFIG=/dev/null" means no configuration.
 *
 * On failure: NULL, errno set (what open(2) said; EISDIR for a directory,
 * EINVAL for another file that is not regular, EFBIG over the limit, ENOMEM)
 * and why[] holding the reason as a message shows it: "not a regular file (a
 * FIFO)", "larger than 16 MiB", strerror's text.  The buffer may hold a
 * secret: the caller wipes it before freeing it (so do we, for the copies a
 * growing file leaves behind). */
char *sys_read_regular(const char *path, size_t max, size_t *len, char *why, size_t whylen);

#endif
