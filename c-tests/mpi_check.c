/*
 * MPI over libucp over libuct (Open MPI's pml/osc ucx, MPICH's ch4:ucx): ranks exchange
 * messages of 1 B to 4 MiB both ways (eager and rendezvous) in pairs (0-1,
 * 2-3, ...; with an odd count the last rank sits this out) and check every
 * byte, then an allreduce, an MPI_Put through a window and a
 * MPI_Fetch_and_op, a 1 MiB broadcast, an all-to-all of 64 KiB per pair, a
 * strided (vector) datatype send, a 1 MiB MPI_Get plus an MPI_Accumulate,
 * and a passive-target counter under a compare-and-swap lock (lock_all,
 * flush). Rank 0 prints "mpi_check: OK" or "mpi_check: FAIL";
 * the exit status is 0 only when every check held on every rank.
 * With the argument --maps, every rank also prints the libuct.so file it
 * has mapped ("mpi_check: rank N libuct PATH", from /proc/self/maps).
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
int main(int argc, char **argv) {
    int rank, size, errs = 0;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    size_t sizes[] = {1, 8, 1000, 8192, 65536, 300000, 4 << 20};
    int partner = rank ^ 1;
    for (int s = 0; s < 7; s++) {
        size_t n = sizes[s];
        unsigned char *buf = malloc(n);
        for (int it = 0; it < 20; it++) {
            if (partner >= size) {
                /* no partner */
            } else if (rank % 2 == 0) {
                for (size_t i = 0; i < n; i++) buf[i] = (unsigned char)(i * 7 + it + s);
                MPI_Send(buf, n, MPI_BYTE, partner, it, MPI_COMM_WORLD);
                MPI_Recv(buf, n, MPI_BYTE, partner, it, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
                for (size_t i = 0; i < n; i++) if (buf[i] != (unsigned char)(i * 3 + it)) { errs++; break; }
            } else {
                MPI_Recv(buf, n, MPI_BYTE, partner, it, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
                for (size_t i = 0; i < n; i++) if (buf[i] != (unsigned char)(i * 7 + it + s)) { errs++; break; }
                for (size_t i = 0; i < n; i++) buf[i] = (unsigned char)(i * 3 + it);
                MPI_Send(buf, n, MPI_BYTE, partner, it, MPI_COMM_WORLD);
            }
        }
        free(buf);
    }
    /* collectives */
    long v = rank + 1, sum = 0;
    MPI_Allreduce(&v, &sum, 1, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
    if (sum != (long)size * (size + 1) / 2) errs++;
    /* one-sided */
    long *win_buf; MPI_Win win;
    MPI_Win_allocate(1024 * sizeof(long), sizeof(long), MPI_INFO_NULL, MPI_COMM_WORLD, &win_buf, &win);
    for (int i = 0; i < 1024; i++) win_buf[i] = -1;
    MPI_Win_fence(0, win);
    long src[1024]; for (int i = 0; i < 1024; i++) src[i] = rank * 10000 + i;
    MPI_Put(src, 1024, MPI_LONG, (rank + 1) % size, 0, 1024, MPI_LONG, win);
    MPI_Win_fence(0, win);
    int from = (rank + size - 1) % size;
    for (int i = 0; i < 1024; i++) if (win_buf[i] != from * 10000 + i) { errs++; break; }
    long one = 1, old;
    MPI_Win_fence(0, win);
    MPI_Fetch_and_op(&one, &old, MPI_LONG, 0, 0, MPI_SUM, win);
    MPI_Win_fence(0, win);
    /* rank 0's element 0 held the put of rank size-1, plus one per rank */
    if (rank == 0 && win_buf[0] != (long)(size - 1) * 10000 + size) errs++;
    MPI_Win_free(&win);
    /* a 1 MiB broadcast */
    size_t bn = 1 << 20;
    unsigned char *bb = malloc(bn);
    for (size_t i = 0; i < bn; i++) bb[i] = rank == 0 ? (unsigned char)(i * 13 + 5) : 0;
    MPI_Bcast(bb, (int)bn, MPI_BYTE, 0, MPI_COMM_WORLD);
    for (size_t i = 0; i < bn; i++) if (bb[i] != (unsigned char)(i * 13 + 5)) { errs++; break; }
    free(bb);
    /* all-to-all, 64 KiB per pair */
    int an = 65536;
    unsigned char *as = malloc((size_t)an * size), *ar = malloc((size_t)an * size);
    for (int p = 0; p < size; p++)
        for (int i = 0; i < an; i++) as[(size_t)p * an + i] = (unsigned char)(rank * 31 + p * 7 + i);
    MPI_Alltoall(as, an, MPI_BYTE, ar, an, MPI_BYTE, MPI_COMM_WORLD);
    for (int p = 0; p < size; p++)
        for (int i = 0; i < an; i++)
            if (ar[(size_t)p * an + i] != (unsigned char)(p * 31 + rank * 7 + i)) { errs++; p = size; break; }
    free(as);
    free(ar);
    /* a strided datatype: every other long of 2 x 32768 */
    if (size >= 2 && rank < 2) {
        long *sv = malloc(2 * 32768 * sizeof(long));
        MPI_Datatype vec;
        MPI_Type_vector(32768, 1, 2, MPI_LONG, &vec);
        MPI_Type_commit(&vec);
        if (rank == 0) {
            for (int i = 0; i < 2 * 32768; i++) sv[i] = i;
            MPI_Send(sv, 1, vec, 1, 99, MPI_COMM_WORLD);
        } else {
            MPI_Recv(sv, 32768, MPI_LONG, 0, 99, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            for (int i = 0; i < 32768; i++) if (sv[i] != 2L * i) { errs++; break; }
        }
        MPI_Type_free(&vec);
        free(sv);
    }
    /* one-sided, larger: MPI_Get of 1 MiB and MPI_Accumulate */
    long *big; MPI_Win bwin;
    int bl = (1 << 20) / (int)sizeof(long);
    MPI_Win_allocate((MPI_Aint)bl * sizeof(long), sizeof(long), MPI_INFO_NULL, MPI_COMM_WORLD, &big, &bwin);
    for (int i = 0; i < bl; i++) big[i] = (long)rank * 1000000 + i;
    long *got = malloc((size_t)bl * sizeof(long));
    MPI_Win_fence(0, bwin);
    MPI_Get(got, bl, MPI_LONG, from, 0, bl, MPI_LONG, bwin);
    MPI_Win_fence(0, bwin);
    for (int i = 0; i < bl; i++) if (got[i] != (long)from * 1000000 + i) { errs++; break; }
    for (int i = 0; i < 1024; i++) got[i] = rank + 1;
    MPI_Accumulate(got, 1024, MPI_LONG, 0, 0, 1024, MPI_LONG, MPI_SUM, bwin);
    MPI_Win_fence(0, bwin);
    if (rank == 0)
        for (int i = 0; i < 1024; i++)
            if (big[i] != i + (long)size * (size + 1) / 2) { errs++; break; }
    MPI_Win_free(&bwin);
    free(got);
    /* passive target: a lock built from MPI_Compare_and_swap, counters
     * updated with MPI_Accumulate and read back with MPI_Get under
     * MPI_Win_lock_all / MPI_Win_flush */
    long *pw; MPI_Win pwin;
    MPI_Win_allocate(2 * sizeof(long), sizeof(long), MPI_INFO_NULL, MPI_COMM_WORLD, &pw, &pwin);
    pw[0] = 0; pw[1] = 0;
    MPI_Barrier(MPI_COMM_WORLD);
    MPI_Win_lock_all(0, pwin);
    for (int it = 0; it < 50; it++) {
        long unlocked = 0, me = rank + 1, prev = -1;
        do {   /* take the lock word on rank 0 */
            MPI_Compare_and_swap(&me, &unlocked, &prev, MPI_LONG, 0, 0, pwin);
            MPI_Win_flush(0, pwin);
        } while (prev != 0);
        long cur = -1, one2 = 1;
        MPI_Get(&cur, 1, MPI_LONG, 0, 1, 1, MPI_LONG, pwin);
        MPI_Win_flush(0, pwin);
        cur += one2;
        MPI_Put(&cur, 1, MPI_LONG, 0, 1, 1, MPI_LONG, pwin);
        MPI_Win_flush(0, pwin);
        long zero = 0, dummy;
        MPI_Fetch_and_op(&zero, &dummy, MPI_LONG, 0, 0, MPI_REPLACE, pwin);   /* unlock */
        MPI_Win_flush(0, pwin);
    }
    MPI_Win_unlock_all(pwin);
    MPI_Barrier(MPI_COMM_WORLD);
    /* the read-modify-write under the lock lost no update */
    if (rank == 0 && pw[1] != 50L * size) errs++;
    MPI_Win_free(&pwin);
    int total = 0;
    MPI_Allreduce(&errs, &total, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (rank == 0) printf("mpi_check: %s (%d errors)\n", total ? "FAIL" : "OK", total);
    if (argc > 1 && !strcmp(argv[1], "--maps")) {
        FILE *maps = fopen("/proc/self/maps", "r");
        char line[4096], seen[4096] = "";
        while (maps && fgets(line, sizeof line, maps)) {
            char *path = strchr(line, '/');
            if (!path || !strstr(path, "/libuct.so")) continue;
            path[strcspn(path, "\n")] = 0;
            if (strcmp(path, seen)) {
                printf("mpi_check: rank %d libuct %s\n", rank, path);
                snprintf(seen, sizeof seen, "%s", path);
            }
        }
        if (maps) fclose(maps);
        fflush(stdout);
    }
    MPI_Finalize();
    return total != 0;
}
