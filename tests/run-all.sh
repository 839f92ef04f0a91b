#!/usr/bin/env bash
# Run every uct-rs C/shell test against LIBDIR (a directory holding our
# libuct.so.0; empty or absent = the system UCX) and print the combined
# "N passed, M failed".  Exits non-zero on any failure.
# Usage: tests/run-all.sh [LIBDIR]    (or UCT_LIBDIR=...)
# Environment passed through: EXPECT_FAIL_TLS (hello-self.sh, hello-shm.sh,
# mixed-shm.sh, mixed-tcp.sh, kill-peer.sh, perftest-shm.sh), EXPECT_FAIL_CASES
# (hello-shm.sh), EXPECT_FAIL_ROWS (perftest-shm.sh), ITERS (perftest-self.sh,
# perftest-shm.sh, mixed-shm.sh, netns-tcp.sh).
# The shared-memory state (/dev/shm, SysV segments) is recorded first; the
# last step fails on anything the suite left behind (tests/lib/shm-leftovers.sh).
set -u
here=$(cd "$(dirname "$0")" && pwd)
top=$(dirname "$here")
libdir=${1-${UCT_LIBDIR:-}}
if [ -n "$libdir" ]; then
    libdir=$(cd "$libdir" 2>/dev/null && pwd -P) || {
        echo "no such directory: ${1-$UCT_LIBDIR}"
        echo "0 passed, 1 failed"
        exit 1
    }
fi
export UCT_LIBDIR=$libdir

scripts=(
    "tests/check-exports.sh"
    "c-tests/api-self.sh"
    "c-tests/v2-probe.sh"
    "c-tests/async-progress.sh"
    "c-tests/preload.sh"
    "c-tests/bad-input.sh"
    "tests/perftest-self.sh"
    "tests/ucx-info.sh"
    "tests/hello-self.sh"
    "tests/lib/shm-leftovers.sh"
    "tests/hello-shm.sh"
    "tests/mixed-shm.sh"
    "tests/perftest-shm.sh"
    "tests/kill-peer.sh"
    "tests/mixed-tcp.sh"
    "tests/netns-tcp.sh"
    "tests/kill-tcp.sh"
    "tests/cm-tcp.sh"
    "tests/ucp-hello.sh"
    "tests/ucp-perftest.sh"
    "tests/mpi-shmem.sh"
    "tests/ucp-client-server.sh"
    "tests/io-demo.sh"
    "tests/memcheck.sh"
    "suite-leftovers"
)

total_pass=0
total_fail=0
report=()
log=$(mktemp "${TMPDIR:-/tmp}/uct-rs-run-all.XXXXXX")
shm_before=$(mktemp "${TMPDIR:-/tmp}/uct-rs-run-all-shm.XXXXXX")
trap 'rm -f "$log" "$shm_before"' EXIT
"$top/tests/lib/shm-leftovers.sh" --snapshot "$shm_before" >/dev/null

for s in "${scripts[@]}"; do
    echo "=== $s"
    label=$s
    if [ "$s" = "tests/check-exports.sh" ]; then
        args=("${libdir:+$libdir/libuct.so.0}")
    elif [ "$s" = "tests/lib/shm-leftovers.sh" ]; then
        args=(--self-test)
        label="$s --self-test"
    elif [ "$s" = "suite-leftovers" ]; then   # nothing left by the suite
        s=tests/lib/shm-leftovers.sh
        args=(--check "$shm_before")
    else
        args=("$libdir")
    fi
    "$top/$s" "${args[@]}" 2>&1 | tee "$log"
    rc=${PIPESTATUS[0]}
    summary=$(grep -E '^[0-9]+ passed, [0-9]+ failed$' "$log" | tail -n 1)
    if [ -n "$summary" ]; then
        set -- $summary
        p=$1 f=$3
        if [ "$f" -eq 0 ] && [ "$rc" -ne 0 ]; then
            f=1   # exit status says failure although no case failed
        fi
    else
        p=0 f=1
    fi
    total_pass=$((total_pass + p))
    total_fail=$((total_fail + f))
    report+=("$(printf '%-34s %4d passed, %3d failed' "$label" "$p" "$f")")
done

echo "=== summary (${libdir:-system library})"
printf '%s\n' "${report[@]}"
printf '%d passed, %d failed\n' "$total_pass" "$total_fail"
[ "$total_fail" -eq 0 ]
