#!/usr/bin/env bash
# Our ud_verbs transport on the soft RDMA device (tests/softrdma/), A/B
# against the C original (Debian's UCX 1.13.1; the 1.18.1 wheel has no
# verbs: there the ucx_perftest rows are judged against the original's
# recorded statuses, tests/softrdma/expected/rc-matrix.c-original.txt, and
# the mixed runs are left out):
#  - `ucx_info -d`: the ud_verbs block identical to the original's (1.13);
#  - the ud client/server rows (rc-matrix.sh, SOFTRDMA_MATRIX=ud): ours <->
#    ours, and mixed both ways (1.13): every row the original passes
#    passes, every row it refuses is refused;
#  - ucp_hello_world (the libucx-dev example, the distro's libucp on our
#    libuct) with UCX_TLS=ud_verbs and rc_verbs,ud_verbs: libucp wires up
#    through ud's connection requests; ours <-> ours and mixed both ways
#    (1.13); the client must print the string the server sent;
#  - full tier only (UD_FULL=1): the ud rows again with 1 % datagram loss
#    (SOFTRDMA_UD_DROP=1, seed 1), where the original passes every row.
# Knobs: UD_ITERS (1000 iterations per row), UD_FULL.
# Usage: tests/ud-verbs.sh LIBDIR
here=$(cd "$(dirname "$0")" && pwd)
. "$here/lib/common.sh"

resolve_libdir "$@"
if testing_original; then
    skip_suite "compares our library with the original: give LIBDIR"
fi
make_workdir
. "$here/lib/softrdma.sh"
softrdma_setup
OURS=$UCT_LIBDIR
UCX_INFO=$(ucx_tool ucx_info)
"$SR/run.sh" env $(lib_env "$OURS") "$UCX_INFO" -d > "$T_WORK/info-ours.txt" 2>&1
if ! grep -q '^#      Transport: ud_verbs$' "$T_WORK/info-ours.txt"; then
    skip_suite "$OURS/libuct.so.0 lists no ud_verbs on the device (built without verbs?)"
fi
export SOFTRDMA_ITERS=${UD_ITERS:-1000}

# ---- ucx_info -d
ud_block() {
    awk '/^#      Transport: ud_verbs$/ { on = 1; print; next }
         on && /^#      Transport:|^# (Memory domain:|< failed|Connection manager:)/ { exit }
         on && $0 == "#" { next }
         on { print }' "$1"
}
if ref_has_verbs; then
    "$SR/run.sh" env $(lib_env "") "$UCX_INFO" -d > "$T_WORK/info-orig.txt" 2>&1
    ud_block "$T_WORK/info-orig.txt" > "$T_WORK/block-orig.txt"
    ud_block "$T_WORK/info-ours.txt" > "$T_WORK/block-ours.txt"
    if [ -s "$T_WORK/block-orig.txt" ] && diff "$T_WORK/block-orig.txt" "$T_WORK/block-ours.txt" > "$T_WORK/d.txt"
    then
        pass "ucx_info -d: ud_verbs block identical to the original's ($(wc -l < "$T_WORK/block-ours.txt") lines)"
    else
        cat "$T_WORK/d.txt"
        fail "ucx_info -d: ud_verbs block identical to the original's"
    fi
fi

# ---- ucx_perftest client/server rows
SOFTRDMA_MATRIX=ud timeout -k 5 600 "$SR/rc-matrix.sh" "$OURS" "$OURS" > "$T_WORK/m-ours.txt" 2>&1
judge_matrix "$T_WORK/m-ours.txt" ud "ours<->ours"
if ref_has_verbs; then
    SOFTRDMA_MATRIX=ud timeout -k 5 600 "$SR/rc-matrix.sh" "$OURS" "" > "$T_WORK/m-os.txt" 2>&1
    judge_matrix "$T_WORK/m-os.txt" ud "server ours, client C"
    SOFTRDMA_MATRIX=ud timeout -k 5 600 "$SR/rc-matrix.sh" "" "$OURS" > "$T_WORK/m-so.txt" 2>&1
    judge_matrix "$T_WORK/m-so.txt" ud "server C, client ours"
fi
if [ "${UD_FULL:-0}" = 1 ]; then
    SOFTRDMA_UD_DROP=1 SOFTRDMA_UD_SEED=1 SOFTRDMA_ROW_TIMEOUT=300 SOFTRDMA_MATRIX=ud \
        timeout -k 5 1800 "$SR/rc-matrix.sh" "$OURS" "$OURS" > "$T_WORK/m-lossy.txt" 2>&1
    judge_matrix "$T_WORK/m-lossy.txt" ud "1 % loss ours<->ours"
fi

# ---- ucp_hello_world over ud_verbs
[ -f "$UCX_EXAMPLES/ucp_hello_world.c" ] || abort "ucp_hello_world.c" "not found in $UCX_EXAMPLES"
cp "$UCX_EXAMPLES/ucp_hello_world.c" "$UCX_EXAMPLES/hello_world_util.h" "$UCX_EXAMPLES/ucp_util.h" "$T_WORK/"
"$CC" -O2 "${UCX_CFLAGS[@]}" -o "$T_WORK/ucp_hello_world" "$T_WORK/ucp_hello_world.c" "${UCX_LDFLAGS[@]}" \
    -lucp -lucs -luct 2> "$T_WORK/cc.log" || abort "build ucp_hello_world" "$(head -n 3 "$T_WORK/cc.log")"
want=$(awk 'BEGIN { for (i = 0; i < 15; i++) printf "%c", 65 + i % 26 }')

hello_pair() { # SRV_LIB CLI_LIB TLS ARGS... -> 0 when both exit 0 and the client printed the string
    local s=$1 c=$2 tls=$3 port spid src crc
    shift 3
    port=$("$SOFTRDMA_BUILD/freeport")
    env $(lib_env "$s") UCX_TLS="$tls" timeout -k 5 60 "$SR/run.sh" "$T_WORK/ucp_hello_world" -p "$port" "$@" \
        > "$T_WORK/srv.out" 2>&1 < /dev/null &
    spid=$!
    for _ in $(seq 100); do
        grep -qi "$(printf ':%04X 00000000:0000 0A' "$port")" /proc/net/tcp 2>/dev/null && break
        sleep 0.1
    done
    env $(lib_env "$c") UCX_TLS="$tls" timeout -k 5 60 "$SR/run.sh" "$T_WORK/ucp_hello_world" -p "$port" \
        -n 127.0.0.1 "$@" > "$T_WORK/cli.out" 2>&1 < /dev/null
    crc=$?
    wait $spid
    src=$?
    [ $crc = 0 ] && [ $src = 0 ] && grep -q "^$want" "$T_WORK/cli.out"
}

for tls in ud_verbs rc_verbs,ud_verbs; do
    for args in "-s 16" "-s 200000"; do
        # shellcheck disable=SC2086 # word list
        set -- $args
        pairs=("ours ours")
        ref_has_verbs && pairs+=("ours C" "C ours")
        for p in "${pairs[@]}"; do
            read -r a b <<< "$p"
            la=$OURS lb=$OURS
            [ "$a" = C ] && la=
            [ "$b" = C ] && lb=
            name="ucp_hello_world UCX_TLS=$tls $args: server $a, client $b"
            if hello_pair "$la" "$lb" "$tls" "$@"; then
                if grep -hE 'UCX +(WARN|ERROR)' "$T_WORK/srv.out" "$T_WORK/cli.out" > "$T_WORK/warn.txt"; then
                    fail "$name" "warnings: $(head -n 2 "$T_WORK/warn.txt" | tr '\n' ' ')"
                else
                    pass "$name"
                fi
            else
                fail "$name" "$(tail -n 3 "$T_WORK/cli.out" "$T_WORK/srv.out" | tr '\n' ' ' | cut -c1-300)"
            fi
        done
    done
done
finish
