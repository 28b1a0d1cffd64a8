/* timeit: runs commands N times each and prints, per command, the median,
 * minimum and maximum wall time in milliseconds, the largest peak RSS in
 * MiB and the median CPU time (user + system) in milliseconds, as one line:
 *   median_ms min_ms max_ms peak_rss_mib median_cpu_ms
 * (wall and CPU differ where a run works on two threads at once: a row that
 * meets its goal on wall time shows its CPU time too)
 *
 *   timeit [-n RUNS] [-i STDIN] [-o STDOUT] -- CMD ARGS... [::: CMD ARGS...]...
 *
 * Several commands (separated by ":::") run interleaved, round by round
 * (A B A B ...), so a measurement and its floor see the same machine: on a
 * shared machine the load drifts, and two back-to-back series would each
 * catch a different part of it.  stdout of a command goes to /dev/null (or to
 * -o FILE, for checking the output of the last run of the first command),
 * stderr to /dev/null; a non-zero exit of any run is reported and fails.
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

#define MAX_CMDS 8

static int cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* One run of argv; its wall time in ms (its CPU time in *cpu), or a
 * negative number on failure. */
static double run(char **argv, const char *in, const char *out, long *peak, double *cpu)
{
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_addopen(&fa, 0, in, O_RDONLY, 0);
    posix_spawn_file_actions_addopen(&fa, 1, out, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    posix_spawn_file_actions_addopen(&fa, 2, "/dev/null", O_WRONLY, 0);
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    pid_t pid;
    if (posix_spawnp(&pid, argv[0], &fa, NULL, argv, environ) != 0) {
        perror(argv[0]);
        posix_spawn_file_actions_destroy(&fa);
        return -1;
    }
    int status;
    struct rusage ru;
    if (wait4(pid, &status, 0, &ru) < 0) { perror("wait4"); return -1; }
    clock_gettime(CLOCK_MONOTONIC, &t1);
    posix_spawn_file_actions_destroy(&fa);
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
        fprintf(stderr, "timeit: %s exited with status %d\n", argv[0], WIFEXITED(status) ? WEXITSTATUS(status) : -1);
        return -1;
    }
    if (ru.ru_maxrss > *peak) *peak = ru.ru_maxrss;
    *cpu = (double)(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) * 1e3 +
           (double)(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e3;
    return (double)(t1.tv_sec - t0.tv_sec) * 1e3 + (double)(t1.tv_nsec - t0.tv_nsec) / 1e6;
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
    /* split the rest on ":::" (argv is ours to cut) */
    char **cmds[MAX_CMDS];
    int ncmds = 0;
    if (i < argc) cmds[ncmds++] = argv + i;
    for (int j = i; j < argc; j++) {
        if (strcmp(argv[j], ":::") != 0) continue;
        argv[j] = NULL;
        if (ncmds == MAX_CMDS || j + 1 >= argc) { ncmds = 0; break; }
        cmds[ncmds++] = argv + j + 1;
    }
    for (int c = 0; c < ncmds; c++) if (!cmds[c][0]) ncmds = 0;
    if (ncmds == 0 || n < 1) {
        fprintf(stderr, "usage: timeit [-n RUNS] [-i STDIN] [-o STDOUT] -- command args... [::: command args...]\n");
        return 2;
    }
    double *ms = calloc((size_t)n * (size_t)ncmds, sizeof *ms);
    double *cpu = calloc((size_t)n * (size_t)ncmds, sizeof *cpu);
    if (!ms || !cpu) { perror("timeit"); return 1; }
    long peak[MAX_CMDS] = {0};
    for (int r = 0; r < n; r++) {
        for (int c = 0; c < ncmds; c++) {
            double t = run(cmds[c], in, c == 0 ? out : "/dev/null", &peak[c], &cpu[c * n + r]);
            if (t < 0) return 1;
            ms[c * n + r] = t;
        }
    }
    for (int c = 0; c < ncmds; c++) {
        double *m = ms + c * n;
        qsort(m, (size_t)n, sizeof *m, cmp);
        double median = n % 2 ? m[n / 2] : (m[n / 2 - 1] + m[n / 2]) / 2;
        double *u = cpu + c * n;
        qsort(u, (size_t)n, sizeof *u, cmp);
        double cmedian = n % 2 ? u[n / 2] : (u[n / 2 - 1] + u[n / 2]) / 2;
        printf("%.2f %.2f %.2f %.1f %.2f\n", median, m[0], m[n - 1], (double)peak[c] / 1024.0, cmedian);
    }
    free(ms);
    free(cpu);
    return 0;
}
