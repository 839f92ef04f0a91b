#!/usr/bin/env bash
# Bad-input table (c-tests/bad_input.c): every case runs in a forked child and
# must return the status the C original returns, or, where the original
# itself crashes (ORIG_MAY_CRASH), an error status without crashing.  On the
# system library those crashes are accepted.
# Usage: c-tests/bad-input.sh [LIBDIR] [-- CASE-FILTER...]
#        (or UCT_LIBDIR=...; empty = system library)
here=$(cd "$(dirname "$0")" && pwd)
. "$here/../tests/lib/common.sh"

libarg=()
if [ $# -gt 0 ] && [ "$1" != "--" ]; then
    libarg=("$1")
    shift
fi
[ "${1:-}" = "--" ] && shift
resolve_libdir "${libarg[@]}"
make_workdir

if build_c "$T_WORK/bad_input" "$here/bad_input.c" 2>"$T_WORK/cc.log"; then
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

finish
