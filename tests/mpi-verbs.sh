#!/usr/bin/env bash
# MPI over verbs: Open MPI (pml ucx, osc ucx), its OpenSHMEM (spml ucx) and
# MPICH (ch4:ucx), Debian's, over UCX_TLS=rc_verbs,ud_verbs on the soft RDMA
# device (tests/softrdma/), every rank with LD_LIBRARY_PATH at LIBDIR.
# libucp then carries the data over rc_verbs and wires the endpoints up
# through ud_verbs (its auxiliary transport), so a library without ud_verbs
# fails every case.
#
#   c-tests/mpi_check.c     send/recv 1 B .. 4 MiB both ways in rank pairs
#                           with every byte checked, collectives, osc Put /
#                           Get / Accumulate / fetch-and-op, a passive-target
#                           lock loop (2 and 4 ranks)
#   c-tests/shmem_check.c   put, get, atomics, fence + wait_until (2 ranks)
#
# Cases (the quick tier; UCT_RS_TIER=full adds the ones marked +):
#   Open MPI  2 and 4 ranks; 2 ranks over rc_verbs,ud_verbs,posix,self
#             (shared memory and RDMA mixed, as MPI uses it); 2 ranks with
#             10 % of the UD datagrams dropped (the wire-up over ud_verbs
#             retransmits); + 2 ranks over ud_verbs alone, + the same with
#             1 % dropped (UD's retransmission carries all of the data)
#   MPICH     2 and 4 ranks; + 2 ranks over rc_verbs,ud_verbs,posix,self
#   OpenSHMEM 2 ranks; + 4 ranks
#   RoCE      the device's port with an Ethernet link layer
#             (SOFTRDMA_LINK_LAYERS=eth): Open MPI and OpenSHMEM 2 ranks,
#             + MPICH 2 ranks; across the namespaces below with each port's
#             GID table from the namespace's interface (SOFTRDMA_NETDEVS):
#             Open MPI 2 ranks, + MPICH and OpenSHMEM 2 ranks
#   two network namespaces joined by a veth pair, ranks in both, the soft
#   device spanning them: Open MPI 2 ranks (its launch agent is
#   tests/mpi-verbs/netns-launch.sh, which starts the remote daemon under
#   `ip netns exec`), MPICH 2 ranks (hydra's -launcher-exec, the same
#   script); + 4 ranks each (ranks alternate between the namespaces, so the
#   point-to-point pairs cross), + OpenSHMEM 2 ranks. Needs root and
#   `ip netns` (skipped otherwise); the namespaces are deleted at the end.
#
# Each case runs on the system library first: a case it passes must pass on
# LIBDIR ("... OK" printed, exit 0), one it fails must not crash or hang on
# LIBDIR, and LIBDIR's run may print no UCX warning or error the original's
# does not. Every rank of a run sees one device registry (a private
# directory under /dev/shm, SOFTRDMA_SHM_DIR); it must be empty afterwards,
# and no rank may be left running. Wall times of both runs are printed (no
# timing assertions).
#
# The original's results (Debian 12, UCX 1.13.1, Open MPI 4.1.4, MPICH 4.0.2,
# a 2-core machine under a load of 5-10): every case above passes; wall
# times per run: Open MPI 2 ranks 4-8 s, 4 ranks 7-11 s, mixed 4-6 s, 10 %
# drop 4-13 s, ud_verbs alone 8-16 s, with 1 % drop 41-67 s; MPICH 2 ranks
# 3-6 s, 4 ranks 5-9 s, mixed 2-5 s; OpenSHMEM 2 ranks 3-9 s, 4 ranks 11 s;
# namespaces: Open MPI 2 ranks 12-17 s, 4 ranks 25-36 s, MPICH 2 ranks
# 4-13 s, 4 ranks 6-9 s, OpenSHMEM 2 ranks 9 s. The CI tier takes 2-3
# minutes (both sides), the full tier about 5 more.
#
# Open MPI's UCX components take only "mlx" devices by default: the runs
# allow any (pml_ucx_tls / pml_ucx_devices / spml_ucx_devices any) and keep
# Open MPI's own transports (btl) out of the way; UCX_NET_DEVICES names the
# soft device. MALLOC_PERTURB_ is unset for the ranks (see tests/lib/mpi.sh:
# Open MPI's spml ucx touches freed memory in shmem_finalize).
# Knobs: UCT_RS_TIER=full, MPI_VERBS_ONLY=REGEX (cases whose name matches),
# MPI_VERBS_TIMEOUT (seconds per run, 150).
# Skipped without the device, without verbs in the reference UCX (the 1.18.1
# wheel), and without mpicc/oshcc/mpicc.mpich (apt-get install openmpi-bin
# libopenmpi-dev mpich libmpich-dev: a failure, as in mpi-shmem.sh).
# Usage: tests/mpi-verbs.sh [LIBDIR]   (or UCT_LIBDIR)
here=$(cd "$(dirname "$0")" && pwd)
. "$here/lib/ab-common.sh"
. "$here/lib/mpi.sh"

resolve_libdir "$@"
make_workdir
. "$here/lib/softrdma.sh"
ref_has_verbs || skip_suite "the reference UCX $UCX_RELEASE has no verbs transports"
mpi_need_tools
softrdma_setup
# the registry directory: named apart from the device scripts' own
# (softrdma-test.*), which other runs on the machine may clean up
SOFTRDMA_SHM_DIR=$(mktemp -d /dev/shm/uct-mpi-verbs.XXXXXX) || abort "registry directory"
export SOFTRDMA_SHM_DIR
shm_snapshot "$T_WORK/shm.before"
OURS=$UCT_LIBDIR
ONLY=${MPI_VERBS_ONLY:-}
TMO=${MPI_VERBS_TIMEOUT:-150}
DEV=softrdma0:1
mpi_env

# ---- network namespaces (root with ip netns only)
NS_A=mpvA$$ NS_B=mpvB$$ NETNS_OK=0
NET=10.215.$((RANDOM % 200 + 20))
netns_cleanup() {
    ip netns del "$NS_A" 2>/dev/null
    ip netns del "$NS_B" 2>/dev/null
}
trap 'netns_cleanup; cleanup_workdir; rm -rf "$SOFTRDMA_SHM_DIR"' EXIT
if [ "$(id -u)" = 0 ] && command -v ip >/dev/null; then
    if ip netns add "$NS_A" 2>/dev/null && ip netns add "$NS_B" &&
       ip link add "mpa$$" type veth peer name "mpb$$" &&
       ip link set "mpa$$" netns "$NS_A" && ip link set "mpb$$" netns "$NS_B" &&
       ip -n "$NS_A" link set "mpa$$" name mpv0 && ip -n "$NS_B" link set "mpb$$" name mpv0 &&
       ip -n "$NS_A" addr add "$NET.1/24" dev mpv0 &&
       ip -n "$NS_B" addr add "$NET.2/24" dev mpv0 &&
       ip -n "$NS_A" link set lo up && ip -n "$NS_B" link set lo up &&
       ip -n "$NS_A" link set mpv0 up && ip -n "$NS_B" link set mpv0 up; then
        NETNS_OK=1
        export MPI_NETNS_HOSTS="$NET.1=$NS_A $NET.2=$NS_B"
    else
        fail "network namespaces" "cannot set up $NS_A / $NS_B with a veth pair"
    fi
else
    echo "# no cases across network namespaces: they need root and ip(8)"
fi
AGENT=$here/mpi-verbs/netns-launch.sh

# ---- programs
mpi_build_all "$here/../c-tests/mpi_check.c" "$here/../c-tests/shmem_check.c"

# ---- what LIBDIR offers on the device (the cases run either way)
tls_on_dev() { # LIBDIR -> transport names listed for softrdma0:1
    "$SR/run.sh" env $(lib_env "$1") "$(ucx_tool ucx_info)" -d 2>/dev/null |
        awk -v dev="$DEV" '/^#      Transport: / { t = $3 } /^#         Device: / && $3 == dev { print t }' |
        sort -u | tr '\n' ' '
}
has_rc_ud() { # "TRANSPORTS" -> true when both are among them
    case " $1 " in *" rc_verbs "*) ;; *) return 1 ;; esac
    case " $1 " in *" ud_verbs "*) ;; *) return 1 ;; esac
}
sys_tls=$(tls_on_dev "")
has_rc_ud "$sys_tls" ||
    skip_suite "the original lists no rc_verbs + ud_verbs on $DEV (found: ${sys_tls:-none})"
if [ -n "$OURS" ]; then
    ours_tls=$(tls_on_dev "$OURS")
    if has_rc_ud "$ours_tls"; then
        pass "LIBDIR lists rc_verbs and ud_verbs on $DEV"
    else
        fail "LIBDIR lists rc_verbs and ud_verbs on $DEV" "it lists: ${ours_tls:-nothing}"
    fi
fi

# ---- one run
OMPI_MCA=(--oversubscribe --mca pml ucx --mca pml_ucx_tls any --mca pml_ucx_devices any
          --mca btl "^vader,tcp,openib,uct")

# run_case LIB KIND NP TLS PLACE [VAR=VALUE...] -> R_OK, R_WHY, R_RC, R_SECS,
# R_BAD (1: timed out or crashed), R_GONE (1: the registry directory vanished);
# output in $T_WORK/run.out. KIND ompi | mpich | shmem; PLACE local | netns;
# the VAR=VALUEs go into the environment of the launcher (and so of every
# rank: the device's knobs)
run_case() {
    local lib kind=$2 np=$3 tls=$4 place=$5 rc t0 word=mpi_check prog
    local cmd=() hosts=() pre=()
    lib=$(ld_path_for "$1")
    shift 5
    case $kind in
        ompi | shmem)
            if [ "$kind" = ompi ]; then
                prog=$T_WORK/mpi_check
                cmd=(mpirun.openmpi "${OMPI_MCA[@]}" --mca osc ucx)
            else
                prog=$T_WORK/shmem_check word=shmem_check
                cmd=(oshrun "${OMPI_MCA[@]}" --mca spml ucx --mca spml_ucx_devices any)
            fi
            if [ "$place" = netns ]; then
                hosts=(--host "$NET.1:$((np / 2)),$NET.2:$((np / 2))" --map-by node
                       --mca plm_rsh_agent "$AGENT")
            fi
            cmd+=(-np "$np" "${hosts[@]}" -x "LD_LIBRARY_PATH=$lib" -x "UCX_TLS=$tls"
                  -x "UCX_NET_DEVICES=$DEV" "$prog") ;;
        mpich)
            prog=$T_WORK/mpi_check_mpich
            if [ "$place" = netns ]; then
                hosts=(-launcher ssh -launcher-exec "$AGENT" -hosts "$NET.1,$NET.2" -iface mpv0)
            fi
            cmd=(mpirun.mpich "${hosts[@]}" -n "$np" -genv LD_LIBRARY_PATH "$lib"
                 -genv UCX_TLS "$tls" -genv UCX_NET_DEVICES "$DEV" "$prog") ;;
    esac
    [ "$place" = netns ] && pre=(ip netns exec "$NS_A")
    [ -d "$SOFTRDMA_SHM_DIR" ] || mkdir -m 700 "$SOFTRDMA_SHM_DIR"
    t0=$(date +%s.%N)
    env "$@" timeout -k 10 "$TMO" "${pre[@]}" "$SR/run.sh" "${cmd[@]}" \
        >"$T_WORK/run.out" 2>&1 </dev/null
    rc=$?
    R_SECS=$(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }')
    R_OK=0 R_RC=$rc R_WHY=
    R_BAD=0 R_GONE=0
    # timeout's statuses, and SIGILL, SIGABRT, SIGBUS, SIGFPE, SIGSEGV (a
    # launcher's own error exit may be anything else, hydra's 143 among them)
    case $rc in 124 | 137 | 132 | 134 | 135 | 136 | 139) R_BAD=1 ;; esac
    if [ ! -d "$SOFTRDMA_SHM_DIR" ]; then
        R_GONE=1 R_WHY="the registry directory $SOFTRDMA_SHM_DIR was removed during the run (from outside)"
    elif [ $R_BAD = 1 ]; then
        R_WHY="exit status $rc (timed out or crashed after ${R_SECS} s)"
    else
        mpi_judge "$rc" "$word"
    fi
}

# after a run: no rank left, the registry directory empty
after_run() { # NAME SIDE
    local left pids
    pids=$(pgrep -f "^$T_WORK/(mpi_check|mpi_check_mpich|shmem_check)( |\$)" | tr '\n' ' ')
    if [ -n "$pids" ]; then
        fail "$1 ($2): ranks left running" "$pids"
        # shellcheck disable=SC2086
        kill -9 $pids 2>/dev/null
    fi
    sleep 0.2
    left=$(ls -A "$SOFTRDMA_SHM_DIR" 2>/dev/null | tr '\n' ' ')
    if [ -n "$left" ]; then
        # a registry left behind by killed ranks: reaped (softrdma-gc) so
        # that the next run starts clean; counted as a failure of this run
        "$SOFTRDMA_BUILD/softrdma-gc" "$SOFTRDMA_BUILD/libsoftrdma-rdmav34.so" >/dev/null 2>&1
        left=$(ls -A "$SOFTRDMA_SHM_DIR" 2>/dev/null | tr '\n' ' ')
        [ -n "$left" ] && fail "$1 ($2): registry left in $SOFTRDMA_SHM_DIR" "$left"
    fi
}

cases() {
    local rcud=rc_verbs,ud_verbs mixed=rc_verbs,ud_verbs,posix,self
    echo "ompi 2 $rcud local"
    echo "ompi 4 $rcud local"
    echo "ompi 2 $mixed local"
    echo "ompi 2 $rcud local SOFTRDMA_UD_DROP=10"
    full_tier && echo "ompi 2 ud_verbs local"
    full_tier && echo "ompi 2 ud_verbs local SOFTRDMA_UD_DROP=1"
    echo "mpich 2 $rcud local"
    echo "mpich 4 $rcud local"
    full_tier && echo "mpich 2 $mixed local"
    echo "shmem 2 $rcud local"
    full_tier && echo "shmem 4 $rcud local"
    # the device's port as RoCE (an Ethernet link layer)
    echo "ompi 2 $rcud local $ROCE"
    echo "shmem 2 $rcud local $ROCE"
    full_tier && echo "mpich 2 $rcud local $ROCE"
    if [ "$NETNS_OK" = 1 ]; then
        echo "ompi 2 $rcud netns"
        echo "mpich 2 $rcud netns"
        # RoCE, each port's GIDs from the namespace's interface
        echo "ompi 2 $rcud netns $ROCE SOFTRDMA_NETDEVS=mpv0"
        full_tier && echo "ompi 4 $rcud netns"
        full_tier && echo "mpich 4 $rcud netns"
        full_tier && echo "shmem 2 $rcud netns"
        full_tier && echo "mpich 2 $rcud netns $ROCE SOFTRDMA_NETDEVS=mpv0"
        full_tier && echo "shmem 2 $rcud netns $ROCE SOFTRDMA_NETDEVS=mpv0"
    fi
    return 0
}

ROCE=SOFTRDMA_LINK_LAYERS=eth
declare -A LABEL=([ompi]="Open MPI" [mpich]=MPICH [shmem]=OpenSHMEM)
while read -r kind np tls place extra; do
    name="${LABEL[$kind]} $np ranks UCX_TLS=$tls${extra:+ $extra}"
    [ "$place" = netns ] && name="$name, two network namespaces"
    if [ -n "$ONLY" ] && ! [[ $name =~ $ONLY ]]; then continue; fi
    # shellcheck disable=SC2086
    run_case "" "$kind" "$np" "$tls" "$place" $extra
    sys_ok=$R_OK sys_why=$R_WHY sys_secs=$R_SECS sys_bad=$R_BAD sys_gone=$R_GONE
    cp "$T_WORK/run.out" "$T_WORK/run.sys"
    ucx_lines "$T_WORK/run.out" >"$T_WORK/lines.sys"
    after_run "$name" original
    if [ -z "$OURS" ]; then
        if [ "$sys_ok" = 1 ]; then pass "$name (system, $sys_secs s)"; else fail "$name (system)" "$sys_why"; fi
        continue
    fi
    # shellcheck disable=SC2086
    run_case "$OURS" "$kind" "$np" "$tls" "$place" $extra
    ucx_lines "$T_WORK/run.out" >"$T_WORK/lines.ours"
    if [ "$sys_gone" = 1 ] || [ "$R_GONE" = 1 ]; then
        fail "$name" "not judged: the registry directory was removed from outside during a run"
        after_run "$name" LIBDIR
        continue
    fi
    SYS_BAD=$sys_bad ab_verdict "$name" "$sys_ok" "$sys_why" \
        "original $sys_secs s, LIBDIR $R_SECS s" "$T_WORK/run.out"
    after_run "$name" LIBDIR
done < <(cases)

if [ "$NETNS_OK" = 1 ]; then
    netns_cleanup
    if ip netns list | grep -q "^\($NS_A\|$NS_B\)\b"; then
        fail "network namespaces deleted" "$(ip netns list | grep "^\($NS_A\|$NS_B\)\b" | tr '\n' ' ')"
    else
        pass "network namespaces deleted"
    fi
fi
# shm_check's rule, without the device registries (directories, and the
# default registry file softrdma.*) that other runs of the device on this
# machine create meanwhile: no run here makes a directory in /dev/shm, and
# our registry directory is checked after each run
left=$(shm_leftovers "$T_WORK/shm.before" | while read -r kind what rest; do
    if [ "$kind" = file ]; then
        [ -d "$what" ] && continue
        case $what in /dev/shm/softrdma.*) continue ;; esac
    fi
    echo "$kind $what $rest"
done)
if [ -z "$left" ]; then
    pass "no /dev/shm file or SysV segment left over"
else
    fail "no /dev/shm file or SysV segment left over" "$(printf '%s\n' "$left" | wc -l) new"
    printf '%s\n' "$left" | sed 's/^/      leftover: /'
    shm_remove "$left"
fi
finish
