#!/usr/bin/env bash
# ucx_perftest over the shared-memory transports, two processes (server +
# client on loopback), LIBDIR's libuct.so.0 on both sides: the posix, sysv and
# cma rows of the acceptance perftest-matrix.sh (all 21 UCT tests, sizes 8 and
# 4096).  Each row carries its expected outcome twice: on the system library
# (UCX 1.13.1, copied from real-ucx-1.13.1-perftest.txt) and on ours (any
# LIBDIR that is not the system library).  They differ only where ours goes
# beyond the original: posix/sysv put_bw, put_lat, get, am_lat and am_bw with
# zcopy must run on ours (the original refuses them: UNSUP).
#   OK     both exit 0 and the client's final line reports ITERS iterations
#   UNSUP  perftest refuses the row: "Unsupported operation", exit status 255
# A crash, a hang or any other ending fails the row.  No timing is checked.
#
# EXPECT_FAIL_ROWS lists rows not implemented yet on the library under test,
# as TL[:TEST[:LAYOUT[:SIZE]]] glob patterns, e.g.
#   EXPECT_FAIL_ROWS="cma posix:*:zcopy sysv:*:zcopy"
# (the transports in EXPECT_FAIL_TLS are added to it).
# Such a row passes when it ends cleanly in any way (no signal, no hang; but
# see pair_failed_cleanly in lib/two-proc.sh for ucx_perftest's own SIGPIPE and
# wait when its peer gives up early), and reports XPASS when it already gives
# the expected outcome.
# At the end no new /dev/shm file or SysV segment may be left over.
# Usage: tests/perftest-shm.sh [LIBDIR] [ITERS]   (or UCT_LIBDIR, ITERS;
#        default 10000 iterations, WARMUP=100, PAIR_TIMEOUT=60 s per process)
here=$(cd "$(dirname "$0")" && pwd)
. "$here/lib/common.sh"
. "$here/lib/two-proc.sh"
. "$here/lib/shm-leftovers.sh"

resolve_libdir "${1-${UCT_LIBDIR:-}}"
ITERS=${2:-${ITERS:-10000}}
WARMUP=${WARMUP:-100}
# a transport named in EXPECT_FAIL_TLS (the other scripts' knob) is a pattern too
EXPECT_FAIL_ROWS="${EXPECT_FAIL_ROWS:-} ${EXPECT_FAIL_TLS:-}"
need_perftest
make_workdir
build_run_watch
shm_snapshot "$T_WORK/shm.before"

shm_expected_column
echo "# expected outcomes: the '$column' column; $ITERS iterations"

# tl    test     layout    size  system ours
expected_rows() {
    cat <<'ROWS'
posix  put_bw   short     8     OK     OK
posix  put_bw   short     4096  OK     OK
posix  put_bw   bcopy     8     OK     OK
posix  put_bw   bcopy     4096  OK     OK
posix  put_bw   zcopy     8     UNSUP  OK
posix  put_bw   zcopy     4096  UNSUP  OK
posix  put_lat  short     8     OK     OK
posix  put_lat  short     4096  OK     OK
posix  put_lat  bcopy     8     OK     OK
posix  put_lat  bcopy     4096  OK     OK
posix  put_lat  zcopy     8     UNSUP  OK
posix  put_lat  zcopy     4096  UNSUP  OK
posix  am_lat   short     8     OK     OK
posix  am_lat   short     4096  UNSUP  UNSUP
posix  am_lat   shortiov  8     OK     OK
posix  am_lat   shortiov  4096  UNSUP  UNSUP
posix  am_lat   bcopy     8     OK     OK
posix  am_lat   bcopy     4096  OK     OK
posix  am_lat   zcopy     8     UNSUP  OK
posix  am_lat   zcopy     4096  UNSUP  OK
posix  am_bw    short     8     OK     OK
posix  am_bw    short     4096  UNSUP  UNSUP
posix  am_bw    shortiov  8     OK     OK
posix  am_bw    shortiov  4096  UNSUP  UNSUP
posix  am_bw    bcopy     8     OK     OK
posix  am_bw    bcopy     4096  OK     OK
posix  am_bw    zcopy     8     UNSUP  OK
posix  am_bw    zcopy     4096  UNSUP  OK
posix  get      bcopy     8     OK     OK
posix  get      bcopy     4096  OK     OK
posix  get      zcopy     8     UNSUP  OK
posix  get      zcopy     4096  UNSUP  OK
posix  add_lat  -         8     OK     OK
posix  add_lat  -         4096  UNSUP  UNSUP
posix  add_mr   -         8     OK     OK
posix  add_mr   -         4096  UNSUP  UNSUP
posix  fadd     -         8     OK     OK
posix  fadd     -         4096  UNSUP  UNSUP
posix  swap     -         8     OK     OK
posix  swap     -         4096  UNSUP  UNSUP
posix  cswap    -         8     OK     OK
posix  cswap    -         4096  UNSUP  UNSUP
sysv   put_bw   short     8     OK     OK
sysv   put_bw   short     4096  OK     OK
sysv   put_bw   bcopy     8     OK     OK
sysv   put_bw   bcopy     4096  OK     OK
sysv   put_bw   zcopy     8     UNSUP  OK
sysv   put_bw   zcopy     4096  UNSUP  OK
sysv   put_lat  short     8     OK     OK
sysv   put_lat  short     4096  OK     OK
sysv   put_lat  bcopy     8     OK     OK
sysv   put_lat  bcopy     4096  OK     OK
sysv   put_lat  zcopy     8     UNSUP  OK
sysv   put_lat  zcopy     4096  UNSUP  OK
sysv   am_lat   short     8     OK     OK
sysv   am_lat   short     4096  UNSUP  UNSUP
sysv   am_lat   shortiov  8     OK     OK
sysv   am_lat   shortiov  4096  UNSUP  UNSUP
sysv   am_lat   bcopy     8     OK     OK
sysv   am_lat   bcopy     4096  OK     OK
sysv   am_lat   zcopy     8     UNSUP  OK
sysv   am_lat   zcopy     4096  UNSUP  OK
sysv   am_bw    short     8     OK     OK
sysv   am_bw    short     4096  UNSUP  UNSUP
sysv   am_bw    shortiov  8     OK     OK
sysv   am_bw    shortiov  4096  UNSUP  UNSUP
sysv   am_bw    bcopy     8     OK     OK
sysv   am_bw    bcopy     4096  OK     OK
sysv   am_bw    zcopy     8     UNSUP  OK
sysv   am_bw    zcopy     4096  UNSUP  OK
sysv   get      bcopy     8     OK     OK
sysv   get      bcopy     4096  OK     OK
sysv   get      zcopy     8     UNSUP  OK
sysv   get      zcopy     4096  UNSUP  OK
sysv   add_lat  -         8     OK     OK
sysv   add_lat  -         4096  UNSUP  UNSUP
sysv   add_mr   -         8     OK     OK
sysv   add_mr   -         4096  UNSUP  UNSUP
sysv   fadd     -         8     OK     OK
sysv   fadd     -         4096  UNSUP  UNSUP
sysv   swap     -         8     OK     OK
sysv   swap     -         4096  UNSUP  UNSUP
sysv   cswap    -         8     OK     OK
sysv   cswap    -         4096  UNSUP  UNSUP
cma    put_bw   short     8     UNSUP  UNSUP
cma    put_bw   short     4096  UNSUP  UNSUP
cma    put_bw   bcopy     8     UNSUP  UNSUP
cma    put_bw   bcopy     4096  UNSUP  UNSUP
cma    put_bw   zcopy     8     OK     OK
cma    put_bw   zcopy     4096  OK     OK
cma    put_lat  short     8     UNSUP  UNSUP
cma    put_lat  short     4096  UNSUP  UNSUP
cma    put_lat  bcopy     8     UNSUP  UNSUP
cma    put_lat  bcopy     4096  UNSUP  UNSUP
cma    put_lat  zcopy     8     OK     OK
cma    put_lat  zcopy     4096  OK     OK
cma    am_lat   short     8     UNSUP  UNSUP
cma    am_lat   short     4096  UNSUP  UNSUP
cma    am_lat   shortiov  8     UNSUP  UNSUP
cma    am_lat   shortiov  4096  UNSUP  UNSUP
cma    am_lat   bcopy     8     UNSUP  UNSUP
cma    am_lat   bcopy     4096  UNSUP  UNSUP
cma    am_lat   zcopy     8     UNSUP  UNSUP
cma    am_lat   zcopy     4096  UNSUP  UNSUP
cma    am_bw    short     8     UNSUP  UNSUP
cma    am_bw    short     4096  UNSUP  UNSUP
cma    am_bw    shortiov  8     UNSUP  UNSUP
cma    am_bw    shortiov  4096  UNSUP  UNSUP
cma    am_bw    bcopy     8     UNSUP  UNSUP
cma    am_bw    bcopy     4096  UNSUP  UNSUP
cma    am_bw    zcopy     8     UNSUP  UNSUP
cma    am_bw    zcopy     4096  UNSUP  UNSUP
cma    get      bcopy     8     UNSUP  UNSUP
cma    get      bcopy     4096  UNSUP  UNSUP
cma    get      zcopy     8     OK     OK
cma    get      zcopy     4096  OK     OK
cma    add_lat  -         8     UNSUP  UNSUP
cma    add_lat  -         4096  UNSUP  UNSUP
cma    add_mr   -         8     UNSUP  UNSUP
cma    add_mr   -         4096  UNSUP  UNSUP
cma    fadd     -         8     UNSUP  UNSUP
cma    fadd     -         4096  UNSUP  UNSUP
cma    swap     -         8     UNSUP  UNSUP
cma    swap     -         4096  UNSUP  UNSUP
cma    cswap    -         8     UNSUP  UNSUP
cma    cswap    -         4096  UNSUP  UNSUP
ROWS
}

# row_expected_to_fail KEY (tl:test:layout:size)
row_expected_to_fail() {
    local pat
    set -f
    for pat in $EXPECT_FAIL_ROWS; do
        # shellcheck disable=SC2053
        if [[ $1 == $pat || $1 == $pat:* ]]; then
            set +f
            return 0
        fi
    done
    set +f
    return 1
}

while read -r tl test layout size sys_want ours_want; do
    if [ "$column" = system ]; then want=$sys_want; else want=$ours_want; fi
    key=$tl:$test:$layout:$size
    name=$(printf '%-5s %-8s %-9s %-5s expect %s' "$tl" "$test" "$layout" "$size" "$want")
    run_perf_pair "$UCT_LIBDIR" "$UCT_LIBDIR" "$tl" memory "$test" "$layout" "$size" "$ITERS" "$WARMUP"
    got=$PP_RESULT
    if row_expected_to_fail "$key"; then
        name="$name (EXPECT_FAIL_ROWS)"
        if [ "$got" = "$want" ]; then
            pass "$name XPASS: $got, drop it from EXPECT_FAIL_ROWS"
        elif ! pair_failed_cleanly "$PP_SRV" "$PP_CLI"; then
            fail "$name" "must fail cleanly: $got"
        else
            pass "$name fails cleanly as allowed (server $PP_SRV, client $PP_CLI)"
        fi
    elif [ "$got" = "$want" ]; then
        pass "$name${PP_LAT:+ (lat $PP_LAT us)}"
    else
        fail "$name" "got $got"
    fi
done < <(expected_rows)

shm_check "no /dev/shm file or SysV segment left over" "$T_WORK/shm.before"
finish
