#!/usr/bin/env bash
# libucp over the verbs transports: ucx_perftest's UCP tests, server and
# client as two processes, each with the soft RDMA device
# (tests/softrdma/run.sh) and LD_LIBRARY_PATH at LIBDIR (the distro's libucp
# and ucx_perftest on LIBDIR's libuct).  ucx_perftest exchanges addresses
# over its own socket (no connection manager).
#
#   UCX_TLS   rc_verbs,ud_verbs; ud_verbs; rc_verbs,ud_verbs,posix,self
#   tests     tag_lat tag_bw stream_lat stream_bw ucp_put_lat ucp_put_bw
#             ucp_get ucp_am_lat ucp_am_bw ucp_add ucp_fadd ucp_swap
#             ucp_cswap, at 8 B and 1 MiB (the original refuses the atomics
#             at 1 MiB: "Atomic size should be either 32 or 64 bit")
#   -n        8 B: ITERS (200), 1 MiB: ITERS_LARGE (20); warm-up a tenth
#   tiers     CI: over rc_verbs,ud_verbs every test at 8 B, the bandwidth
#             tests, ucp_get and ucp_add (refused) at 1 MiB; five rows over
#             each other set; UCT_RS_TIER=full: every test and size over all
#             three sets, with ITERS 2000 and ITERS_LARGE 100
#
# Each case runs on the original first, then on LIBDIR.  A case the
# original passes must pass: both processes exit 0 and the client reports
# all iterations.  A case the original fails (or refuses) must fail
# cleanly on LIBDIR too, no crash, no hang.  LIBDIR may print no UCX
# warning or error line the original does not.  (ucx_perftest checks no
# data; the other ucp-verbs suites do.)
# Usage: tests/ucp-verbs-perftest.sh [LIBDIR]   (or UCT_LIBDIR)
here=$(cd "$(dirname "$0")" && pwd)
. "$here/lib/ucp-verbs.sh"

ucpv_begin "$@"
need_perftest
if full_tier; then
    ITERS=${ITERS:-2000} ITERS_LARGE=${ITERS_LARGE:-100}
else
    ITERS=${ITERS:-200} ITERS_LARGE=${ITERS_LARGE:-20}
fi
PERFTEST=$(ucx_tool ucx_perftest)

# run_case LIB TLS TEST SIZE ITERS -> R_OK, R_WHY, R_BAD, R_LAT, R_SEC
run_case() {
    local lib=$1 tls=$2 test=$3 size=$4 iters=$5 port final srv cli
    port=$(free_port)
    local args=(-t "$test" -s "$size" -n "$iters" -w $((iters / 10)) -p "$port")
    R_OK=0 R_WHY= R_BAD=0 R_LAT=
    run_pair "$port" ucpv_side "$lib" "$tls" "$T_WORK/srv.st" "$PERFTEST" "${args[@]}" \
        -- ucpv_side "$lib" "$tls" "$T_WORK/cli.st" "$PERFTEST" 127.0.0.1 "${args[@]}" || return
    R_SEC=$PAIR_SEC srv=$PAIR_SRV cli=$PAIR_CLI
    # (a Final line prints "inf" as the average of an interval with no new
    # iteration: the overall figure then stands for it)
    final=$(grep -E '^ *(Final:)? *[0-9]+ +[0-9.]+ +([0-9.]+|inf|-?nan)' "$T_WORK/cli.out" | tail -n 1 | sed 's/Final://')
    R_LAT=$(awk '{ print ($3 ~ /^[0-9.]+$/ ? $3 : $4) }' <<<"$final")
    if [ "$srv" != "exit 0" ] || [ "$cli" != "exit 0" ]; then
        R_WHY="server $srv, client $cli: $(grep -h -m 1 'ERROR\|rror\|nsupported' "$T_WORK/cli.out" "$T_WORK/srv.out" | head -n 1 | sed 's/^.*UCX  *ERROR *//')"
        pair_failed_cleanly "$srv" "$cli" || R_BAD=1
    elif [ "$(awk '{ print $1 }' <<<"$final")" != "$iters" ]; then
        R_WHY="the client's last report is not $iters iterations: ${final:-none}"
    else
        R_OK=1
    fi
}

ALL_TESTS="tag_lat tag_bw stream_lat stream_bw ucp_put_lat ucp_put_bw ucp_get ucp_am_lat ucp_am_bw"
ATOMICS="ucp_add ucp_fadd ucp_swap ucp_cswap"
# cases SET: "TEST SIZE ITERS" lines of the tier
cases() {
    local set=$1 t s
    for t in $ALL_TESTS $ATOMICS; do
        for s in 8 1048576; do
            if ! full_tier; then
                case $set:$t:$s in
                    rc_verbs,ud_verbs:*:8 | rc_verbs,ud_verbs:ucp_add:1048576) ;;
                    rc_verbs,ud_verbs:*_lat:1048576 | rc_verbs,ud_verbs:ucp_*:1048576)
                        case $t in ucp_put_bw | ucp_get | ucp_am_bw) ;; *) continue ;; esac ;;
                    rc_verbs,ud_verbs:*) ;;
                    *:tag_lat:8 | *:tag_bw:1048576 | *:ucp_put_bw:1048576 | *:ucp_am_bw:1048576 | \
                        *:ucp_fadd:8) ;;
                    *) continue ;;
                esac
            fi
            if [ "$s" = 8 ]; then echo "$t $s $ITERS"; else echo "$t $s $ITERS_LARGE"; fi
        done
    done
}

for tls in $UCPV_SETS; do
    while read -r test size iters; do
        name="ucx_perftest UCX_TLS=$tls $test $size -n $iters"
        run_case "" "$tls" "$test" "$size" "$iters"
        sys_ok=$R_OK sys_why=$R_WHY sys_bad=$R_BAD sys_lat=$R_LAT sys_sec=$R_SEC
        ucx_lines "$T_WORK/srv.out" "$T_WORK/cli.out" >"$T_WORK/lines.sys"
        if [ -z "$OURS" ]; then
            ucpv_system_only "$name" "$sys_ok" "$sys_why" "$sys_lat us, $sys_sec s" "$sys_bad"
            continue
        fi
        run_case "$OURS" "$tls" "$test" "$size" "$iters"
        ucx_lines "$T_WORK/srv.out" "$T_WORK/cli.out" >"$T_WORK/lines.ours"
        SYS_BAD=$sys_bad ab_verdict "$name" "$sys_ok" "$sys_why" \
            "$R_LAT us, $R_SEC s; original $sys_lat us, $sys_sec s" "$T_WORK/srv.out" "$T_WORK/cli.out"
    done < <(cases "$tls")
done

ucpv_end
