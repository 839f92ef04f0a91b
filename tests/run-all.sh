#!/usr/bin/env bash
# Run every uct-rs C/shell test against LIBDIR (a directory holding our
# libuct.so.0; empty or absent = the reference UCX) and print the combined
# "N passed, M failed".  Exits non-zero on any failure.  UCX_PREFIX (and
# UCX_ABI) select the reference UCX installation (tests/lib/common.sh); a
# suite that does not apply to it is skipped (exit 77, 0 cases).  The suites and
# their order come from tests/suites.txt (the list meson.build reads too).
# Usage: tests/run-all.sh [--suite TAG]... [LIBDIR]    (or UCT_LIBDIR=...)
#        tests/run-all.sh [--suite TAG]... --list      (name, script, tags)
# --suite TAG keeps the suites with that tag (an AREA, TIER or "needs-NEED"
# of suites.txt, as meson's --suite; several: any of them).  UCT_RS_TIER=full
# runs the full tier of the suites that have one (tests/lib/common.sh).
# Environment passed through: EXPECT_FAIL_TLS (hello-uct.sh, hello-shm.sh,
# mixed-shm.sh, mixed-tcp.sh, kill-peer.sh, perftest-shm.sh), EXPECT_FAIL_CASES
# (hello-shm.sh), EXPECT_FAIL_ROWS (perftest-shm.sh), ITERS (perftest-self.sh,
# perftest-shm.sh, mixed-shm.sh, netns-tcp.sh).
# The shared-memory state (/dev/shm, SysV segments) is recorded first, and
# the leftover checker tests itself; the last step fails on anything the
# suites left behind (tests/lib/shm-leftovers.sh).
set -u
here=$(cd "$(dirname "$0")" && pwd)
top=$(dirname "$here")
suites=$here/suites.txt
leftovers=tests/lib/shm-leftovers.sh

want=()   # the --suite tags
list=
while [ $# -gt 0 ]; do
    case $1 in
        --suite)
            [ $# -ge 2 ] || { echo "--suite needs a TAG"; exit 2; }
            want+=("$2")
            shift 2 ;;
        --list) list=1; shift ;;
        *) break ;;
    esac
done

# One "SCRIPT ARGKIND" per suite, from suites.txt.  Extra steps around them:
# "self-test" (the leftover checker on itself) and "suite-leftovers".
steps=("$leftovers self-test")
while read -r name script area tier needs argkind; do
    case $name in "" | "#"*) continue ;; esac
    tags="${area//,/ } ${tier//,/ }"
    [ "${needs:--}" = - ] || tags="$tags needs-${needs//,/ needs-}"
    if [ ${#want[@]} -gt 0 ]; then
        keep=
        for t in "${want[@]}"; do
            case " $tags " in *" $t "*) keep=1 ;; esac
        done
        [ -n "$keep" ] || continue
    fi
    if [ -n "$list" ]; then
        printf '%-20s %-34s %s\n' "$name" "$script" "$tags"
        continue
    fi
    steps+=("$script ${argkind:-libdir}")
done <"$suites"
[ -n "$list" ] && exit 0
steps+=("$leftovers suite-leftovers")

libdir=${1-${UCT_LIBDIR:-}}
if [ -n "$libdir" ]; then
    libdir=$(cd "$libdir" 2>/dev/null && pwd -P) || {
        echo "no such directory: ${1-$UCT_LIBDIR}"
        echo "0 passed, 1 failed"
        exit 1
    }
fi
export UCT_LIBDIR=$libdir

total_pass=0
total_fail=0
report=()
log=$(mktemp "${TMPDIR:-/tmp}/uct-rs-run-all.XXXXXX")
shm_before=$(mktemp "${TMPDIR:-/tmp}/uct-rs-run-all-shm.XXXXXX")
trap 'rm -f "$log" "$shm_before"' EXIT
"$top/$leftovers" --snapshot "$shm_before" >/dev/null

for step in "${steps[@]}"; do
    s=${step% *}
    kind=${step##* }
    label=$s
    case $kind in
        libfile) args=("${libdir:+$libdir/libuct.so.0}") ;;
        self-test)
            args=(--self-test)
            label="$s --self-test" ;;
        suite-leftovers)   # nothing left by the suites
            args=(--check "$shm_before")
            label=suite-leftovers ;;
        *) args=("$libdir") ;;
    esac
    echo "=== $label"
    "$top/$s" "${args[@]}" 2>&1 | tee "$log"
    rc=${PIPESTATUS[0]}
    summary=$(grep -E '^[0-9]+ passed, [0-9]+ failed$' "$log" | tail -n 1)
    if [ -n "$summary" ]; then
        set -- $summary
        p=$1 f=$3
        if [ "$f" -eq 0 ] && [ "$rc" -ne 0 ] && ! { [ "$rc" -eq 77 ] && [ "$p" -eq 0 ]; }; then
            f=1   # exit status says failure although no case failed (77 with no case: skipped)
        fi
    else
        p=0 f=1
    fi
    total_pass=$((total_pass + p))
    total_fail=$((total_fail + f))
    report+=("$(printf '%-40s %4d passed, %3d failed' "$label" "$p" "$f")")
done

echo "=== summary (${libdir:-system library}${UCX_PREFIX:+, UCX $UCX_PREFIX})"
printf '%s\n' "${report[@]}"
printf '%d passed, %d failed\n' "$total_pass" "$total_fail"
[ "$total_fail" -eq 0 ]
