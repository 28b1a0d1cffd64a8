/* The release binary runs on any glibc >= 2.31 (Debian 11, Ubuntu 20.04),
 * though it is built on Debian 12's glibc 2.36.  A program linked there
 * asks for the newest version of a handful of symbols: __libc_start_main,
 * dlopen & co. and pthread_create & co. (moved into libc in 2.34;
 * pthread_sigmask in 2.32), stat & co.
 * (real functions since 2.33; before, inline wrappers of __xstat).  Older
 * glibcs lack those versions and refuse to start the program.
 *
 * Linked only into the release build (make dist, make deb) with
 * -Wl,--wrap=SYMBOL for each of them (packaging/glibc_compat.mk): every
 * call, ours and the static Lua archive's, reaches __wrap_SYMBOL here,
 * which calls the oldest version of the symbol, which every glibc since
 * still exports.  dlopen & co. lived in libdl before 2.34: the release
 * build keeps libdl.so.2 as a needed library (a stub on 2.34 and later).
 * tools/glibc-check.sh holds the result to <= 2.31 with objdump -T. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE         /* sigset_t (built without the project's flags) */
#endif
#include <dlfcn.h>
#include <pthread.h>
#include <signal.h>
#include <stddef.h>
#include <sys/stat.h>

#if defined(__x86_64__)
#define OLD "GLIBC_2.2.5"
#define STAT_VER 1          /* _STAT_VER_LINUX */
#elif defined(__aarch64__)
#define OLD "GLIBC_2.17"    /* aarch64's first glibc */
#define STAT_VER 0          /* _STAT_VER_KERNEL */
#else
#error "glibc_compat.c: the release build is made for x86_64 and aarch64 only"
#endif

#define OLDVER(sym, local) __asm__(".symver " #local "," #sym "@" OLD)

int old_libc_start_main(int (*main)(int, char **, char **), int argc, char **argv,
                        void (*init)(int, char **, char **), void (*fini)(void),
                        void (*rtld_fini)(void), void *stack_end);
void *old_dlopen(const char *file, int mode);
void *old_dlsym(void *handle, const char *name);
int old_dlclose(void *handle);
char *old_dlerror(void);
int old_pthread_create(pthread_t *t, const pthread_attr_t *a, void *(*f)(void *), void *arg);
int old_pthread_attr_setstacksize(pthread_attr_t *a, size_t size);
int old_pthread_join(pthread_t t, void **ret);
int old_pthread_sigmask(int how, const sigset_t *set, sigset_t *old);
int old_xstat(int ver, const char *path, struct stat *st);
int old_lxstat(int ver, const char *path, struct stat *st);
int old_fxstat(int ver, int fd, struct stat *st);
OLDVER(__libc_start_main, old_libc_start_main);
OLDVER(dlopen, old_dlopen);
OLDVER(dlsym, old_dlsym);
OLDVER(dlclose, old_dlclose);
OLDVER(dlerror, old_dlerror);
OLDVER(pthread_create, old_pthread_create);
OLDVER(pthread_attr_setstacksize, old_pthread_attr_setstacksize);
OLDVER(pthread_join, old_pthread_join);
OLDVER(pthread_sigmask, old_pthread_sigmask);
OLDVER(__xstat, old_xstat);
OLDVER(__lxstat, old_lxstat);
OLDVER(__fxstat, old_fxstat);

/* Before 2.34 the program ran its own constructors: __libc_start_main
 * called the init function crt1.o passed (__libc_csu_init, from
 * libc_nonshared.a).  2.34's crt1.o passes none, and an old glibc would
 * then run none: this is that init function.  Given one, 2.34 and later
 * call it instead of running the constructors themselves: once either way.
 * (Destructors are run by the dynamic loader on every version.) */
extern void (*__preinit_array_start[])(int, char **, char **) __attribute__((visibility("hidden")));
extern void (*__preinit_array_end[])(int, char **, char **) __attribute__((visibility("hidden")));
extern void (*__init_array_start[])(int, char **, char **) __attribute__((visibility("hidden")));
extern void (*__init_array_end[])(int, char **, char **) __attribute__((visibility("hidden")));

static void run_init_arrays(int argc, char **argv, char **envp)
{
    for (size_t i = 0; i < (size_t)(__preinit_array_end - __preinit_array_start); i++)
        __preinit_array_start[i](argc, argv, envp);
    for (size_t i = 0; i < (size_t)(__init_array_end - __init_array_start); i++)
        __init_array_start[i](argc, argv, envp);
}

int __wrap___libc_start_main(int (*main)(int, char **, char **), int argc, char **argv,
                             void (*init)(int, char **, char **), void (*fini)(void),
                             void (*rtld_fini)(void), void *stack_end);
int __wrap___libc_start_main(int (*main)(int, char **, char **), int argc, char **argv,
                             void (*init)(int, char **, char **), void (*fini)(void),
                             void (*rtld_fini)(void), void *stack_end)
{
    return old_libc_start_main(main, argc, argv, init ? init : run_init_arrays, fini,
                               rtld_fini, stack_end);
}

void *__wrap_dlopen(const char *file, int mode);
void *__wrap_dlopen(const char *file, int mode) { return old_dlopen(file, mode); }
void *__wrap_dlsym(void *handle, const char *name);
void *__wrap_dlsym(void *handle, const char *name) { return old_dlsym(handle, name); }
int __wrap_dlclose(void *handle);
int __wrap_dlclose(void *handle) { return old_dlclose(handle); }
char *__wrap_dlerror(void);
char *__wrap_dlerror(void) { return old_dlerror(); }

int __wrap_pthread_create(pthread_t *t, const pthread_attr_t *a, void *(*f)(void *), void *arg);
int __wrap_pthread_create(pthread_t *t, const pthread_attr_t *a, void *(*f)(void *), void *arg)
{
    return old_pthread_create(t, a, f, arg);
}
int __wrap_pthread_attr_setstacksize(pthread_attr_t *a, size_t size);
int __wrap_pthread_attr_setstacksize(pthread_attr_t *a, size_t size)
{
    return old_pthread_attr_setstacksize(a, size);
}
int __wrap_pthread_join(pthread_t t, void **ret);
int __wrap_pthread_join(pthread_t t, void **ret) { return old_pthread_join(t, ret); }
int __wrap_pthread_sigmask(int how, const sigset_t *set, sigset_t *old);
int __wrap_pthread_sigmask(int how, const sigset_t *set, sigset_t *old) { return old_pthread_sigmask(how, set, old); }

int __wrap_stat(const char *path, struct stat *st);
int __wrap_stat(const char *path, struct stat *st) { return old_xstat(STAT_VER, path, st); }
int __wrap_lstat(const char *path, struct stat *st);
int __wrap_lstat(const char *path, struct stat *st) { return old_lxstat(STAT_VER, path, st); }
int __wrap_fstat(int fd, struct stat *st);
int __wrap_fstat(int fd, struct stat *st) { return old_fxstat(STAT_VER, fd, st); }
