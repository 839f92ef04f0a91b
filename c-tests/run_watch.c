/*
 * run_watch - run a command with a time limit and record how it ended.
 *
 *   run_watch SECONDS STATUSFILE COMMAND [ARG...]
 *
 * Writes one line to STATUSFILE: "exit N", "signal N" or "timeout".  A shell
 * cannot tell "killed by signal 14" from "exit 142"; the test scripts need
 * that difference to separate a clean error exit (UCX programs exit with a
 * negative ucs_status_t, i.e. 156..255) from a crash.
 * The command runs in its own process group, which is killed on timeout.
 * Exit status: the command's exit status, 128+N after signal N, 124 after a
 * timeout, 125 if the command could not be started.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static volatile pid_t g_child = -1;

/* If run_watch itself is told to stop, take the command down with it. */
static void on_stop(int sig)
{
    if (g_child > 0) {
        kill(-g_child, SIGKILL);
        kill(g_child, SIGKILL);
    }
    signal(sig, SIG_DFL);
    raise(sig);
}

static void record(const char *path, const char *fmt, int value)
{
    FILE *f = fopen(path, "w");

    if (f == NULL) {
        perror(path);
        return;
    }
    fprintf(f, fmt, value);
    fputc('\n', f);
    fclose(f);
}

int main(int argc, char **argv)
{
    const struct timespec step = { 0, 10 * 1000 * 1000 }; /* 10 ms */
    double limit, waited = 0;
    int status;
    pid_t pid, r;

    if (argc < 4) {
        fprintf(stderr, "usage: %s SECONDS STATUSFILE COMMAND [ARG...]\n",
                argv[0]);
        return 125;
    }
    limit = atof(argv[1]);

    pid = fork();
    if (pid < 0) {
        perror("fork");
        return 125;
    }
    if (pid == 0) {
        setpgid(0, 0);
        execvp(argv[3], argv + 3);
        fprintf(stderr, "run_watch: cannot run %s: %s\n", argv[3],
                strerror(errno));
        _exit(127);
    }
    setpgid(pid, pid);
    g_child = pid;
    signal(SIGTERM, on_stop);
    signal(SIGINT, on_stop);
    signal(SIGHUP, on_stop);

    for (;;) {
        r = waitpid(pid, &status, WNOHANG);
        if (r == pid) {
            break;
        }
        if ((r < 0) && (errno != EINTR)) {
            perror("waitpid");
            return 125;
        }
        if (waited >= limit) {
            kill(-pid, SIGKILL);
            kill(pid, SIGKILL);
            waitpid(pid, &status, 0);
            record(argv[2], "timeout", 0);
            return 124;
        }
        nanosleep(&step, NULL);
        waited += 0.01;
    }

    if (WIFSIGNALED(status)) {
        record(argv[2], "signal %d", WTERMSIG(status));
        return 128 + WTERMSIG(status);
    }
    record(argv[2], "exit %d", WEXITSTATUS(status));
    return WEXITSTATUS(status);
}
