#!/usr/bin/env bash
# ucx_perftest over the "self" transport (single process, -l), for every UCT
# test and data layout, at message sizes 8 and 4096, against LIBDIR's
# libuct.so.0.  Each row must end the way it ends on the C original (Debian
# 12, UCX 1.13.1): OK = the test runs and prints its final result line with
# the requested iteration count; UNSUP = perftest refuses it with
# "Unsupported operation" (exit status 255).  A crash, a timeout or any other
# ending fails the row.  No timing is checked.
# Usage: tests/perftest-self.sh [LIBDIR]   (or UCT_LIBDIR; ITERS=20000 default)
here=$(cd "$(dirname "$0")" && pwd)
. "$here/lib/common.sh"

resolve_libdir "$@"
ITERS=${ITERS:-20000}
WARMUP=${WARMUP:-100}
TIMEOUT=${TIMEOUT:-120}
command -v ucx_perftest >/dev/null || abort "ucx_perftest" "not installed (apt-get install ucx-utils)"
make_workdir
build_run_watch

# test  layout  size  expected  (from the self rows of the original's run)
expected_rows() {
    cat <<'ROWS'
put_bw   short     8     OK
put_bw   short     4096  OK
put_bw   bcopy     8     OK
put_bw   bcopy     4096  OK
put_bw   zcopy     8     UNSUP
put_bw   zcopy     4096  UNSUP
put_lat  short     8     OK
put_lat  short     4096  OK
put_lat  bcopy     8     OK
put_lat  bcopy     4096  OK
put_lat  zcopy     8     UNSUP
put_lat  zcopy     4096  UNSUP
am_lat   short     8     OK
am_lat   short     4096  OK
am_lat   shortiov  8     OK
am_lat   shortiov  4096  OK
am_lat   bcopy     8     OK
am_lat   bcopy     4096  OK
am_lat   zcopy     8     UNSUP
am_lat   zcopy     4096  UNSUP
am_bw    short     8     OK
am_bw    short     4096  OK
am_bw    shortiov  8     OK
am_bw    shortiov  4096  OK
am_bw    bcopy     8     OK
am_bw    bcopy     4096  OK
am_bw    zcopy     8     UNSUP
am_bw    zcopy     4096  UNSUP
get      bcopy     8     OK
get      bcopy     4096  OK
get      zcopy     8     UNSUP
get      zcopy     4096  UNSUP
add_lat  -         8     OK
add_lat  -         4096  UNSUP
add_mr   -         8     OK
add_mr   -         4096  UNSUP
fadd     -         8     OK
fadd     -         4096  UNSUP
swap     -         8     OK
swap     -         4096  UNSUP
cswap    -         8     OK
cswap    -         4096  UNSUP
ROWS
}

# run_row TEST LAYOUT SIZE -> prints OK | UNSUP | CRASH ... | FAIL ...
run_row() {
    local layout=() out st ended final
    [ "$2" != "-" ] && layout=(-D "$2")
    out=$T_WORK/row.out
    st=$T_WORK/row.status
    rm -f "$st"
    "$RUN_WATCH" "$TIMEOUT" "$st" "${RUN[@]}" ucx_perftest -l -t "$1" -x self \
        -d "$UCT_SELF_DEV" "${layout[@]}" -s "$3" -n "$ITERS" -w "$WARMUP" -f \
        >"$out" 2>&1 </dev/null
    ended=$(cat "$st" 2>/dev/null)
    final=$(grep -E '^ *[0-9]+ +[0-9.]+ +[0-9.]+' "$out" | tail -n 1)
    if [ "$ended" = "exit 0" ] && [ -n "$final" ]; then
        set -- $final
        if [ "$1" = "$ITERS" ]; then
            echo "OK"
        else
            echo "FAIL final line reports $1 iterations"
        fi
    elif [ "$ended" = "exit 255" ] && grep -q 'Unsupported operation' "$out"; then
        echo "UNSUP"
    elif ended_badly "$st"; then
        echo "CRASH ${ended:-unknown}"
    else
        echo "FAIL $ended: $(grep -v '^[|+]' "$out" | grep -v '^\s*$' | tail -n 1 | cut -c1-100)"
    fi
}

while read -r test layout size want; do
    got=$(run_row "$test" "$layout" "$size")
    name=$(printf 'self %-8s %-9s %-5s expect %s' "$test" "$layout" "$size" "$want")
    if [ "$got" = "$want" ]; then
        pass "$name"
    else
        fail "$name" "got $got"
    fi
done < <(expected_rows)

finish
