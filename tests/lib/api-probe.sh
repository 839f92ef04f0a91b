# shellcheck shell=bash
# The api_self probe (c-tests/api_self.c) as run by tests/api-self.sh and
# tests/preload.sh (sourced after common.sh and make_workdir; they build it
# with need_c): run it on the system library, and judge a run against that
# one.  The probe's expectations are UCX 1.13's: on another release the
# original misses some of them (exit 1 with its "api: " lines), and a run on
# our library must then miss the same ones (same exit status; the callers
# compare the lines).
#
#   api_probe_system PATH       run it on the system library: $T_WORK/ref.out,
#                               its result lines in $T_WORK/ref.txt, ref_rc
#   api_probe_verdict RC OUT LABEL
#                               judge a run on the library under test that
#                               ended with RC and wrote OUT
#   api_probe_same TXT LABEL    pass LABEL when the result lines TXT equal
#                               the system library's ($T_WORK/ref.txt)

api_probe_system() {
    # the system library, with any inherited LD_LIBRARY_PATH removed
    "${SYS_RUN[@]}" timeout 60 "$1" >"$T_WORK/ref.out" 2>&1
    ref_rc=$?
    grep '^api: ' "$T_WORK/ref.out" >"$T_WORK/ref.txt"
    if [ $ref_rc -eq 0 ]; then
        pass "probe on the system library (exit 0)"
    elif [ "$UCX_ABI" != 1.13 ] && [ $ref_rc -eq 1 ] && [ -s "$T_WORK/ref.txt" ]; then
        pass "probe on the system library (UCX $UCX_RELEASE: $(grep -c '^api: FAIL' "$T_WORK/ref.txt") checks of 1.13 do not hold; compared line by line)"
    else
        grep '^api: FAIL' "$T_WORK/ref.out"
        fail "probe on the system library" "exit status $ref_rc"
    fi
}

api_probe_verdict() {
    local rc=$1 out=$2 label=$3
    if [ "$rc" -eq 0 ]; then
        pass "$label (exit 0)"
    elif [ "$UCX_ABI" != 1.13 ] && [ "$rc" -eq "$ref_rc" ]; then
        pass "$label (exit $rc, as the original)"
    else
        grep '^api: FAIL' "$out"
        tail -n 5 "$out"
        fail "$label" "exit status $rc"
    fi
}

api_probe_same() {
    if [ -s "$T_WORK/ref.txt" ] && diff -u "$T_WORK/ref.txt" "$1" >"$T_WORK/diff.txt"; then
        pass "$2 ($(wc -l <"$T_WORK/ref.txt") lines)"
    else
        cat "$T_WORK/diff.txt"
        fail "$2"
    fi
}
