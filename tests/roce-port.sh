#!/usr/bin/env bash
# A host with a RoCE port: the soft RDMA device with a port whose link
# layer is Ethernet (tests/softrdma/run.sh, SOFTRDMA_LINK_LAYERS), in two
# hosts:
#   "ib eth"  softrdma0 InfiniBand, softrdma1 Ethernet (RoCE) beside it
#   "eth"     softrdma0 Ethernet alone
# Every program runs with UCX_TLS unset (libucp's defaults: every transport
# resource libuct lists).  First the device: on "ib eth", `ibv_devinfo -v`
# shows softrdma1's port with an Ethernet link layer and its RoCE v2 GID
# ::ffff:10.83.0.2, and xproc-test (raw verbs between two processes: RC,
# SRQ, RDMA, atomics, UD with GRH, errors) passes on softrdma1.  Then, for
# each host, the original (when the reference UCX has verbs) and then
# LIBDIR:
#  - `ucx_info -d`: every listed transport resource opens (no "< failed to
#    open interface >", no UCX error); what is listed on the Ethernet port
#    is printed.  Both list rc_verbs and ud_verbs on the RoCE port and open
#    them (and on "ib eth" on the InfiniBand port too); on "ib eth" the
#    softrdma1 block is the recorded one (1.13.1's, so only with that
#    reference), and LIBDIR's is the original's of the same run.
#  - `ucx_info -e -u t`: libucp creates its worker and an endpoint (its
#    lanes are printed).
#  - Debian's `ucp_hello_world` (built unchanged), server and client as two
#    processes, -s 16 (eager) and -s 1048576 (rendezvous): both exit 0 and
#    the client prints exactly the string the server generated; the lanes
#    libucp chose are printed.  LIBDIR may print no UCX warning or
#    error line the original does not.
#  - on "ib eth", mixed: the original as server and LIBDIR as client, and
#    the other way round, -s 1048576.
# With a reference without verbs (the UCX 1.18 wheel) LIBDIR alone runs, and
# on "ib eth" only `ucx_info -d`: libucp over our verbs transports is
# exercised with the 1.13 reference (as in the ucp-verbs suites).
# The original's results are in tests/softrdma/expected/roce-port.c-original.txt.
# Usage: tests/roce-port.sh [LIBDIR]   (or UCT_LIBDIR; empty = the original)
here=$(cd "$(dirname "$0")" && pwd)
. "$here/lib/ucp-verbs.sh"

HOSTS=("ib eth" "eth")
SIZES="16 1048576"

ab_begin "$@"
OURS=$UCT_LIBDIR
need_ib_lib "$OURS"
REF=0
ref_has_verbs && REF=1
if [ -z "$OURS" ] && [ "$REF" = 0 ]; then
    skip_suite "UCX $UCX_ABI: the reference has no verbs transports"
fi
[ "$REF" = 0 ] && echo "# UCX $UCX_ABI: the reference has no verbs transports; LIBDIR alone"
softrdma_setup
softrdma_shm_dir
build_ucp_example ucp_hello_world
UCP_HELLO=$T_WORK/ucp_hello_world
UCX_INFO=$(ucx_tool ucx_info)

# the libraries of the run: "" (the original) and LIBDIR
LIBS=()
[ "$REF" = 1 ] && LIBS+=("")
[ -n "$OURS" ] && LIBS+=("$OURS")

# the Ethernet device of a host
eth_dev() {
    case $1 in "ib eth") echo softrdma1 ;; *) echo softrdma0 ;; esac
}

# side LIB HOST ST CMD...: one process with the host's devices, LIB's
# libuct, UCX_TLS unset, an info log (lanes), under run_watch; it replaces
# the calling (sub)shell, so that a signal to `side ... &` reaches run_watch
side() {
    local lib=$1 host=$2 st=$3
    shift 3
    exec env -u UCX_TLS $(lib_env "$lib") UCX_LOG_LEVEL=info SOFTRDMA_LINK_LAYERS="$host" \
        "$RUN_WATCH" "$PAIR_TIMEOUT" "$st" "$SR/run.sh" "$@"
}

# resources FILE: "TRANSPORT DEVICE" per resource `ucx_info -d` lists
resources() {
    awk '/^#      Transport: / { tl = $3 } /^#         Device: / { print tl, $3 }' "$1"
}

# md_block FILE MD: the lines of `ucx_info -d` from memory domain MD to the
# next memory domain or connection manager (log lines left out)
md_block() {
    awk -v md="# Memory domain: $2" '
        /^\[/ { next }
        $0 == md { on = 1; print; next }
        /^# (Memory domain:|< failed to open connection manager|Connection manager:)/ { on = 0 }
        on' "$1"
}
RECORDED=$SR/expected/roce-port.c-original.txt

# check_info LIB HOST LABEL: `ucx_info -d` and `ucx_info -e -u t`
check_info() {
    local lib=$1 host=$2 who=$3 out eth on_eth st
    eth=$(eth_dev "$host")
    out=$T_WORK/info-d.$who
    (side "$lib" "$host" "$T_WORK/info.st" env UCX_LOG_LEVEL=debug "$UCX_INFO" -d) >"$out" 2>&1 </dev/null
    st=$(status_of "$T_WORK/info.st")
    on_eth=$(resources "$out" | awk -v d="$eth:1" '$2 == d { print $1 }' | tr '\n' ' ')
    on_eth=${on_eth% }
    echo "#   $who, host \"$host\": ucx_info -d lists on $eth:1 (Ethernet): ${on_eth:-nothing}"
    if [ "$st" != "exit 0" ]; then
        fail "$who, host \"$host\": ucx_info -d" "$st: $(grep -a -m 1 'ERROR' "$out")"
    elif grep -a -q '< failed to open interface >\|UCX  ERROR' "$out"; then
        grep -a -B 3 '< failed to open interface >' "$out" | grep -a 'Transport\|Device' | sed 's/^/      /'
        grep -a 'UCX  ERROR' "$out" | head -n 3 | sed 's/^/      /'
        fail "$who, host \"$host\": ucx_info -d: every listed resource opens"
    else
        pass "$who, host \"$host\": ucx_info -d: every listed resource opens ($(resources "$out" | wc -l) resources)"
    fi
    if [ "$host" = "ib eth" ]; then
        if resources "$out" | grep -qx 'rc_verbs softrdma0:1' && resources "$out" | grep -qx 'ud_verbs softrdma0:1'; then
            pass "$who, host \"$host\": rc_verbs and ud_verbs listed on softrdma0:1 (InfiniBand)"
        else
            fail "$who, host \"$host\": rc_verbs and ud_verbs listed on softrdma0:1 (InfiniBand)"
        fi
    fi
    # the soft device's RoCE port is one the original drives, and so do we
    if [ "$on_eth" = "rc_verbs ud_verbs" ]; then
        pass "$who, host \"$host\": rc_verbs and ud_verbs on the RoCE port $eth:1 (and they open)"
        # (recorded from 1.13.1: another release's block is not judged)
        if [ "$host" = "ib eth" ] && [ "$UCX_ABI" = 1.13 ]; then
            if diff <(md_block "$RECORDED" "$eth") <(md_block "$out" "$eth") >"$T_WORK/block.diff" &&
               [ -n "$(md_block "$out" "$eth")" ]; then
                pass "$who, host \"$host\": the md block of $eth as recorded"
            else
                sed 's/^/      /' "$T_WORK/block.diff" | head -n 20
                fail "$who, host \"$host\": the md block of $eth as recorded"
            fi
        fi
        # LIBDIR against the original of this run, where there is one
        if [ -n "$lib" ] && [ "$REF" = 1 ]; then
            if diff <(md_block "$T_WORK/info-d.original" "$eth") <(md_block "$out" "$eth") >"$T_WORK/block.diff"
            then
                pass "$who, host \"$host\": the md block of $eth is the original's"
            else
                sed 's/^/      /' "$T_WORK/block.diff" | head -n 20
                fail "$who, host \"$host\": the md block of $eth is the original's"
            fi
        fi
    else
        fail "$who, host \"$host\": rc_verbs and ud_verbs on the RoCE port $eth:1" "lists: ${on_eth:-nothing}"
    fi
    if [ "$REF" = 0 ] && [ "$host" != eth ]; then
        echo "#   $who, host \"$host\": libucp cases left out (the reference has no verbs)"
        return 1
    fi
    out=$T_WORK/info-e.$who
    (side "$lib" "$host" "$T_WORK/info.st" "$UCX_INFO" -e -u t) >"$out" 2>&1 </dev/null
    st=$(status_of "$T_WORK/info.st")
    if [ "$st" = "exit 0" ] && grep -a -q '^# UCP endpoint' "$out" && ! grep -a -q 'Failed to create UCP worker' "$out"; then
        pass "$who, host \"$host\": ucx_info -e -u t: worker and endpoint created"
        grep -a 'lane\[' "$out" | sed -E 's/^# +/#     /'
    else
        fail "$who, host \"$host\": ucx_info -e -u t: worker and endpoint created" \
            "$st: $(grep -a -m 1 'ERROR\|Failed' "$out")"
    fi
    return 0
}

# run_case SRV_LIB CLI_LIB HOST SIZE -> R_OK, R_WHY, R_BAD, R_SEC; outputs in
# $T_WORK/srv.out and $T_WORK/cli.out
run_case() {
    local slib=$1 clib=$2 host=$3 size=$4 port
    port=$(free_port)
    rm -f "$T_WORK/srv.out" "$T_WORK/cli.out"
    : >"$T_WORK/cli.out"
    R_OK=0 R_WHY= R_BAD=0 R_SEC=0
    if ! run_pair "$port" side "$slib" "$host" "$T_WORK/srv.st" "$UCP_HELLO" -s "$size" -p "$port" \
        -- side "$clib" "$host" "$T_WORK/cli.st" "$UCP_HELLO" -s "$size" -p "$port" -n 127.0.0.1; then
        R_WHY="$R_WHY: $(grep -a -m 1 'ERROR\|Failed' "$T_WORK/srv.out")"
        return
    fi
    ucpv_hello_judge "$size" 'ERROR\|Failed\|Assert'
}

# show_tails: the last lines of both outputs (long lines cut)
show_tails() {
    tail -n 5 "$T_WORK/srv.out" "$T_WORK/cli.out" | cut -c 1-160 | sed 's/^/      /'
}

# hello NAME HOST SIZE SRV_LIB CLI_LIB LABEL: one case; the original's
# both-sides run of the same host and size is in SYS_OK.$key / lines.sys.$key
hello() {
    local name=$1 host=$2 size=$3 slib=$4 clib=$5 label=$6 key
    key=$(echo "$host-$size" | tr ' ' _)
    run_case "$slib" "$clib" "$host" "$size"
    ucx_lines "$T_WORK/srv.out" "$T_WORK/cli.out" >"$T_WORK/lines.$label.$key"
    if [ "$label" = original ]; then
        echo "$R_OK" >"$T_WORK/sys_ok.$key"
        echo "$R_WHY" >"$T_WORK/sys_why.$key"
        if [ "$R_OK" = 1 ]; then
            pass "$name ($R_SEC s)"
        else
            fail "$name" "$R_WHY"
            show_tails
        fi
    elif [ -f "$T_WORK/sys_ok.$key" ]; then
        cp "$T_WORK/lines.original.$key" "$T_WORK/lines.sys"
        cp "$T_WORK/lines.$label.$key" "$T_WORK/lines.ours"
        ab_verdict "$name" "$(cat "$T_WORK/sys_ok.$key")" "$(cat "$T_WORK/sys_why.$key")" "$R_SEC s"
        [ "$R_OK" = 1 ] || show_tails
    elif [ "$R_OK" = 1 ] && [ ! -s "$T_WORK/lines.$label.$key" ]; then
        pass "$name ($R_SEC s)"
    else
        fail "$name" "${R_WHY:-UCX lines: $(head -n 3 "$T_WORK/lines.$label.$key" | tr '\n' ' ')}"
        show_tails
    fi
    ucpv_lanes "$T_WORK/srv.out" "$T_WORK/cli.out" | sed 's/^/#     /'
}

# ---- the device's RoCE port
SOFTRDMA_LINK_LAYERS="ib eth" "$SR/run.sh" ibv_devinfo -v >"$T_WORK/devinfo.txt" 2>&1
port_of() { # DEV: the port lines of DEV in the ibv_devinfo -v output
    awk -v d="$1" '/^hca_id:/ { on = ($2 == d); p = 0 } on && /port:/ { p = 1 } on && p' "$T_WORK/devinfo.txt"
}
if port_of softrdma1 | grep -q 'link_layer:[[:space:]]*Ethernet$' &&
   port_of softrdma1 | grep -q 'GID\[  3\]:[[:space:]]*::ffff:10.83.0.2, RoCE v2$' &&
   port_of softrdma0 | grep -q 'link_layer:[[:space:]]*InfiniBand$'; then
    pass "device: softrdma0 InfiniBand, softrdma1 Ethernet with RoCE v2 GID ::ffff:10.83.0.2 (ibv_devinfo -v)"
else
    port_of softrdma1 | sed 's/^/      /'
    fail "device: softrdma0 InfiniBand, softrdma1 Ethernet with RoCE v2 GID ::ffff:10.83.0.2 (ibv_devinfo -v)"
fi
SOFTRDMA_LINK_LAYERS="ib eth" timeout -k 5 120 "$SR/run.sh" "$SOFTRDMA_BUILD/xproc-test" softrdma1 \
    >"$T_WORK/xproc.txt" 2>&1
rc=$?
n_ok=$(grep -c '^ok ' "$T_WORK/xproc.txt")
if [ $rc = 0 ] && ! grep -q '^not ok' "$T_WORK/xproc.txt" && [ "$n_ok" -gt 0 ]; then
    pass "device: xproc-test on the RoCE port softrdma1:1 ($n_ok checks)"
else
    grep '^not ok' "$T_WORK/xproc.txt" | head -n 5 | sed 's/^/      /'
    fail "device: xproc-test on the RoCE port softrdma1:1" "exit $rc"
fi

for host in "${HOSTS[@]}"; do
    echo "# host \"$host\": $( [ "$host" = eth ] && echo "softrdma0 Ethernet (RoCE) alone" ||
        echo "softrdma0 InfiniBand, softrdma1 Ethernet (RoCE)")"
    for lib in "${LIBS[@]}"; do
        if [ -z "$lib" ]; then who=original; else who=LIBDIR; fi
        check_info "$lib" "$host" "$who" || continue
        for size in $SIZES; do
            hello "$who, host \"$host\": ucp_hello_world -s $size, UCX_TLS unset" "$host" "$size" "$lib" "$lib" "$who"
        done
    done
    if [ "$host" = "ib eth" ] && [ -n "$OURS" ] && [ "$REF" = 1 ]; then
        hello "host \"$host\": ucp_hello_world -s 1048576, server original, client LIBDIR" \
            "$host" 1048576 "" "$OURS" mixed
        hello "host \"$host\": ucp_hello_world -s 1048576, server LIBDIR, client original" \
            "$host" 1048576 "$OURS" "" mixed
    fi
done

ucpv_end
