/*
 * OpenSHMEM (Open MPI's oshmem, spml ucx) over libucp over libuct: each PE
 * puts 4096 longs to the next one and gets 16 back, every PE adds 100 times
 * to a counter on PE 0 with fetch-add, then a compare-swap; 1 MiB get and
 * put on the symmetric heap, a fenced put + flag with shmem_wait_until, a
 * broadcast and a sum reduction; every value is checked. PE 0 prints "shmem_check: OK" or "shmem_check: FAIL".
 */
#include <shmem.h>
#include <stdio.h>
#include <string.h>
int main(void) {
    static long target[4096];
    static long counter = 0;
    long src[4096];
    int errs = 0;
    shmem_init();
    int me = shmem_my_pe(), npes = shmem_n_pes();
    for (int i = 0; i < 4096; i++) src[i] = me * 100000 + i;
    shmem_barrier_all();
    shmem_long_put(target, src, 4096, (me + 1) % npes);
    shmem_barrier_all();
    int from = (me + npes - 1) % npes;
    for (int i = 0; i < 4096; i++) if (target[i] != from * 100000 + i) {
        printf("PE %d: put: target[%d] = %ld, want %d\n", me, i, target[i], from * 100000 + i); errs++; break; }
    long got[16];
    shmem_long_get(got, target, 16, (me + 1) % npes);
    for (int i = 0; i < 16; i++) if (got[i] != me * 100000 + i) {
        printf("PE %d: get: got[%d] = %ld, want %d\n", me, i, got[i], me * 100000 + i); errs++; break; }
    for (int i = 0; i < 100; i++) shmem_long_atomic_fetch_add(&counter, 1, 0);
    shmem_barrier_all();
    if (me == 0 && counter != 100L * npes) { printf("PE 0: fetch-add: counter %ld, want %ld\n", counter, 100L * npes); errs++; }
    shmem_barrier_all(); /* PE 0 has read the counter before anyone swaps it */
    long old = shmem_long_atomic_compare_swap(&counter, 100L * npes, -5, 0);
    shmem_barrier_all();
    if (me == 0 && counter != -5) { printf("PE 0: compare-swap: counter %ld, want -5\n", counter); errs++; }
    (void)old;
    /* a larger put and get (1 MiB, rendezvous sizes) on the symmetric heap */
    long *big = shmem_malloc(131072 * sizeof(long));
    long *back = shmem_malloc(131072 * sizeof(long));
    for (int i = 0; i < 131072; i++) big[i] = (long)me * 7 + i;
    shmem_barrier_all();
    shmem_long_get(back, big, 131072, (me + 1) % npes);
    for (int i = 0; i < 131072; i++) if (back[i] != (long)((me + 1) % npes) * 7 + i) {
        printf("PE %d: 1 MiB get: back[%d] = %ld\n", me, i, back[i]); errs++; break; }
    shmem_barrier_all();
    shmem_long_put(back, big, 131072, (me + 1) % npes);
    shmem_barrier_all();
    for (int i = 0; i < 131072; i++) if (back[i] != (long)from * 7 + i) {
        printf("PE %d: 1 MiB put: back[%d] = %ld\n", me, i, back[i]); errs++; break; }
    /* point-to-point synchronisation: a flag set with a put after the data
     * (ordered by shmem_fence), waited for with shmem_wait_until */
    static long data[64];
    static long flag = 0;
    long mine[64];
    for (int i = 0; i < 64; i++) mine[i] = me * 1000 + i;
    shmem_barrier_all();
    shmem_long_put(data, mine, 64, (me + 1) % npes);
    shmem_fence();
    shmem_long_atomic_set(&flag, 1, (me + 1) % npes);
    shmem_long_wait_until(&flag, SHMEM_CMP_EQ, 1);
    for (int i = 0; i < 64; i++) if (data[i] != from * 1000 + i) {
        printf("PE %d: fenced put: data[%d] = %ld\n", me, i, data[i]); errs++; break; }
    /* a broadcast and a reduction */
    static long bsrc[128], bdst[128], rsrc, rdst;
    static long pSync[SHMEM_BCAST_SYNC_SIZE], pSyncR[SHMEM_REDUCE_SYNC_SIZE];
    static long pWrk[SHMEM_REDUCE_MIN_WRKDATA_SIZE];
    for (int i = 0; i < SHMEM_BCAST_SYNC_SIZE; i++) pSync[i] = SHMEM_SYNC_VALUE;
    for (int i = 0; i < SHMEM_REDUCE_SYNC_SIZE; i++) pSyncR[i] = SHMEM_SYNC_VALUE;
    for (int i = 0; i < 128; i++) bsrc[i] = me == 0 ? 4242 + i : -1;
    rsrc = me + 1;
    shmem_barrier_all();
    shmem_broadcast64(bdst, bsrc, 128, 0, 0, 0, npes, pSync);
    shmem_long_sum_to_all(&rdst, &rsrc, 1, 0, 0, npes, pWrk, pSyncR);
    shmem_barrier_all();
    if (me != 0) for (int i = 0; i < 128; i++) if (bdst[i] != 4242 + i) {
        printf("PE %d: broadcast: bdst[%d] = %ld\n", me, i, bdst[i]); errs++; break; }
    if (rdst != (long)npes * (npes + 1) / 2) { printf("PE %d: sum: %ld\n", me, rdst); errs++; }
    shmem_free(big);
    shmem_free(back);
    static int total;
    static int e;
    e = errs;
    shmem_barrier_all();
    shmem_int_atomic_add(&total, e, 0);
    shmem_barrier_all();
    if (me == 0) printf("shmem_check: %s (%d errors)\n", total ? "FAIL" : "OK", total);
    shmem_finalize();
    return 0;
}
