/* timeit: runs a command N times and prints the median, minimum and maximum
 * wall time in milliseconds and the largest peak RSS in MiB, as one line:
 *   median_ms min_ms max_ms peak_rss_mib
 * stdout of the command goes to /dev/null (or to -o FILE, for checking the
 * output of the last run), stderr to /dev/null; a non-zero exit of any run
 * is reported and fails.
 * Whole-process timing: what a user waits for, startup included. */
#define _GNU_SOURCE
#include <fcntl.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

extern char **environ;

static int cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

int main(int argc, char **argv)
{
    int n = 20, i = 1;
    const char *out = "/dev/null", *in = "/dev/null";
    while (i < argc && argv[i][0] == '-') {
        if (!strcmp(argv[i], "-n") && i + 1 < argc) n = atoi(argv[i + 1]), i += 2;
        else if (!strcmp(argv[i], "-o") && i + 1 < argc) out = argv[i + 1], i += 2;
        else if (!strcmp(argv[i], "-i") && i + 1 < argc) in = argv[i + 1], i += 2;
        else if (!strcmp(argv[i], "--")) { i++; break; }
        else break;
    }
    if (i >= argc || n < 1) {
        fprintf(stderr, "usage: timeit [-n RUNS] [-i STDIN] [-o STDOUT] -- command args...\n");
        return 2;
    }
    double *ms = calloc((size_t)n, sizeof *ms);
    long peak = 0;
    for (int r = 0; r < n; r++) {
        posix_spawn_file_actions_t fa;
        posix_spawn_file_actions_init(&fa);
        posix_spawn_file_actions_addopen(&fa, 0, in, O_RDONLY, 0);
        posix_spawn_file_actions_addopen(&fa, 1, out, O_WRONLY | O_CREAT | O_TRUNC, 0644);
        posix_spawn_file_actions_addopen(&fa, 2, "/dev/null", O_WRONLY, 0);
        struct timespec t0, t1;
        clock_gettime(CLOCK_MONOTONIC, &t0);
        pid_t pid;
        if (posix_spawnp(&pid, argv[i], &fa, NULL, argv + i, environ) != 0) {
            perror(argv[i]);
            return 1;
        }
        int status;
        struct rusage ru;
        if (wait4(pid, &status, 0, &ru) < 0) { perror("wait4"); return 1; }
        clock_gettime(CLOCK_MONOTONIC, &t1);
        posix_spawn_file_actions_destroy(&fa);
        if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
            fprintf(stderr, "timeit: %s exited with status %d\n", argv[i], WIFEXITED(status) ? WEXITSTATUS(status) : -1);
            return 1;
        }
        ms[r] = (double)(t1.tv_sec - t0.tv_sec) * 1e3 + (double)(t1.tv_nsec - t0.tv_nsec) / 1e6;
        if (ru.ru_maxrss > peak) peak = ru.ru_maxrss;
    }
    qsort(ms, (size_t)n, sizeof *ms, cmp);
    double median = n % 2 ? ms[n / 2] : (ms[n / 2 - 1] + ms[n / 2]) / 2;
    printf("%.2f %.2f %.2f %.1f\n", median, ms[0], ms[n - 1], (double)peak / 1024.0);
    free(ms);
    return 0;
}
