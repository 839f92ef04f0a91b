# shellcheck shell=bash
# Shared by the side-by-side benchmarks (sourced): medians, ratios, and the
# alternating ours/ucx rounds of one table cell.
#
# Of the test suite's shell libraries (tests/lib/) the benchmarks take only
# the two pieces they run on: common.sh for the work directory, run_watch,
# UCT_SYSTEM_LIB and the UCX installation compared against (the system's,
# or UCX_PREFIX's: its C libuct, libucs/libucp and tools; lib_env and
# ld_path_for give each side its LD_LIBRARY_PATH), and two-proc.sh for the server + client runner
# (run_perf_pair, free_port, wait_listening, wait_pair, status_of).  Set
# PAIR_TIMEOUT and PERF_PIN before sourcing this file.
_bench_top=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
. "$_bench_top/tests/lib/common.sh"
. "$_bench_top/tests/lib/two-proc.sh"

median() {
    sort -g | awk '{ a[NR] = $1 } END { if (NR == 0) print "NA"; else print a[int((NR + 1) / 2)] }'
}

ratio() {
    awk -v a="$1" -v b="$2" 'BEGIN { if (a + 0 > 0 && b + 0 > 0) printf "%.2f", a / b; else print "-" }'
}

# bench_cell ROUNDS LIBDIR ARGS...: run `run_one LIB ARGS...` ROUNDS times
# for our library and the system one, alternating (a side that reports
# "n/a" or "fail ..." is not run again). run_one prints "LAT BW", "n/a" or
# "fail REASON". Sets: o_state/u_state (run, n/a or fail...), the medians
# mlo/mlu (latency) and mbo/mbu (bandwidth) and the ratios rl/rb.
# BENCH_ROUNDS_CSV=FILE: every round is also appended to FILE as
# "ROW,ours|ucx,ROUND,LAT,BW" (ROW: $BENCH_ROW with "+" for ","), for
# bench/report.sh. BASE_LIBDIR=DIR puts that build of ours on the "ucx" side
# (a change's before and after).
bench_cell() {
    local rounds=$1 libdir=$2 r side state lib res
    shift 2
    local ol=() ob=() ul=() ub=()
    : "${BENCH_ROW:=?}"
    o_state=run u_state=run
    for ((r = 0; r < rounds; r++)); do
        for side in ours ucx; do
            if [ $side = ours ]; then state=$o_state lib=$libdir; else state=$u_state lib=${BASE_LIBDIR:-}; fi
            [ "$state" = run ] || continue
            res=$(run_one "$lib" "$@")
            case $res in
                n/a | fail*) state=$res ;;
                *)
                    # shellcheck disable=SC2086
                    set -- $res "$@"
                    if [ $side = ours ]; then ol+=("$1"); ob+=("$2"); else ul+=("$1"); ub+=("$2"); fi
                    [ -n "${BENCH_ROUNDS_CSV:-}" ] && echo "${BENCH_ROW//,/+},$side,$r,$1,$2" >>"$BENCH_ROUNDS_CSV"
                    shift 2 ;;
            esac
            if [ $side = ours ]; then o_state=$state; else u_state=$state; fi
        done
    done
    mlo=$(bench_show "$o_state" "${ol[@]}") mlu=$(bench_show "$u_state" "${ul[@]}")
    mbo=$(bench_show "$o_state" "${ob[@]}") mbu=$(bench_show "$u_state" "${ub[@]}")
    rl=$(ratio "$mlo" "$mlu") rb=$(ratio "$mbo" "$mbu")
}

# bench_show STATE VALUES...: the median of the values, or why there are none.
bench_show() {
    local state=$1
    shift
    if [ $# -gt 0 ]; then printf '%s\n' "$@" | median
    elif [ "$state" = n/a ]; then echo "n/a"
    else echo "fail"; fi
}

# The machine's own ceiling (bench/raw_ceiling.c, no UCX involved), to read
# the ratios against: when the C original already runs at the ceiling, no
# library can be much faster than it on this machine.
# raw_build: compile it into the work directory (sets RAW_BIN; empty when
# gcc fails, and the sections below say so).
raw_build() {
    RAW_BIN=$T_WORK/raw_ceiling
    gcc -O2 -o "$RAW_BIN" "$here/raw_ceiling.c" 2>"$T_WORK/raw_ceiling.err" || RAW_BIN=
}

# raw_cell ROUNDS MODE SIZE COUNT: medians over ROUNDS runs -> rawl, rawb
# ("fail" when the program fails).
raw_cell() {
    local rounds=$1 r out lat=() bw=()
    shift
    rawl=fail rawb=fail
    [ -n "${RAW_BIN:-}" ] || return
    for ((r = 0; r < rounds; r++)); do
        out=$(timeout "${PAIR_TIMEOUT:-120}" "$RAW_BIN" "$@" 2>/dev/null) || return
        lat+=("${out% *}")
        bw+=("${out#* }")
    done
    rawl=$(printf '%s\n' "${lat[@]}" | median)
    rawb=$(printf '%s\n' "${bw[@]}" | median)
}

# raw_section ROUNDS "LABEL|KIND|MODE|SIZE|COUNT|UCX_VALUE|OURS_VALUE"...:
# print the ceiling next to the medians measured above (KIND lat or bw).
raw_section() {
    local rounds=$1 row label kind mode size count vu vo raw
    shift
    echo "# raw ceiling: the same traffic pattern without UCX (bench/raw_ceiling.c), median of $rounds"
    if [ -z "${RAW_BIN:-}" ]; then
        echo "#   not built: $(head -n 1 "$T_WORK/raw_ceiling.err" 2>/dev/null)"
        return
    fi
    printf '%-34s %5s | %10s %10s %10s | %8s %8s\n' pattern kind raw ucx ours ucx/raw ours/raw
    for row in "$@"; do
        IFS='|' read -r label kind mode size count vu vo <<<"$row"
        raw_cell "$rounds" "$mode" "$size" "$count"
        if [ "$kind" = lat ]; then raw=$rawl; else raw=$rawb; fi
        printf '%-34s %5s | %10s %10s %10s | %8s %8s\n' "$label" "$kind" "$raw" "$vu" "$vo" \
            "$(ratio "$vu" "$raw")" "$(ratio "$vo" "$raw")"
    done
}
