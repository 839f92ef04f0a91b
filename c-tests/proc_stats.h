/* What a test process reads about itself from /proc: its resident set size
 * and its number of open file descriptors.  Shared by the attack server and
 * the soak. */
#ifndef UCT_RS_TEST_PROC_STATS_H
#define UCT_RS_TEST_PROC_STATS_H

#include <dirent.h>
#include <stdio.h>

/* VmRSS in KB, -1 if it cannot be read. */
static inline long rss_kb(void)
{
    char line[256];
    long kb = -1;
    FILE *f = fopen("/proc/self/status", "r");

    if (f == NULL) {
        return -1;
    }
    while (fgets(line, sizeof(line), f)) {
        if (sscanf(line, "VmRSS: %ld", &kb) == 1) {
            break;
        }
    }
    fclose(f);
    return kb;
}

/* Open descriptors (not counting the one reading the directory), -1 on
 * error. */
static inline int fd_count(void)
{
    DIR *d = opendir("/proc/self/fd");
    struct dirent *e;
    int n = 0;

    if (d == NULL) {
        return -1;
    }
    while ((e = readdir(d)) != NULL) {
        n += e->d_name[0] != '.';
    }
    closedir(d);
    return n - 1;
}

#endif
