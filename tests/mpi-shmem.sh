#!/usr/bin/env bash
# The largest users of libuct, through Debian's libucp: Open MPI (pml ucx,
# osc ucx), its OpenSHMEM (spml ucx) and MPICH (ch4:ucx, Debian's only
# MPICH device), two ranks on this machine, with LD_LIBRARY_PATH pointing
# every rank at LIBDIR.
#
#   c-tests/mpi_check.c     send/recv 1 B .. 4 MiB both ways with every
#                           byte checked, allreduce, MPI_Put, fetch-and-op,
#                           1 MiB bcast, alltoall, a vector datatype, 1 MiB
#                           MPI_Get, MPI_Accumulate, a passive-target lock
#   c-tests/shmem_check.c   put, get, atomic fetch-add and compare-swap, 1 MiB
#                           put/get, fence + wait_until, broadcast, sum
#
# over UCX_TLS=tcp, posix,self, sysv,cma,self and all (shmem: tcp and
# posix,sysv,cma,self).  Each case runs on the system library first: a case
# it passes must pass on LIBDIR ("... OK" printed, exit 0), and LIBDIR's run
# may print no UCX warning or error the original's run does not.
# Open MPI's UCX components only take "mlx" devices by default: the runs
# allow any (pml_ucx_tls/pml_ucx_devices/spml_ucx_devices any), and keep
# Open MPI's own transports (btl) out of the way.
# Without mpicc/oshcc (apt-get install openmpi-bin libopenmpi-dev) or
# mpicc.mpich (apt-get install mpich libmpich-dev) the test says so and
# fails: scripts/setup-deps.sh installs them.
# Usage: tests/mpi-shmem.sh [LIBDIR]   (or UCT_LIBDIR)
here=$(cd "$(dirname "$0")" && pwd)
. "$here/lib/ab-common.sh"
. "$here/lib/mpi.sh"

ab_begin "$@"
mpi_need_tools
mpi_env
mpi_build_all "$here/../c-tests/mpi_check.c" "$here/../c-tests/shmem_check.c"

OURS=$UCT_LIBDIR
MCA=(--oversubscribe -np 2 --mca pml ucx --mca pml_ucx_tls any --mca pml_ucx_devices any
     --mca btl "^vader,tcp,openib,uct")

# run_case LIB TLS LAUNCHER PROGRAM WORD EXTRA_MCA... -> R_OK, R_WHY; output in $T_WORK/run.out
# (LAUNCHER mpirun.mpich: MPICH's hydra, which takes -genv instead of -x)
run_case() {
    local lib tls=$2 launcher=$3 prog=$4 word=$5 rc
    lib=$(ld_path_for "$1")
    shift 5
    if [ "$launcher" = mpirun.mpich ]; then
        timeout 180 "$launcher" -n 2 -genv LD_LIBRARY_PATH "$lib" -genv UCX_TLS "$tls" "$prog" \
            >"$T_WORK/run.out" 2>&1 </dev/null
    else
        timeout 180 "$launcher" "${MCA[@]}" "$@" -x "LD_LIBRARY_PATH=$lib" -x "UCX_TLS=$tls" "$prog" \
            >"$T_WORK/run.out" 2>&1 </dev/null
    fi
    rc=$?
    R_OK=0 R_RC=$rc
    mpi_judge "$rc" "$word"
}

# only_finalize_race_lines: ours printed UCX lines the original did not,
# and all of them are the osc finalize race's (see the loop below)
only_finalize_race_lines() {
    local extra
    extra=$(comm -23 "$T_WORK/lines.ours" "$T_WORK/lines.sys")
    [ -n "$extra" ] && ! printf '%s\n' "$extra" |
        grep -vqE '(error during flush|disconnect failed): (Endpoint timeout|Connection reset by remote peer)'
}

# finalize_race KIND: the last run of ours failed only by one of the
# finalize races below (prints which)
finalize_race() {
    if [ "$1" = mpi ] && [ "$R_OK" = 1 ] && only_finalize_race_lines; then
        echo "the finalize race of Open MPI's osc (flush/disconnect lines after OK)"
    elif [ "$1" = mpich ] && [ "${R_RC:-0}" = 124 ] && grep -q '^mpi_check: OK' "$T_WORK/run.out"; then
        echo "MPICH hung in MPI_Finalize after OK (the original does too)"
    else
        return 1
    fi
}

cases() {
    local tls
    for tls in tcp posix,self sysv,cma,self all; do
        echo "mpi $tls"
    done
    for tls in tcp posix,sysv,cma,self; do
        echo "shmem $tls"
    done
    for tls in tcp posix,self sysv,cma,self all; do
        echo "mpich $tls"
    done
}

while read -r kind tls; do
    if [ "$kind" = mpi ]; then
        set -- mpirun.openmpi "$T_WORK/mpi_check" mpi_check --mca osc ucx
    elif [ "$kind" = mpich ]; then
        set -- mpirun.mpich "$T_WORK/mpi_check_mpich" mpi_check
    else
        set -- oshrun "$T_WORK/shmem_check" shmem_check --mca spml ucx --mca spml_ucx_devices any
    fi
    name="$kind UCX_TLS=$tls"
    run_case "" "$tls" "$@"
    sys_ok=$R_OK sys_why=${R_WHY:-}
    sys_bad=0
    [ "${R_RC:-0}" -ge 124 ] && sys_bad=1
    ucx_lines "$T_WORK/run.out" >"$T_WORK/lines.sys"
    if [ -z "$OURS" ]; then
        if [ "$sys_ok" = 1 ]; then pass "$name (system)"; else fail "$name (system)" "$sys_why"; fi
        continue
    fi
    run_case "$OURS" "$tls" "$@"
    ucx_lines "$T_WORK/run.out" >"$T_WORK/lines.ours"
    # Two finalize races, each lost by the C original too, get at most two
    # more runs of ours when they are the only failure:
    # - Open MPI 4.1.4's osc ucx closes its endpoints and destroys its
    #   worker at MPI_Finalize without waiting for the other rank: when the
    #   first rank's sockets close before the second one has begun to close
    #   its endpoint, libucp prints "error during flush" and "disconnect
    #   failed" after the checks passed (the original 1.18: 1 run in 20
    #   under load; see bench/results/2026-12-05-tcp-work-log.md; ours more often);
    # - MPICH over UCX_TLS=tcp sometimes hangs in MPI_Finalize after
    #   "mpi_check: OK" until the timeout (the original 1.18.1: 3 runs in
    #   40 here, ours 1 in 30; the 1.18 CI run of 2026-12-04 caught it).
    tries=0
    while [ $tries -lt 2 ] && race=$(finalize_race "$kind"); do
        tries=$((tries + 1))
        echo "# note: $name: $race, run again ($tries)"
        run_case "$OURS" "$tls" "$@"
        ucx_lines "$T_WORK/run.out" >"$T_WORK/lines.ours"
    done
    R_BAD=0
    [ "${R_RC:-0}" -ge 124 ] && R_BAD=1   # timeout or a signal
    SYS_BAD=$sys_bad ab_verdict "$name" "$sys_ok" "$sys_why" "" "$T_WORK/run.out"
done < <(cases)

shm_check "no /dev/shm file or SysV segment left over" "$T_WORK/shm.before"
finish
