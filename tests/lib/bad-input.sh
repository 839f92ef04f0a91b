# shellcheck shell=bash
# The shared body of the bad-input suites on the soft RDMA device
# (tests/bad-input-rc.sh, tests/bad-input-ud.sh).  Each builds a program of
# c-tests/ that plays every case of its table in a forked child and prints
# one "PASS  NAME" / "FAIL  NAME" line per case and an "N passed, M failed"
# summary; the suite runs it on a library, counts its verdicts, and compares
# a per-case value of two runs (the original's and ours).  Sourcing this
# file brings common.sh and softrdma.sh; the work directory, the device and
# the private registry directory must be set up before the functions below
# run (softrdma_begin, softrdma_shm_dir).
#
#   BI_PROG                 the program (set by the caller)
#   BI_SHOW                 optional: an ERE; the program's lines that match
#                           are echoed after each run (comments)
#   bi_fail_context NAME OUT
#                           (the caller's) prints what explains the failed
#                           case NAME in the output OUT, indented
#   bad_input_table LABEL LIBDIR-or-"" OUT [VAR=VALUE...] [-- ARGS...]
#                           one run of BI_PROG with LIBDIR's libuct (and the
#                           variables, and ARGS for the program), output to
#                           OUT, 600 s at most; a fail "LABEL: PROG" when it
#                           printed no summary, then a pass or a fail
#                           "LABEL: NAME" per case
#   bad_input_compare LABEL KEYFN K ORIG OURS
#                           KEYFN FILE prints "NAME|V1|...|VK" per case of a
#                           run's output; for each case in both ORIG and OURS
#                           a pass "LABEL: NAME (TEXT)" when the K values are
#                           equal (TEXT: bi_same ORIG-VALUES OURS-VALUES) or
#                           a fail "LABEL: NAME" with bi_differ's text (the
#                           caller defines both); a fail when no case is in
#                           both

_bi_dir=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
. "$_bi_dir/common.sh"
. "$_bi_dir/softrdma.sh"

BI_SHOW=${BI_SHOW:-}

bad_input_table() {
    local label=$1 lib=$2 out=$3 st rest rc envs=()
    shift 3
    while [ $# -gt 0 ] && [ "$1" != -- ]; do envs+=("$1"); shift; done
    [ "${1:-}" = -- ] && shift
    timeout -k 5 600 "$SR/run.sh" env $(lib_env "$lib") "${envs[@]}" "$BI_PROG" "$@" > "$out" 2>&1
    rc=$?
    grep -q '^[0-9]* passed, [0-9]* failed$' "$out" ||
        fail "$label: $(basename "$BI_PROG")" "no summary (exit $rc)"
    [ -n "$BI_SHOW" ] && grep -E "$BI_SHOW" "$out"
    while read -r st rest; do
        case $st in
            PASS) pass "$label: $rest" ;;
            FAIL) fail "$label: $rest"
                  bi_fail_context "$rest" "$out" ;;
        esac
    done < <(grep -E '^(PASS|FAIL) ' "$out")
}

bad_input_compare() {
    local label=$1 keyfn=$2 k=$3 orig=$4 ours=$5 n=0 i same line f o u
    while IFS= read -r line; do
        n=$((n + 1))
        IFS='|' read -ra f <<<"$line"
        o=() u=() same=1
        for ((i = 1; i <= k; i++)); do
            o+=("${f[i]:-}")
            u+=("${f[i + k]:-}")
            [ "${f[i]:-}" = "${f[i + k]:-}" ] || same=
        done
        if [ -n "$same" ]; then
            pass "$label: ${f[0]} ($(bi_same "${o[@]}" "${u[@]}"))"
        else
            fail "$label: ${f[0]}" "$(bi_differ "${o[@]}" "${u[@]}")"
        fi
    done < <(join -t '|' <("$keyfn" "$orig") <("$keyfn" "$ours"))
    [ "$n" -gt 0 ] || fail "$label" "no case to compare"
}
