/*
 * OpenSHMEM (Open MPI's oshmem, spml ucx) over libucp over libuct: each PE
 * puts 4096 longs to the next one and gets 16 back, every PE adds 100 times
 * to a counter on PE 0 with fetch-add, then a compare-swap; every value is
 * checked. PE 0 prints "shmem_check: OK" or "shmem_check: FAIL".
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
