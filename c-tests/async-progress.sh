#!/usr/bin/env bash
# The worker's progress queue and the error handler under threads, libucs's
# async thread and callbacks (c-tests/async_progress.c: one-shot callbacks
# registered from 4 threads and from a 1 ms async timer, a callback chain,
# self-unregistration, register/unregister from another thread, adaptive
# progress woken through the event fd of posix and tcp, and a dead peer
# found by uct_ep_check from the async thread).  Built against the system
# headers; run on the system libuct.so.0 and on LIBDIR's, each case must
# pass on both (three runs each: the cases race threads on purpose), with
# identical result lines.
# Usage: c-tests/async-progress.sh [LIBDIR]     (or UCT_LIBDIR=...; empty = system)
here=$(cd "$(dirname "$0")" && pwd)
. "$here/../tests/lib/common.sh"

resolve_libdir "$@"
make_workdir

if build_c "$T_WORK/async_progress" "$here/async_progress.c" -lpthread 2>"$T_WORK/cc.log"; then
    pass "build async_progress"
else
    cat "$T_WORK/cc.log"
    abort "build async_progress"
fi

# run LABEL ENV... : three runs, the result lines of the last one in $T_WORK/LABEL.txt
run() {
    local label=$1 i rc
    shift
    for i in 1 2 3; do
        "$@" timeout 120 "$T_WORK/async_progress" >"$T_WORK/$label.out" 2>&1
        rc=$?
        grep '^async: ' "$T_WORK/$label.out" >"$T_WORK/$label.txt"
        if [ $rc -ne 0 ]; then
            grep '^async: .*FAIL' "$T_WORK/$label.out" | sed 's/^/      /'
            tail -n 3 "$T_WORK/$label.out" | sed 's/^/      /'
            fail "every case passes on the $label library (run $i)" "exit status $rc"
            return
        fi
    done
    pass "every case passes on the $label library ($(grep -c ': ok$' "$T_WORK/$label.txt") cases, 3 runs)"
}

run system "${SYS_RUN[@]}"
if [ -n "$UCT_LIBDIR" ]; then
    run tested "${RUN[@]}"
    if [ -s "$T_WORK/system.txt" ] && diff -u "$T_WORK/system.txt" "$T_WORK/tested.txt" >"$T_WORK/diff.txt"; then
        pass "identical result lines ($(wc -l <"$T_WORK/system.txt") lines)"
    else
        sed 's/^/      /' "$T_WORK/diff.txt"
        fail "identical result lines"
    fi
fi
finish
