/* Writing to stdout and stderr, checked (see output.h). */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include "exitcode.h"
#include "output.h"

static int stdout_error;          /* the first failure writing to stdout */
static int stdout_written;        /* anything was written (or tried) */

static int note(int fd, int err)
{
    if (fd == 1) {
        stdout_written = 1;
        if (err && !stdout_error) stdout_error = err;
    }
    return err;
}

int fluence_writev(int fd, struct iovec *iov, int n)
{
    while (n > 0) {
        ssize_t w = writev(fd, iov, n);
        if (w < 0) {
            if (errno == EINTR) continue;
            return note(fd, errno);
        }
        size_t left = (size_t)w;
        while (n > 0 && left >= iov->iov_len) { left -= iov->iov_len; iov++; n--; }
        if (n > 0) { iov->iov_base = (char *)iov->iov_base + left; iov->iov_len -= left; }
    }
    return note(fd, 0);
}

int fluence_write(int fd, const char *buf, size_t len)
{
    struct iovec iov = { (void *)buf, len };
    return fluence_writev(fd, &iov, 1);
}

void fluence_guard_std_fds(void)
{
    for (int fd = 0; fd <= 2; fd++) {
        if (fcntl(fd, F_GETFD) != -1 || errno != EBADF) continue;
        /* open() takes the lowest free number: fd itself */
        int g = open("/dev/null", fd == 0 ? O_WRONLY : O_RDONLY);
        if (g >= 0 && g != fd) close(g);
    }
}

int fluence_close_stdout(int rc)
{
    int err = stdout_error;
    /* help and the like go through stdio */
    int pending = fflush(stdout) != 0 ? errno : 0;
    if (!err && (pending || ferror(stdout))) err = pending ? pending : EIO;
    if (fclose(stdout) != 0 && !err && (stdout_written || errno != EBADF)) err = errno;
    if (!err) return rc;
    fprintf(stderr, "fluence: write error: %s\n", strerror(err));
    return rc ? rc : FLUENCE_EXIT_OUTPUT;
}
