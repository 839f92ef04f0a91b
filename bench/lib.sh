# shellcheck shell=bash
# Shared by the side-by-side benchmarks (sourced): medians, ratios, and the
# alternating ours/ucx rounds of one table cell.

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
bench_cell() {
    local rounds=$1 libdir=$2 r side state lib res
    shift 2
    local ol=() ob=() ul=() ub=()
    o_state=run u_state=run
    for ((r = 0; r < rounds; r++)); do
        for side in ours ucx; do
            if [ $side = ours ]; then state=$o_state lib=$libdir; else state=$u_state lib=; fi
            [ "$state" = run ] || continue
            res=$(run_one "$lib" "$@")
            case $res in
                n/a | fail*) state=$res ;;
                *)
                    # shellcheck disable=SC2086
                    set -- $res "$@"
                    if [ $side = ours ]; then ol+=("$1"); ob+=("$2"); else ul+=("$1"); ub+=("$2"); fi
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
