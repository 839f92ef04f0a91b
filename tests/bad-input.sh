#!/usr/bin/env bash
# Bad-input table (c-tests/bad_input.c): every case runs in a forked child and
# must return the status the C original returns, or, where the original
# itself crashes (ORIG_MAY_CRASH), an error status without crashing.  On the
# system library those crashes are accepted.  The handle cases (BAD_HANDLE:
# closed twice, released, garbage or wrong-kind pointers) must in addition
# log an error; on our library they run a second time under valgrind's
# memcheck (when installed), which must see no invalid access at all: the
# library may not even read through such a pointer.
# Usage: tests/bad-input.sh [LIBDIR] [-- CASE-FILTER...]
#        (or UCT_LIBDIR=...; empty = system library)
here=$(cd "$(dirname "$0")" && pwd)
. "$here/lib/common.sh"

libarg=()
if [ $# -gt 0 ] && [ "$1" != "--" ]; then
    libarg=("$1")
    shift
fi
[ "${1:-}" = "--" ] && shift
filters=$#
resolve_libdir "${libarg[@]}"
# The table's statuses are those of UCX 1.13.1's C library (built with
# parameter checks), with the few cases a later release answers otherwise
# written per release. The 1.18.1 reference itself is built without
# parameter checks and returns other statuses, or crashes, for many cases:
# against it only our library is judged (strict mode), not the original.
if [ "${UCX_ABI:-1.13}" != 1.13 ] && testing_original; then
    skip_suite "the UCX $UCX_ABI reference is built without parameter checks"
fi
make_workdir

if build_c "$T_WORK/bad_input" "$here/../c-tests/bad_input.c" 2>"$T_WORK/cc.log"; then
    pass "build bad_input"
else
    cat "$T_WORK/cc.log"
    abort "build bad_input"
fi

# The program picks its mode itself: "original" only when uct_iface_open
# resolves to the system library file.
"${RUN[@]}" timeout 900 "$T_WORK/bad_input" "$@" | tee "$T_WORK/out.txt"
rc=${PIPESTATUS[0]}

summary=$(grep -E '^[0-9]+ passed, [0-9]+ failed$' "$T_WORK/out.txt" | tail -n 1)
if [ -n "$summary" ]; then
    set -- $summary
    T_PASSED=$((T_PASSED + $1))
    T_FAILED=$((T_FAILED + $3))
    if [ "$3" -eq 0 ] && [ "$rc" -ne 0 ]; then
        fail "bad_input exit status" "$rc with no failed case"
    fi
else
    fail "bad_input run" "no summary line (exit status $rc)"
fi

# The handle cases under memcheck: one log file per process (the parent and
# each forked child); with -q valgrind writes only errors, so every file
# must stay empty.  Only on our library: the original reads freed memory.
if [ -n "$UCT_LIBDIR" ] && [ "$filters" -eq 0 ]; then
    if command -v valgrind >/dev/null; then
        mkdir -p "$T_WORK/vg"
        "${RUN[@]}" timeout 900 valgrind -q --log-file="$T_WORK/vg/vg.%p" \
            "$T_WORK/bad_input" --strict --handles >"$T_WORK/vg.out" 2>&1
        vrc=$?
        bad=$(find "$T_WORK/vg" -type f -size +0 | head -n 1)
        if [ -n "$bad" ]; then
            fail "handle cases under memcheck" "$(head -n 3 "$bad" | tr '\n' ' ')"
        elif [ "$vrc" -ne 0 ]; then
            fail "handle cases under memcheck" "$(tail -n 1 "$T_WORK/vg.out") (exit status $vrc)"
        else
            pass "handle cases under memcheck ($(tail -n 1 "$T_WORK/vg.out"))"
        fi
    else
        echo "# valgrind not installed: the handle cases were not run under memcheck"
    fi
fi

finish
