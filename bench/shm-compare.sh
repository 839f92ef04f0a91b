#!/usr/bin/env bash
# Side-by-side ucx_perftest over the shared-memory transports and self: the
# same ucx_perftest binary run against LIBDIR's libuct.so.0 ("ours") and the
# system UCX 1.13.1 ("ucx"; UCX_PREFIX: that installation's C libuct, e.g.
# the 1.18.1 wheel's), only LD_LIBRARY_PATH differs; the two alternate
# within each round, and the table gives the median over ROUNDS of each and
# the ratio ours/ucx (latency: lower is better; bandwidth: higher is better).
#
#   transports  posix, sysv (server + client on loopback), self (-l, one
#               process), cma (server + client)
#   tests       am_lat short, am_lat bcopy, am_bw bcopy,
#               put_bw  short while size <= the transport's put max_short
#                       (from the system's `ucx_info -d`), bcopy above;
#                       zcopy on cma (its only put)
#               get     zcopy where the original has it (cma), bcopy otherwise;
#                       plus get zcopy on posix/sysv, which only ours has
#   sizes       8 B, 4 KiB, 64 KiB, 1 MiB
# A size a test cannot take (am_lat short over posix stops at 100 bytes, AM
# bcopy at 8256, cma has no AM) shows "n/a": perftest says "Unsupported
# operation", once, and that side is not run again; "fail" is any other error.
# Iterations scale with the size: BENCH_BYTES / size, within [BENCH_MIN_ITERS,
# BENCH_MAX_ITERS] (defaults 1 GiB, 2000, 200000); warm-up a tenth of that.
#
# Then the latency- (perftest's time per operation, every test) and
# bandwidth-vs-size (streaming tests) curves, ours vs UCX, per transport,
# go to OUT.png (default ./shm-compare.png) with gnuplot, or with
# python3-matplotlib when there is no gnuplot.  Neither installed: the table
# is still printed, and the script says what to install:
#     apt-get install gnuplot-nox        (or: apt-get install python3-matplotlib)
#
# After the table, the ceiling of the copies the library cannot avoid
# (bench/raw_ceiling.c, no UCX): process_vm_writev/readv for the cma rows,
# memcpy for put_bw at 64 KiB and up, with both libraries' ratios to it.
#
# Usage: bench/shm-compare.sh LIBDIR [ROUNDS] [OUT.png]      (ROUNDS default 5)
# Env: BENCH_TLS="posix sysv self cma", BENCH_SIZES="8 4096 65536 1048576",
#      BENCH_TESTS="am_lat:short am_lat:bcopy am_bw:bcopy put_bw get" (subset),
#      BENCH_CSV=FILE (the table as CSV), BENCH_BYTES, BENCH_MIN_ITERS,
#      BENCH_MAX_ITERS, PAIR_TIMEOUT (per process, default 120 s),
#      BENCH_PLOT=auto|gnuplot|matplotlib|none.
set -u
here=$(cd "$(dirname "$0")" && pwd)
PAIR_TIMEOUT=${PAIR_TIMEOUT:-120}
# Pin the two processes of a pair to different CPUs (PERF_PIN=0 to disable).
export PERF_PIN=${PERF_PIN:-1}
. "$here/lib.sh"

libdir=${1:?usage: bench/shm-compare.sh LIBDIR [ROUNDS] [OUT.png]}
libdir=$(cd "$libdir" && pwd -P) || exit 2
[ -e "$libdir/libuct.so.0" ] || { echo "no libuct.so.0 in $libdir"; exit 2; }
rounds=${2:-5}
png=${3:-shm-compare.png}
case $png in /*) ;; *) png=$PWD/$png ;; esac
tls=${BENCH_TLS:-posix sysv self cma}
sizes=${BENCH_SIZES:-8 4096 65536 1048576}
tests=${BENCH_TESTS:-am_lat:short am_lat:bcopy am_bw:bcopy put_bw get}
bytes=${BENCH_BYTES:-1073741824}
min_iters=${BENCH_MIN_ITERS:-2000}
max_iters=${BENCH_MAX_ITERS:-200000}
command -v ucx_perftest >/dev/null || { echo "needs ucx_perftest (apt-get install ucx-utils)"; exit 2; }
command -v ucx_info >/dev/null || { echo "needs ucx_info (apt-get install ucx-utils)"; exit 2; }

make_workdir
build_run_watch
mkdir -p "$T_WORK/plot"

# put max_short of each transport, as the original reports it
put_max_short() { # tl
    "${SYS_RUN[@]}" ucx_info -d 2>/dev/null | awk -v tl="$1" '
        /Transport:/ { cur = $3 }
        cur == tl && $2 == "put_short:" { print $4; exit }'
}

dev_of() {
    case $1 in self) echo "$UCT_SELF_DEV" ;; *) echo memory ;; esac
}

iters_for() { # size
    awk -v b="$bytes" -v s="$1" -v lo="$min_iters" -v hi="$max_iters" \
        'BEGIN { n = int(b / s); if (n < lo) n = lo; if (n > hi) n = hi; print n }'
}

# run_one LIBDIR TL TEST LAYOUT SIZE -> "lat bw" | "n/a" | "fail <why>"
run_one() {
    local lib=$1 tl=$2 test=$3 layout=$4 size=$5 iters warm out st final
    iters=$(iters_for "$size")
    warm=$((iters / 10))
    [ $warm -lt 100 ] && warm=100
    if [ "$tl" = self ]; then
        local e=() d=()
        [ -n "$(lib_env "$lib")" ] && e=(env "$(lib_env "$lib")")
        [ "$layout" != "-" ] && d=(-D "$layout")
        out=$T_WORK/self.out
        st=$T_WORK/self.st
        rm -f "$st"
        "${e[@]}" "$RUN_WATCH" "$PAIR_TIMEOUT" "$st" ucx_perftest -l -t "$test" \
            -x self -d "$UCT_SELF_DEV" "${d[@]}" -s "$size" -n "$iters" -w "$warm" -f \
            >"$out" 2>&1 </dev/null
        final=$(grep -E '^ *[0-9]+ +[0-9.]+ +[0-9.]+' "$out" | tail -n 1)
        if [ "$(status_of "$st")" = "exit 0" ] && [ -n "$final" ]; then
            set -- $final
            echo "$3 $5"
        elif grep -q 'Unsupported operation' "$out"; then
            echo "n/a"
        else
            echo "fail $(status_of "$st")"
        fi
        return
    fi
    run_perf_pair "$lib" "$lib" "$tl" "$(dev_of "$tl")" "$test" "$layout" "$size" "$iters" "$warm"
    case $PP_RESULT in
        OK) echo "$PP_LAT $PP_BW" ;;
        UNSUP) echo "n/a" ;;
        *) echo "fail ${PP_RESULT#* }" ;;
    esac
}

# cell rows: "tl test layout size"
plan() {
    local tl t test layout size pms
    for tl in $tls; do
        pms=$(put_max_short "$tl")
        for t in $tests; do
            for size in $sizes; do
                case $t in
                    *:*) test=${t%%:*} layout=${t#*:} ;;
                    put_bw)
                        test=put_bw
                        if [ "$tl" = cma ]; then layout=zcopy
                        elif [ -n "$pms" ] && [ "$size" -le "$pms" ]; then layout=short
                        else layout=bcopy; fi ;;
                    get)
                        test="get"
                        if [ "$tl" = cma ]; then layout=zcopy; else layout=bcopy; fi
                        if [ "$tl" = posix ] || [ "$tl" = sysv ]; then
                            echo "$tl get zcopy $size"   # ours only (beyond 1.13.1)
                        fi ;;
                    *) test=$t layout=- ;;
                esac
                echo "$tl $test $layout $size"
            done
        done
    done
}

fmt='%-6s %-7s %-6s %8s | %9s %9s %6s | %10s %10s %6s\n'
printf '# ours: %s   ucx: %s   rounds: %s\n' "$libdir/libuct.so.0" "$UCT_SYSTEM_LIB" "$rounds"
printf "$fmt" tl test layout size lat_ours lat_ucx ratio bw_ours bw_ucx ratio
printf "$fmt" "" "" "" "(bytes)" "(us)" "(us)" "" "(MB/s)" "(MB/s)" ""
[ -n "${BENCH_CSV:-}" ] &&
    echo "tl,test,layout,size,lat_ours_us,lat_ucx_us,lat_ratio,bw_ours_MBps,bw_ucx_MBps,bw_ratio" >"$BENCH_CSV"

raw_rows=()
while read -r tl test layout size; do
    bench_cell "$rounds" "$libdir" "$tl" "$test" "$layout" "$size"
    case "$tl $test $layout" in
        "cma put_bw zcopy") raw_rows+=("cma process_vm_writev $size B (us)|lat|cma-put|$size|$((size * $(iters_for "$size")))|$mlu|$mlo") ;;
        "cma get zcopy") raw_rows+=("cma process_vm_readv $size B (us)|lat|cma-get|$size|$((size * $(iters_for "$size")))|$mlu|$mlo") ;;
        "posix put_bw "* | "sysv put_bw "*)
            [ "$size" -ge 65536 ] &&
                raw_rows+=("$tl put_bw: memcpy $size B (MB/s)|bw|memcpy|$size|$((size * $(iters_for "$size")))|$mbu|$mbo") ;;
    esac
    printf "$fmt" "$tl" "$test" "$layout" "$size" "$mlo" "$mlu" "$rl" "$mbo" "$mbu" "$rb"
    # why a side failed, once per distinct reason
    case $o_state in fail*)
        [ "$o_state" != "${last_o_fail:-}" ] && echo "#   ours: $o_state (same below until another reason)"
        last_o_fail=$o_state ;;
    esac
    case $u_state in fail*)
        [ "$u_state" != "${last_u_fail:-}" ] && echo "#   ucx: $u_state (same below until another reason)"
        last_u_fail=$u_state ;;
    esac
    [ -n "${BENCH_CSV:-}" ] &&
        echo "$tl,$test,$layout,$size,$mlo,$mlu,$rl,$mbo,$mbu,$rb" >>"$BENCH_CSV"
    # plot series: the latency (perftest's time per operation) of every
    # test, the bandwidth of the streaming ones
    series="$test-$layout"
    [ "$test" = put_bw ] && [ "$layout" != zcopy ] && series="put_bw"
    for side in ours ucx; do
        if [ $side = ours ]; then l=$mlo b=$mbo; else l=$mlu b=$mbu; fi
        case $l in n/a | fail | NA) continue ;; esac
        echo "$size $l" >>"$T_WORK/plot/lat.$tl.$series.$side"
        case $test in *_lat) continue ;; esac
        echo "$size $b" >>"$T_WORK/plot/bw.$tl.$series.$side"
    done
done < <(plan)

if [ ${#raw_rows[@]} -gt 0 ]; then
    raw_build
    raw_section "$rounds" "${raw_rows[@]}"
fi

# ------------------------------------------------------------------- plot --
plot_gnuplot() {
    local gp=$T_WORK/plot.gp kind tl f base series side first ncol=0 t
    for t in $tls; do ncol=$((ncol + 1)); done
    {
        echo "set terminal pngcairo size $((ncol * 420)),760 font ',9'"
        echo "set output '$png'"
        echo "set multiplot layout 2,$ncol title 'ucx\\_perftest: ours (solid) vs UCX $UCX_RELEASE (dashed), median of $rounds'"
        echo "set logscale xy; set grid; set key top left font ',8'"
        echo "set xtics ('8' 8, '4K' 4096, '64K' 65536, '1M' 1048576)"
        echo "set xrange [4:2097152]"
        for kind in lat bw; do
            for tl in $tls; do
                if [ $kind = lat ]; then
                    echo "set ylabel 'latency (us)'"; echo "set title '$tl: latency (time per operation)'"
                else
                    echo "set ylabel 'bandwidth (MB/s)'"; echo "set title '$tl: bandwidth'"
                fi
                echo "set xlabel 'message size (bytes)'"
                first=1
                line="plot"
                local n=0
                for f in "$T_WORK"/plot/$kind.$tl.*.ours "$T_WORK"/plot/$kind.$tl.*.ucx; do
                    [ -e "$f" ] || continue
                    base=${f##*/}
                    side=${base##*.}
                    series=${base#"$kind.$tl."}
                    series=${series%."$side"}
                    n=$((n + 1))
                    local color dash
                    color=$(printf '%s\n' am_lat-short am_lat-bcopy am_bw-bcopy put_bw put_bw-zcopy get-bcopy get-zcopy |
                            grep -nxF "$series" | cut -d: -f1)
                    color=${color:-8}
                    if [ "$side" = ours ]; then dash=1; else dash=2; fi
                    [ $first = 1 ] || line="$line,"
                    line="$line '$f' using 1:2 with linespoints lc $color dt $dash pt 7 ps 0.6 title '${series//_/\\_} $side'"
                    first=0
                done
                if [ $n -eq 0 ]; then
                    echo "unset logscale y; set yrange [0:1]; set label 1 'no data' at graph 0.4,0.5"
                    echo "plot 2 notitle"
                    echo "unset label 1; set autoscale y; set logscale y"
                else
                    echo "$line"
                fi
            done
        done
        echo "unset multiplot"
    } >"$gp"
    gnuplot "$gp" 2>"$T_WORK/gnuplot.log" || { cat "$T_WORK/gnuplot.log"; return 1; }
}

plot_matplotlib() {
    BENCH_RELEASE=$UCX_RELEASE python3 - "$T_WORK/plot" "$png" "$rounds" $tls <<'PY'
import os, sys, glob
import matplotlib
matplotlib.use("Agg")
import matplotlib.pyplot as plt
d, png, rounds, tls = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4:]
release = os.environ.get("BENCH_RELEASE", "1.13.1")
fig, axes = plt.subplots(2, len(tls), figsize=(4.2 * len(tls), 7.6), squeeze=False)
for row, kind in enumerate(("lat", "bw")):
    for col, tl in enumerate(tls):
        ax = axes[row][col]
        for f in sorted(glob.glob(os.path.join(d, f"{kind}.{tl}.*"))):
            base = os.path.basename(f)
            side = base.rsplit(".", 1)[1]
            series = base[len(f"{kind}.{tl}."):-len(side) - 1]
            xs, ys = zip(*[tuple(map(float, l.split())) for l in open(f) if l.strip()])
            ax.plot(xs, ys, "-o" if side == "ours" else "--o", ms=3, label=f"{series} {side}")
        ax.set_xscale("log"); ax.set_yscale("log"); ax.grid(True, which="both", alpha=.3)
        ax.set_xlim(4, 2097152)
        ax.set_title(f"{tl}: {'latency (time per operation)' if kind == 'lat' else 'bandwidth'}")
        ax.set_xlabel("message size (bytes)")
        ax.set_ylabel("latency (us)" if kind == "lat" else "bandwidth (MB/s)")
        if ax.lines: ax.legend(fontsize=7)
fig.suptitle(f"ucx_perftest: ours (solid) vs UCX {release} (dashed), median of {rounds}")
fig.tight_layout(); fig.savefig(png, dpi=100)
PY
}

plotter=${BENCH_PLOT:-auto}
if [ "$plotter" = auto ]; then
    if command -v gnuplot >/dev/null; then plotter=gnuplot
    elif python3 -c 'import matplotlib' 2>/dev/null; then plotter=matplotlib
    else plotter=none; fi
fi
if [ "$plotter" = gnuplot ]; then
    plot_gnuplot && echo "# curves: $png (gnuplot)"
elif [ "$plotter" = matplotlib ]; then
    plot_matplotlib && echo "# curves: $png (matplotlib)"
elif [ "${BENCH_PLOT:-auto}" = none ]; then
    echo "# no PNG (BENCH_PLOT=none)"
else
    echo "# no PNG: neither gnuplot nor python3-matplotlib is installed;"
    echo "#   apt-get install gnuplot-nox     (or: apt-get install python3-matplotlib)"
fi
