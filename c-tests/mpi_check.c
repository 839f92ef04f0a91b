/*
 * Open MPI over libucp over libuct (pml ucx, osc ucx): two ranks exchange
 * messages of 1 B to 4 MiB both ways (eager and rendezvous) and check every
 * byte, then an allreduce, an MPI_Put through a window and a
 * MPI_Fetch_and_op. Rank 0 prints "mpi_check: OK" or "mpi_check: FAIL";
 * the exit status is 0 only when every check held on every rank.
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
    for (int s = 0; s < 7; s++) {
        size_t n = sizes[s];
        unsigned char *buf = malloc(n);
        for (int it = 0; it < 20; it++) {
            if (rank == 0) {
                for (size_t i = 0; i < n; i++) buf[i] = (unsigned char)(i * 7 + it + s);
                MPI_Send(buf, n, MPI_BYTE, 1, it, MPI_COMM_WORLD);
                MPI_Recv(buf, n, MPI_BYTE, 1, it, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
                for (size_t i = 0; i < n; i++) if (buf[i] != (unsigned char)(i * 3 + it)) { errs++; break; }
            } else if (rank == 1) {
                MPI_Recv(buf, n, MPI_BYTE, 0, it, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
                for (size_t i = 0; i < n; i++) if (buf[i] != (unsigned char)(i * 7 + it + s)) { errs++; break; }
                for (size_t i = 0; i < n; i++) buf[i] = (unsigned char)(i * 3 + it);
                MPI_Send(buf, n, MPI_BYTE, 0, it, MPI_COMM_WORLD);
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
    int total = 0;
    MPI_Allreduce(&errs, &total, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (rank == 0) printf("mpi_check: %s (%d errors)\n", total ? "FAIL" : "OK", total);
    MPI_Finalize();
    return total != 0;
}
