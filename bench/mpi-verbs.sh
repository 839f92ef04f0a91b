#!/usr/bin/env bash
# Open MPI ping-pong over verbs, ours against the C original: two ranks of
# bench/mpi_pingpong.c (pml ucx, UCX_TLS=rc_verbs,ud_verbs by default) on the
# soft RDMA device (tests/softrdma/run.sh), one run per side per round,
# ours and the original alternating; the same Open MPI, libucp and program,
# only LD_LIBRARY_PATH differs. Each run measures 8 B latency (half the
# round trip) and 1 MiB bandwidth (a window of 16 non-blocking sends per
# acknowledgement); the table gives the medians over ROUNDS and the ratios
# ours/original (latency: lower is better; bandwidth: higher is better).
# The soft device copies through the CPU, so both numbers say more about the
# library's per-message overhead than about a real fabric.
#
# Usage: bench/mpi-verbs.sh OURS_LIBDIR [ROUNDS]     (ROUNDS default 7)
# Env: BENCH_TLS (rc_verbs,ud_verbs), BENCH_LAT_ITERS (20000),
#      BENCH_BW_ITERS (50), BENCH_NP_BIND (core: Open MPI --bind-to),
#      PAIR_TIMEOUT (seconds per run, 120), BENCH_CSV=FILE, BENCH_ROUNDS_CSV=FILE
#      (every round as "mpi:TLS:pingpong,ours|ucx,ROUND,LAT,BW", bench/lib.sh).
set -u
here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/.." && pwd)
PAIR_TIMEOUT=${PAIR_TIMEOUT:-120}
. "$here/lib.sh"

libdir=${1:?usage: bench/mpi-verbs.sh OURS_LIBDIR [ROUNDS]}
libdir=$(cd "$libdir" && pwd -P) || exit 2
[ -e "$libdir/libuct.so.0" ] || { echo "no libuct.so.0 in $libdir"; exit 2; }
rounds=${2:-7}
tls=${BENCH_TLS:-rc_verbs,ud_verbs}
lat_iters=${BENCH_LAT_ITERS:-20000}
bw_iters=${BENCH_BW_ITERS:-50}
bind=${BENCH_NP_BIND:-core}
for tool in mpicc.openmpi mpirun.openmpi; do
    command -v "$tool" >/dev/null || { echo "needs $tool (apt-get install openmpi-bin libopenmpi-dev)"; exit 2; }
done
make_workdir
SR=$top/tests/softrdma
export SOFTRDMA_BUILD=$T_WORK/softrdma
if ! "$SR/run.sh" true >"$T_WORK/softrdma.log" 2>&1; then
    echo "the soft RDMA device cannot run here:"; tail -n 5 "$T_WORK/softrdma.log"; exit 2
fi
# one private device registry for every rank of every run
SOFTRDMA_SHM_DIR=$(mktemp -d /dev/shm/uct-bench-mpi.XXXXXX) || exit 2
export SOFTRDMA_SHM_DIR
trap 'cleanup_workdir; rm -rf "$SOFTRDMA_SHM_DIR"' EXIT
unset LD_LIBRARY_PATH MALLOC_PERTURB_
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export OMPI_MCA_orte_tmpdir_base=$T_WORK
mpicc.openmpi -O2 -o "$T_WORK/mpi_pingpong" "$here/mpi_pingpong.c" 2>"$T_WORK/cc.log" ||
    { echo "cannot build mpi_pingpong:"; head -n 3 "$T_WORK/cc.log"; exit 2; }

# run_one LIBDIR -> "lat_us bw_MBps" | "fail <why>"  (bench_cell's contract)
run_one() {
    local lib rc line
    lib=$(ld_path_for "$1")
    timeout -k 10 "$PAIR_TIMEOUT" "$SR/run.sh" mpirun.openmpi -np 2 --bind-to "$bind" \
        --mca pml ucx --mca pml_ucx_tls any --mca pml_ucx_devices any \
        --mca btl "^vader,tcp,openib,uct" \
        -x "LD_LIBRARY_PATH=$lib" -x "UCX_TLS=$tls" -x UCX_NET_DEVICES=softrdma0:1 \
        "$T_WORK/mpi_pingpong" "$lat_iters" "$bw_iters" 8 1048576 16 \
        >"$T_WORK/run.out" 2>&1 </dev/null
    rc=$?
    line=$(grep -m 1 '^pingpong lat_us=' "$T_WORK/run.out")
    if [ $rc -eq 0 ] && [ -n "$line" ]; then
        sed 's/^pingpong lat_us=\([0-9.]*\) bw_MBps=\([0-9.]*\).*/\1 \2/' <<<"$line"
    else
        echo "fail exit status $rc: $(grep -m 1 -i 'error\|fail' "$T_WORK/run.out" | cut -c1-160)"
    fi
}

printf '# Open MPI ping-pong, UCX_TLS=%s on softrdma0:1; ours: %s   original: %s\n' \
    "$tls" "$libdir/libuct.so.0" "$UCT_SYSTEM_LIB"
printf '# %s rounds (ours and the original alternate), %s latency iterations, %s bandwidth windows, --bind-to %s\n' \
    "$rounds" "$lat_iters" "$bw_iters" "$bind"
BENCH_ROW=${BENCH_ROW:-mpi:$tls:pingpong} bench_cell "$rounds" "$libdir"
fmt='%-22s %12s %12s %8s\n'
printf "$fmt" "" ours original ratio
printf "$fmt" "8 B latency (us)" "$mlo" "$mlu" "$rl"
printf "$fmt" "1 MiB bandwidth (MB/s)" "$mbo" "$mbu" "$rb"
case $o_state in fail*) echo "#   ours: $o_state" ;; esac
case $u_state in fail*) echo "#   original: $u_state" ;; esac
if [ -n "${BENCH_CSV:-}" ]; then
    echo "tls,lat_ours_us,lat_orig_us,lat_ratio,bw_ours_MBps,bw_orig_MBps,bw_ratio" >"$BENCH_CSV"
    echo "$tls,$mlo,$mlu,$rl,$mbo,$mbu,$rb" >>"$BENCH_CSV"
fi
left=$(ls -A "$SOFTRDMA_SHM_DIR" 2>/dev/null | tr '\n' ' ')
[ -z "$left" ] || echo "# left in the device registry directory: $left"
[ "$o_state" = run ] && [ "$u_state" = run ]
