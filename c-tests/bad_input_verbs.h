/* What the bad-input programs of the verbs transports (bad_input_rc.c and
 * bad_input_ud.c) share: the command line, opening the ib memory domain
 * (ib_md_open.h), telling whether the library in use is the C original, a
 * monotonic clock, and the parent's side of a case run in a forked child
 * (collecting its output, judging how it ended). */
#ifndef UCT_RS_TEST_BAD_INPUT_VERBS_H
#define UCT_RS_TEST_BAD_INPUT_VERBS_H

#include "ib_md_open.h"

#include <uct/api/uct.h>

#include <dlfcn.h>
#include <limits.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/* The command line: [-d DEV] [--strict|--original] [-v] [CASE-FILTER...].
 * forced: 1 for --strict, 0 for --original, -1 when neither was given;
 * first: the index of the first filter word (argc when there is none).  dev
 * keeps the value the caller put there unless -d names another. */
typedef struct {
    const char *dev;
    int verbose;
    int forced;
    int first;
} bi_args_t;

static inline void bi_parse_args(int argc, char **argv, bi_args_t *a)
{
    int i;

    a->forced = -1;
    a->first  = argc;
    for (i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--strict")) {
            a->forced = 1;
        } else if (!strcmp(argv[i], "--original")) {
            a->forced = 0;
        } else if (!strcmp(argv[i], "-v")) {
            a->verbose = 1;
        } else if (!strcmp(argv[i], "-d") && i + 1 < argc) {
            a->dev = argv[++i];
        } else {
            a->first = i;
            break;
        }
    }
}

/* Whether the case NAME is to run: no filter words, or one of them is part
 * of NAME. */
static inline int bi_selected(const char *name, int argc, char **argv, int first)
{
    int any = (first >= argc), i;

    for (i = first; i < argc; i++) {
        any |= strstr(name, argv[i]) != NULL;
    }
    return any;
}

/* Milliseconds of the monotonic clock. */
static inline int64_t bi_now_ms(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Whether uct_iface_open comes from the C original: the file
 * $UCT_SYSTEM_LIB names (Debian's path when unset or empty).  Prints where
 * it comes from. */
static inline int bi_library_is_original(void)
{
    const char *sys = getenv("UCT_SYSTEM_LIB");
    char a[PATH_MAX], b[PATH_MAX];
    Dl_info info;
    void *sym = dlsym(RTLD_DEFAULT, "uct_iface_open");

    if (sys == NULL || *sys == '\0') {
        sys = "/usr/lib/x86_64-linux-gnu/libuct.so.0";
    }
    if (sym == NULL || !dladdr(sym, &info) || info.dli_fname == NULL ||
        realpath(info.dli_fname, a) == NULL || realpath(sys, b) == NULL) {
        return 0;
    }
    printf("# uct_iface_open from %s\n", a);
    return !strcmp(a, b);
}

/* Read a child's output from FD until it closes (then close FD), keeping
 * what fits in OUT (SIZE bytes with the terminating NUL). */
static inline void bi_read_child(int fd, char *out, size_t size)
{
    char buf[512];
    size_t len = 0;
    ssize_t n;

    out[0] = '\0';
    while ((n = read(fd, buf, sizeof(buf))) > 0) {
        if (len + (size_t)n < size - 1) {
            memcpy(out + len, buf, (size_t)n);
            len += (size_t)n;
            out[len] = '\0';
        }
    }
    close(fd);
}

/* Print the verdict line of the case NAME whose child ended with the wait
 * status ST, and return 1 when it passed.  Exit 0 passes; exit 77 (its
 * fixture could not be built) and any other ending fail, except a crash of
 * the original (STRICT 0), which is recorded and accepted.  A SIGALRM is a
 * hang: the child did not reach a verdict within TIMEOUT_SEC. */
static inline int bi_judge(const char *name, int st, int strict, int timeout_sec)
{
    if (WIFEXITED(st) && WEXITSTATUS(st) == 0) {
        printf("PASS  %s\n", name);
        return 1;
    }
    if (WIFEXITED(st) && WEXITSTATUS(st) == 77) {
        printf("FAIL  %s: setup failed\n", name);
    } else if (WIFSIGNALED(st) && WTERMSIG(st) == SIGALRM) {
        printf("FAIL  %s: hang (no verdict within %d s)\n", name, timeout_sec);
    } else if (WIFSIGNALED(st) && !strict) {
        printf("PASS  %s: the original crashed (signal %d): ours must not\n", name,
               WTERMSIG(st));
        return 1;
    } else if (WIFSIGNALED(st)) {
        printf("FAIL  %s: crash (signal %d)\n", name, WTERMSIG(st));
    } else {
        printf("FAIL  %s\n", name);
    }
    return 0;
}

#endif
