/*
 * MPI ping-pong between ranks 0 and 1 (any further ranks only join the
 * barriers):
 *   latency    LAT_SIZE bytes (default 8) back and forth LAT_ITERS times
 *              after a warm-up; half the mean round trip, in us
 *   bandwidth  BW_SIZE bytes (default 1 MiB), a window of BW_WINDOW
 *              non-blocking sends answered by one 4-byte reply, BW_ITERS
 *              windows after a warm-up; MB/s (10^6 bytes per second)
 * Usage: mpi_pingpong [LAT_ITERS [BW_ITERS [LAT_SIZE [BW_SIZE [BW_WINDOW]]]]]
 * Rank 0 prints one line "pingpong lat_us=L bw_MBps=B" and the exit status
 * is 0; the first and last bytes of every received message are checked
 * (a mismatch prints "pingpong: FAIL" and exits 1).
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static long arg(int argc, char **argv, int i, long dflt)
{
    return argc > i ? strtol(argv[i], NULL, 0) : dflt;
}

int main(int argc, char **argv)
{
    int rank, size, bad = 0, all_bad = 0;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    long lat_iters = arg(argc, argv, 1, 20000);
    long bw_iters = arg(argc, argv, 2, 100);
    long lat_size = arg(argc, argv, 3, 8);
    long bw_size = arg(argc, argv, 4, 1 << 20);
    int window = (int)arg(argc, argv, 5, 16);
    if (size < 2 || lat_size < 1 || bw_size < 1 || window < 1 || lat_iters < 1 || bw_iters < 1) {
        if (rank == 0) fprintf(stderr, "pingpong: needs 2 ranks and positive arguments\n");
        MPI_Finalize();
        return 2;
    }
    int peer = rank == 0 ? 1 : 0;
    int active = rank < 2;
    unsigned char *small = calloc(1, (size_t)lat_size);
    unsigned char *big = malloc((size_t)bw_size * window);
    if (small == NULL || big == NULL) MPI_Abort(MPI_COMM_WORLD, 3);
    MPI_Request *req = malloc(sizeof(*req) * window);
    int ack = 0;

    /* latency: the message carries the iteration number in its first and
     * last byte, the reply echoes it */
    double t0 = 0, lat = 0;
    long warm = lat_iters / 10 + 10;
    MPI_Barrier(MPI_COMM_WORLD);
    for (long i = -warm; active && i < lat_iters; i++) {
        unsigned char tag = (unsigned char)i;
        if (i == 0) t0 = MPI_Wtime();
        if (rank == 0) {
            small[0] = small[lat_size - 1] = tag;
            MPI_Send(small, (int)lat_size, MPI_BYTE, peer, 1, MPI_COMM_WORLD);
            MPI_Recv(small, (int)lat_size, MPI_BYTE, peer, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        } else {
            MPI_Recv(small, (int)lat_size, MPI_BYTE, peer, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            MPI_Send(small, (int)lat_size, MPI_BYTE, peer, 1, MPI_COMM_WORLD);
        }
        if (small[0] != tag || small[lat_size - 1] != tag) bad = 1;
    }
    if (active) lat = (MPI_Wtime() - t0) / (double)lat_iters / 2 * 1e6;

    /* bandwidth: rank 0 streams windows, rank 1 acknowledges each */
    double bw = 0;
    warm = bw_iters / 10 + 2;
    MPI_Barrier(MPI_COMM_WORLD);
    for (long i = -warm; active && i < bw_iters; i++) {
        if (i == 0) t0 = MPI_Wtime();
        for (int w = 0; w < window; w++) {
            unsigned char *m = big + (size_t)w * bw_size;
            if (rank == 0) {
                m[0] = m[bw_size - 1] = (unsigned char)(i + w);
                MPI_Isend(m, (int)bw_size, MPI_BYTE, peer, 2, MPI_COMM_WORLD, &req[w]);
            } else {
                MPI_Irecv(m, (int)bw_size, MPI_BYTE, peer, 2, MPI_COMM_WORLD, &req[w]);
            }
        }
        MPI_Waitall(window, req, MPI_STATUSES_IGNORE);
        if (rank == 0) {
            MPI_Recv(&ack, 1, MPI_INT, peer, 3, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        } else {
            for (int w = 0; w < window; w++) {
                unsigned char *m = big + (size_t)w * bw_size;
                if (m[0] != (unsigned char)(i + w) || m[bw_size - 1] != (unsigned char)(i + w)) bad = 1;
            }
            MPI_Send(&ack, 1, MPI_INT, peer, 3, MPI_COMM_WORLD);
        }
    }
    if (active) bw = (double)bw_size * window * bw_iters / (MPI_Wtime() - t0) / 1e6;

    MPI_Allreduce(&bad, &all_bad, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    if (rank == 0) {
        if (all_bad)
            printf("pingpong: FAIL (a message arrived with the wrong contents)\n");
        else
            printf("pingpong lat_us=%.3f bw_MBps=%.1f\n", lat, bw);
    }
    free(req);
    free(big);
    free(small);
    MPI_Finalize();
    return all_bad;
}
