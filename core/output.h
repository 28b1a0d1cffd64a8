/* Writing to stdout and stderr: every write whole (partial writes, EINTR),
 * every failure on stdout remembered, and a check at exit as coreutils'
 * close_stdout makes one: a selection written into a full disk, or to a
 * closed stdout, must not end the run with 0 as though it had been written.
 * (A write to a pipe whose reader has gone ends the process with SIGPIPE,
 * as it should: exit status 141 in a shell.) */
#ifndef FLUENCE_OUTPUT_H
#define FLUENCE_OUTPUT_H
#include <stddef.h>
#include <sys/uio.h>

/* Writes all of buf to fd.  0 or an errno value; on fd 1 a failure is also
 * remembered for fluence_close_stdout. */
int fluence_write(int fd, const char *buf, size_t len);

/* The same for iov[0..n) (iov is modified). */
int fluence_writev(int fd, struct iovec *iov, int n);

/* At start: a standard descriptor (0, 1, 2) that is closed is opened on
 * /dev/null the wrong way round (stdout read-only), so that no file or socket
 * fluence opens takes its number, and writing to a closed stdout fails
 * (EBADF) instead of landing in whatever took it. */
void fluence_guard_std_fds(void);

/* At exit, with the run's exit code: flushes and closes stdout.  A failure
 * now or remembered is reported on stderr ("fluence: write error: REASON")
 * and returns FLUENCE_EXIT_OUTPUT when rc was 0 (an error already reported
 * keeps its code); otherwise returns rc. */
int fluence_close_stdout(int rc);

#endif
