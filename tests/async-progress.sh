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
# The C original of the later releases (1.18 here) emulates one-shot
# callbacks with a proxy that frees its context while the callback queue
# may still call it: now and then it crashes in the first case (seen:
# SIGSEGV in uct_worker_oneshot_callback_proxy, ~1 run in 10 under load).
# Such a run of the original is noted and run again (up to 5 times); a
# crash of the tested library is never retried.
# Usage: tests/async-progress.sh [LIBDIR]     (or UCT_LIBDIR=...; empty = system)
here=$(cd "$(dirname "$0")" && pwd)
. "$here/lib/common.sh"

resolve_libdir "$@"
make_workdir

if build_c "$T_WORK/async_progress" "$here/../c-tests/async_progress.c" -lpthread 2>"$T_WORK/cc.log"; then
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
        local tries=0
        while :; do
            "$@" timeout 120 "$T_WORK/async_progress" >"$T_WORK/$label.out" 2>&1
            rc=$?
            # the original's one-shot race (see above): no result line yet
            if [ "$label" = system ] && [ "$UCX_ABI" != 1.13 ] && [ $rc -eq 139 ] &&
               ! grep -q '^async: ' "$T_WORK/$label.out" && [ $tries -lt 5 ]; then
                tries=$((tries + 1))
                echo "# note: the original crashed in its one-shot callback proxy (run $i), run again"
                continue
            fi
            break
        done
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
        [ -f "$T_WORK/diff.txt" ] && sed "s/^/      /" "$T_WORK/diff.txt"
        fail "identical result lines"
    fi
fi
finish
