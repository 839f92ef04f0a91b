#!/usr/bin/env bash
# Programs that sleep on the worker's event descriptor (ucp_worker_get_efd,
# ucp_worker_arm, poll with no timeout: ucx-py's default mode, ucxx's
# progress thread) must be woken by what they wait for, as on the C
# original: c-tests/ucp_wakeup.c, server and client, every step caused by
# one side while the other sleeps, each wake-up's latency printed.
#
#   tcp CM      listener woken by the connection request, client by the
#               server's answer (its first send completes), small and
#               large (rendezvous) tag messages both ways, a disconnect
#               woken on the other side (client closes, server closes),
#               a peer that exits without closing during the shutdown
#               (the other side woken by the loss, or closing while it
#               happens; either side): pairings original/original, ours/ours,
#               ours server/original client, original server/ours client
#   by address  the endpoints made from worker addresses (no CM), the data
#               steps over posix, sysv, posix+cma (cma reads the large
#               messages), tcp: original/original and ours/ours, mixed
#               over posix and tcp; a peer lost over tcp (peer error
#               handling: the other side woken by the loss), either side
#   verbs       on the soft RDMA device (when it runs here and the
#               reference has verbs): rc_verbs+ud_verbs and ud_verbs by
#               address (ud_verbs: small messages only), the tcp CM
#               with verbs data lanes, and the rdmacm CM (the device's
#               user-space RDMA CM, UCX's default CM order: rdmacm first)
#               with the four pairings, also with the client lost
#   many        one server, three clients in turn, the second leaving
#               without closing: the server serves all three
#
# A case passes when both processes print "ucp_wakeup: OK" (every wait of
# the program gives up after 10 s without its event: a missing wake-up is
# a failure, not a slow pass) and every step's wake-up was seen; a case the
# original fails is reported, and LIBDIR must then not crash or hang. No
# UCX warning or error line the original does not print. The latencies
# are printed, not judged (no timing assertions).
# Usage: tests/ucp-wakeup.sh [LIBDIR]   (or UCT_LIBDIR)
here=$(cd "$(dirname "$0")" && pwd)
. "$here/lib/ab-common.sh"
. "$here/lib/softrdma.sh"

ab_begin "$@"
OURS=$UCT_LIBDIR
PAIR_TIMEOUT=${PAIR_TIMEOUT:-60}
PROG=$T_WORK/ucp_wakeup
if "$CC" -O2 -g -Wall "${UCX_CFLAGS[@]}" -o "$PROG" "$here/../c-tests/ucp_wakeup.c" \
        "${UCX_LDFLAGS[@]}" -lucp -lucs 2>"$T_WORK/cc.log"; then
    pass "build ucp_wakeup"
else
    cat "$T_WORK/cc.log"
    abort "build ucp_wakeup"
fi

VERBS=0
PREFIX=()

# wake_run SLIB CLIB TLS MODE SENV CENV [N]: one server and N clients (one
# after the other; CENV applies to the second); MODE cm or addr. Sets R_OK,
# R_WHY, R_BAD and R_LAT (the latencies), R_OUT (the outputs).
wake_run() {
    local slib=$1 clib=$2 tls=$3 mode=$4 senv=$5 cenv=$6 n=${7:-1} port spid sf=-s cf=-c i env cst sst
    [ "$mode" = addr ] && { sf=-S; cf=-C; }
    port=$(free_port)
    R_OK=1 R_WHY= R_BAD=0 R_LAT=
    rm -f "$T_WORK"/*.st "$T_WORK"/*.out
    # shellcheck disable=SC2086
    env $(lib_env "$slib") UCX_TLS="$tls" $senv "$RUN_WATCH" "$PAIR_TIMEOUT" "$T_WORK/srv.st" \
        "${PREFIX[@]}" "$PROG" $sf "$port" ${n:+-n "$n"} >"$T_WORK/srv.out" 2>&1 </dev/null &
    spid=$!
    T_CHILDREN=$spid
    if ! wait_listening "$spid" "$port"; then
        kill "$spid" 2>/dev/null
        wait "$spid" 2>/dev/null
        T_CHILDREN=
        R_OK=0 R_WHY="the server did not listen: $(tail -n 2 "$T_WORK/srv.out" | tr '\n' ' ')"
        return
    fi
    for i in $(seq "$n"); do
        env=
        [ "$i" = 2 ] || [ "$n" = 1 ] && env=$cenv
        # shellcheck disable=SC2086
        env $(lib_env "$clib") UCX_TLS="$tls" $env "$RUN_WATCH" "$PAIR_TIMEOUT" "$T_WORK/cli$i.st" \
            "${PREFIX[@]}" "$PROG" $cf 127.0.0.1 "$port" >"$T_WORK/cli$i.out" 2>&1 </dev/null
        cst=$(status_of "$T_WORK/cli$i.st")
        if [ "$cst" != "exit 0" ] || ! grep -aq '^ucp_wakeup: OK' "$T_WORK/cli$i.out"; then
            R_OK=0 R_WHY="client $i: $cst: $(grep -a -m 2 '^FAIL' "$T_WORK/cli$i.out" | tr '\n' ' ')"
            bad_end "$cst" && R_BAD=1
        fi
    done
    # the server ends once its clients are served (or after PAIR_TIMEOUT)
    wait "$spid" 2>/dev/null
    T_CHILDREN=
    sst=$(status_of "$T_WORK/srv.st")
    if [ "$sst" != "exit 0" ] || ! grep -aq '^ucp_wakeup: OK' "$T_WORK/srv.out"; then
        R_OK=0 R_WHY="${R_WHY:+$R_WHY; }server: $sst: $(grep -a -m 2 '^FAIL' "$T_WORK/srv.out" | tr '\n' ' ')"
        bad_end "$sst" && R_BAD=1
    fi
    # every cause has its wake-up (in the same client round), in ms
    R_LAT=$(cat "$T_WORK/srv.out" "$T_WORK"/cli*.out | awk '
        $1 == "cause" || $1 == "wake" { n = ++seen[$1, $2]; t[$1, $2, n] = $3; names[$2] = 1 }
        END {
            miss = ""
            for (k in names) {
                for (i = 1; i <= seen["cause", k]; i++) {
                    if (!(("wake", k, i) in t)) { miss = miss " " k; continue }
                    ms = (t["wake", k, i] - t["cause", k, i]) / 1e6
                    if (ms > max[k]) max[k] = ms
                    cnt[k]++
                }
            }
            order = "connect accept first s2c-small c2s-small s2c-large c2s-large close"
            m = split(order, o, " ")
            for (i = 1; i <= m; i++)
                if (o[i] in cnt) printf "%s %.1f ms, ", o[i], max[o[i]]
            if (miss != "") printf "MISSING%s", miss
        }')
    R_LAT=${R_LAT%, }
    case $R_LAT in
        *MISSING*) R_OK=0 R_WHY="${R_WHY:+$R_WHY; }a step never woke its peer: ${R_LAT#*MISSING}" ;;
    esac
    R_OUT=("$T_WORK/srv.out" "$T_WORK/cli1.out")
}

# wake_case NAME TLS MODE SENV CENV [N]: the original first, then each
# pairing with LIBDIR (SIDES: "all" for the four, "same" for ours/ours)
wake_case() {
    local name=$1 tls=$2 mode=$3 senv=$4 cenv=$5 n=${6:-1} sides=${SIDES:-same} sys_ok sys_why sys_lat pair s c
    wake_run "" "" "$tls" "$mode" "$senv" "$cenv" "$n"
    sys_ok=$R_OK sys_why=$R_WHY sys_lat=$R_LAT
    SYS_BAD=$R_BAD
    cat "${R_OUT[@]}" | ucx_lines >"$T_WORK/lines.sys"
    if [ -z "$OURS" ]; then
        if [ "$sys_ok" = 1 ]; then
            pass "$name original/original: $R_LAT"
        else
            fail "$name original/original" "$sys_why"
        fi
        return
    fi
    local pairs="ours/ours"
    [ "$sides" = all ] && pairs="ours/ours ours/original original/ours"
    for pair in $pairs; do
        s=${pair%/*} c=${pair#*/}
        wake_run "$( [ "$s" = ours ] && echo "$OURS")" "$( [ "$c" = ours ] && echo "$OURS")" \
            "$tls" "$mode" "$senv" "$cenv" "$n"
        cat "${R_OUT[@]}" | ucx_lines >"$T_WORK/lines.ours"
        ab_verdict "$name $pair" "$sys_ok" "$sys_why" "$R_LAT" "${R_OUT[@]}"
    done
    if [ "$sys_ok" = 1 ]; then
        echo "      the original: $sys_lat"
    else
        echo "      the original fails: $sys_why"
    fi
}

# -------------------------------------------------------------- the tcp CM
SIDES=all wake_case "tcp CM" tcp cm "" ""
SIDES=all wake_case "tcp CM, server closes" tcp cm "UCP_WAKEUP_CLOSER=server" "UCP_WAKEUP_CLOSER=server"
SIDES=all wake_case "tcp CM, client lost in shutdown" tcp cm "UCP_WAKEUP_EXIT=client" "UCP_WAKEUP_EXIT=client"
SIDES=all wake_case "tcp CM, server lost while the client closes" tcp cm "UCP_WAKEUP_EXIT=server" \
    "UCP_WAKEUP_EXIT=server"
SIDES=all wake_case "tcp CM, client lost while the server closes" tcp cm \
    "UCP_WAKEUP_EXIT=client UCP_WAKEUP_CLOSER=server" "UCP_WAKEUP_EXIT=client UCP_WAKEUP_CLOSER=server"

# ------------------------------------------------------- the data transports
for tls in posix sysv posix,cma tcp; do
    case $tls in posix | tcp) SIDES=all ;; *) SIDES=same ;; esac
    wake_case "by address over $tls" "$tls" addr "" ""
done
# a peer lost with no CM: the tcp transport reports it (peer error handling)
SIDES=all wake_case "by address over tcp, client lost" tcp addr "UCP_WAKEUP_EXIT=client" "UCP_WAKEUP_EXIT=client"
SIDES=all wake_case "by address over tcp, server lost" tcp addr "UCP_WAKEUP_EXIT=server UCP_WAKEUP_CLOSER=server" \
    "UCP_WAKEUP_EXIT=server UCP_WAKEUP_CLOSER=server"
SIDES=same wake_case "tcp CM, three clients, the second lost" tcp cm "" "UCP_WAKEUP_EXIT=client" 3

# ------------------------------------------------------------------- verbs
if ref_has_verbs; then
    export SOFTRDMA_BUILD=$T_WORK/softrdma
    if "$SR/run.sh" true >"$T_WORK/softrdma.log" 2>&1; then
        softrdma_shm_dir
        VERBS=1
    else
        echo "# the soft RDMA device cannot run here: no verbs cases"
    fi
else
    echo "# UCX $UCX_ABI: the reference has no verbs transports: no verbs cases"
fi
if [ "$VERBS" = 1 ]; then
    PREFIX=("$SR/run.sh")
    SIDES=same wake_case "by address over rc_verbs,ud_verbs" rc_verbs,ud_verbs addr "" ""
    # small messages only: large ones (libucp's rendezvous in fragments
    # over ud_verbs) stall now and then in this mode, on the original too
    SIDES=same wake_case "by address over ud_verbs" ud_verbs addr "UCP_WAKEUP_LARGE=0" "UCP_WAKEUP_LARGE=0"
    SIDES=same wake_case "tcp CM, verbs lanes" rc_verbs,ud_verbs,tcp cm "" ""
    PREFIX=(env SOFTRDMA_CM=1 "$SR/run.sh")
    SIDES=all wake_case "rdmacm CM, verbs lanes" rc_verbs,ud_verbs,tcp cm "" ""
    SIDES=all wake_case "rdmacm CM, client lost in shutdown" rc_verbs,ud_verbs,tcp cm \
        "UCP_WAKEUP_EXIT=client" "UCP_WAKEUP_EXIT=client"
    PREFIX=()
    softrdma_registry_check
fi

shm_check "no /dev/shm file or SysV segment left over" "$T_WORK/shm.before" dirs
finish
