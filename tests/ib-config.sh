#!/usr/bin/env bash
# The configuration of the ib family (UCX_IB_* of the md, UCX_RC_VERBS_* of
# rc_verbs, UCX_UD_VERBS_* of ud_verbs) on LIBDIR's libuct.so.0 against the
# C original:
#  - "ucx_info -c": the UCX_IB_*, UCX_RC_VERBS_* and UCX_UD_VERBS_* lines identical (names,
#    order, default values);
#  - "ucx_info -cf": for those keys, the key, syntax and inherits lines
#    identical (the help texts are our own words and are not compared);
#  - the order of the tables we serve (ib's between posix and cma);
#  - settings given as UCX_RC_VERBS_X, UCX_RC_X or UCX_IB_X (the nesting of
#    the rc_verbs table), alone or together, and bad values: the same lines
#    and messages as the original.
# The C original prints the UCX_RC_MLX5_*, UCX_DC_MLX5_*,
# UCX_UD_MLX5_* and UCX_RDMA_CM_* tables too (and from 1.22 those of the
# srd, gga and gga_mlx5 modules), which this library does not serve; they
# are left out.  A reference without the verbs module (a PyPI
# wheel) has no lines to compare: then our lines are compared with the ones
# recorded from that release's C original built with verbs
# (tests/softrdma/expected/ucx_info-c.ib.c-RELEASE.txt: 1.22.0), or, for
# 1.18-1.21, only our keys (and the defaults of the keys 1.19-1.21 add or
# change) are checked against the ones their sources define.
# Usage: tests/ib-config.sh [LIBDIR]   (or UCT_LIBDIR; empty = system library)
here=$(cd "$(dirname "$0")" && pwd)
. "$here/lib/common.sh"

resolve_libdir "$@"
need_ib_lib "$UCT_LIBDIR"
need_ucx_info
make_workdir

KEYS='^UCX_(IB|RC_VERBS|UD_VERBS)_'

# ib_lines OUT PREFIX-CMD... : the ib family's lines of "ucx_info -c"
ib_lines() {
    local out=$1
    shift
    env "$@" timeout 60 ucx_info -c >"$out.all" 2>"$out.err"
    echo $? >"$out.rc"
    grep -E "$KEYS" "$out.all" >"$out"
}

# cf_lines: the key, "syntax:" and "inherits:" lines of each ib key of
# "ucx_info -cf" (stdin), the help text left out.
cf_lines() {
    awk -v keys="$KEYS" '
        /^# syntax:/   { syn = $0; next }
        /^# inherits:/ { inh = $0; next }
        $0 ~ keys      { print; if (syn != "") print "  " syn; if (inh != "") print "  " inh }
        /^UCX_/ || /^$/ { syn = ""; inh = "" }'
}

# The tables we serve, in the order "ucx_info -cf" lists them (names
# compared without case: some of this library's table titles differ in
# case only, which is not this suite's business).
served_tables() {
    grep -E '^# .* configuration$' | sed 's/^# //; s/ configuration$//' | tr 'A-Z' 'a-z' |
        grep -vE '^(ucs|ucm|ucp|dc_mlx5|rc_mlx5|ud_mlx5|rdma-cm|posix_get|srd|gga|gga_mlx5)( |$)'
}

ib_lines "$T_WORK/sys" "${SYS_RUN[@]}"
ib_lines "$T_WORK/ours" "${RUN[@]}"

if [ "$(cat "$T_WORK/ours.rc")" != 0 ]; then
    abort "ucx_info -c" "exit status $(cat "$T_WORK/ours.rc")"
fi

recorded=$here/softrdma/expected/ucx_info-c.ib.c-$UCX_RELEASE.txt
if ! grep -q '^UCX_RC_VERBS_' "$T_WORK/sys" && [ -f "$recorded" ]; then
    echo "# the original prints no UCX_RC_VERBS_* (no verbs module): comparing with $(basename "$recorded")"
    if diff -u "$recorded" "$T_WORK/ours" >"$T_WORK/c.diff"; then
        pass "ucx_info -c: $(wc -l <"$recorded") UCX_IB_*/UCX_RC_VERBS_*/UCX_UD_VERBS_* lines identical to the recorded original's"
    else
        sed 's/^/      /' "$T_WORK/c.diff" | head -n 40
        fail "ucx_info -c: UCX_IB_*/UCX_RC_VERBS_*/UCX_UD_VERBS_* lines identical to the recorded original's"
    fi
    finish
fi
if ! grep -q '^UCX_RC_VERBS_' "$T_WORK/sys"; then
    # No reference lines: the keys of UCX 1.18.1's tables, from its sources.
    echo "# the original prints no UCX_RC_VERBS_* (no verbs module): checking our key list only"
    case $UCX_ABI in
        1.18|1.19|1.20|1.21) want_md="MEM_REG_OVERHEAD MEM_REG_GROWTH FORK_INIT ASYNC_EVENTS ETH_PAUSE_ON ODP_PREFETCH
                       DEVICE_SPECS PREFER_NEAREST_DEVICE INDIRECT_ATOMIC GID_INDEX SUBNET_PREFIX
                       GPU_DIRECT_RDMA PCI_BW MLX5_DV MLX5_DEVX MLX5_DEVX_OBJECTS REG_MT_THRESH REG_MT_CHUNK
                       REG_MT_BIND PCI_RELAXED_ORDERING MAX_IDLE_RKEY_COUNT REG_RETRY_CNT SMKEY_BLOCK_SIZE
                       XGVMI_UMR_ENABLE ODP_MEM_TYPES"
              want_tl="ALLOC FAILURE MAX_NUM_EPS SEG_SIZE TX_QUEUE_LEN TX_MAX_BATCH TX_MAX_POLL TX_MIN_INLINE
                       TX_INLINE_RESP TX_MIN_SGE TX_MAX_BUFS TX_BUFS_GROW TX_MAX_CHUNK_SIZE TX_GROW_FACTOR
                       RX_QUEUE_LEN RX_MAX_BATCH RX_MAX_POLL RX_INLINE RX_MAX_BUFS RX_BUFS_GROW
                       RX_MAX_CHUNK_SIZE RX_GROW_FACTOR ADDR_TYPE IS_GLOBAL FLID_ROUTE SL TRAFFIC_CLASS
                       HOP_LIMIT NUM_PATHS ROCE_LOCAL_SUBNET ROCE_SUBNET_PREFIX_LEN ROCE_SUBNETS
                       ROCE_PATH_FACTOR LID_PATH_BITS PKEY PATH_MTU COUNTER_SET_ID REVERSE_SL SEND_OVERHEAD
                       MAX_RD_ATOMIC TIMEOUT RETRY_COUNT RNR_TIMEOUT RNR_RETRY_COUNT FC_ENABLE FC_WND_SIZE
                       FC_HARD_THRESH FENCE MAX_GET_ZCOPY TX_NUM_GET_BYTES TX_POLL_ALWAYS ECE FC_SOFT_THRESH
                       TX_CQ_MODERATION TX_CQ_LEN MAX_AM_HDR TX_MAX_WR FLUSH_MODE"
              want_ud="ALLOC FAILURE MAX_NUM_EPS SEG_SIZE TX_QUEUE_LEN TX_MAX_BATCH TX_MAX_POLL TX_MIN_INLINE
                       TX_INLINE_RESP TX_MIN_SGE TX_MAX_BUFS TX_BUFS_GROW TX_MAX_CHUNK_SIZE TX_GROW_FACTOR
                       RX_QUEUE_LEN RX_MAX_BATCH RX_MAX_POLL RX_INLINE RX_MAX_BUFS RX_BUFS_GROW
                       RX_MAX_CHUNK_SIZE RX_GROW_FACTOR ADDR_TYPE IS_GLOBAL FLID_ROUTE SL TRAFFIC_CLASS
                       HOP_LIMIT NUM_PATHS ROCE_LOCAL_SUBNET ROCE_SUBNET_PREFIX_LEN ROCE_SUBNETS
                       ROCE_PATH_FACTOR LID_PATH_BITS PKEY PATH_MTU COUNTER_SET_ID REVERSE_SL SEND_OVERHEAD
                       RX_QUEUE_LEN_INIT LINGER_TIMEOUT TIMEOUT TIMER_TICK TIMER_BACKOFF ASYNC_TIMER_TICK
                       MIN_POKE_TIME ETH_DGID_CHECK MAX_WINDOW RX_ASYNC_MAX_POLL" ;;
        *) skip_suite "UCX $UCX_ABI: the original has no verbs module and no key list is known" ;;
    esac
    # what 1.19-1.21 change in those lists (from their sources), and the
    # defaults of the keys they add or change: KEY=VALUE lines of ours
    minor=${UCX_ABI#1.}
    want_values="UCX_RC_VERBS_ECE=0"
    if [ "$minor" -ge 19 ]; then
        want_tl=${want_tl/ROCE_SUBNETS/ROCE_SUBNETS ROCE_REACHABILITY_MODE}
        want_ud=${want_ud/ROCE_SUBNETS/ROCE_SUBNETS ROCE_REACHABILITY_MODE}
        want_values+=" UCX_RC_VERBS_ROCE_REACHABILITY_MODE=route UCX_UD_VERBS_ROCE_REACHABILITY_MODE=route"
    fi
    if [ "$minor" -ge 20 ]; then
        want_md="${want_md/GPU_DIRECT_RDMA/GPU_DIRECT_RDMA GDA_MAX_SYS_LATENCY} DIRECT_NIC"
        want_values+=" UCX_IB_DIRECT_NIC=y"
    fi
    if [ "$minor" = 20 ]; then
        want_values+=" UCX_IB_GDA_MAX_SYS_LATENCY=0.30us"
    fi
    if [ "$minor" -ge 21 ]; then
        want_md=${want_md/GDA_MAX_SYS_LATENCY/GDA_MAX_HCA_PER_GPU GDA_DMABUF_ENABLE GDA_RETAIN_INACTIVE_CTX}
        want_values+=" UCX_IB_GDA_MAX_HCA_PER_GPU=1 UCX_IB_GDA_DMABUF_ENABLE=try UCX_IB_GDA_RETAIN_INACTIVE_CTX=n"
    fi
    for line in $want_values; do
        if grep -qx "$line" "$T_WORK/ours"; then
            pass "ucx_info -c: $line (UCX $UCX_RELEASE's sources)"
        else
            fail "ucx_info -c: $line (UCX $UCX_RELEASE's sources)" "$(grep "^${line%%=*}=" "$T_WORK/ours")"
        fi
    done
    # shellcheck disable=SC2086 # word lists
    { printf 'UCX_IB_%s\n' $want_md; printf 'UCX_RC_VERBS_%s\n' $want_tl; printf 'UCX_UD_VERBS_%s\n' $want_ud; } \
        >"$T_WORK/want.keys"
    cut -d= -f1 "$T_WORK/ours" >"$T_WORK/ours.keys"
    if diff -u "$T_WORK/want.keys" "$T_WORK/ours.keys" >"$T_WORK/keys.diff"; then
        pass "ucx_info -c: the $(wc -l <"$T_WORK/want.keys") UCX_IB_*/UCX_RC_VERBS_*/UCX_UD_VERBS_* keys of UCX $UCX_RELEASE"
    else
        sed 's/^/      /' "$T_WORK/keys.diff" | head -n 40
        fail "ucx_info -c: the UCX_IB_*/UCX_RC_VERBS_*/UCX_UD_VERBS_* keys of UCX $UCX_RELEASE"
    fi
    for v in UCX_RC_VERBS_TX_QUEUE_LEN UCX_RC_TX_QUEUE_LEN UCX_IB_TX_QUEUE_LEN; do
        ib_lines "$T_WORK/set" "${RUN[@]}" "$v=128"
        if grep -qx 'UCX_RC_VERBS_TX_QUEUE_LEN=128' "$T_WORK/set"; then
            pass "$v=128 sets UCX_RC_VERBS_TX_QUEUE_LEN"
        else
            fail "$v=128 sets UCX_RC_VERBS_TX_QUEUE_LEN" "$(grep TX_QUEUE_LEN "$T_WORK/set")"
        fi
    done
    finish
fi

n=$(wc -l <"$T_WORK/sys")
if diff -u "$T_WORK/sys" "$T_WORK/ours" >"$T_WORK/c.diff"; then
    pass "ucx_info -c: $n UCX_IB_*/UCX_RC_VERBS_*/UCX_UD_VERBS_* lines identical to the original's"
else
    sed 's/^/      /' "$T_WORK/c.diff" | head -n 40
    fail "ucx_info -c: UCX_IB_*/UCX_RC_VERBS_*/UCX_UD_VERBS_* lines identical to the original's"
fi

"${SYS_RUN[@]}" timeout 60 ucx_info -cf >"$T_WORK/sys.cf" 2>&1
"${RUN[@]}" timeout 60 ucx_info -cf >"$T_WORK/ours.cf" 2>&1
cf_lines <"$T_WORK/sys.cf" >"$T_WORK/sys.cfk"
cf_lines <"$T_WORK/ours.cf" >"$T_WORK/ours.cfk"
if [ ! -s "$T_WORK/sys.cfk" ]; then
    fail "ucx_info -cf" "the original printed no UCX_IB_*/UCX_RC_VERBS_*/UCX_UD_VERBS_* keys"
elif diff -u "$T_WORK/sys.cfk" "$T_WORK/ours.cfk" >"$T_WORK/cf.diff"; then
    pass "ucx_info -cf: key, syntax and inherits lines identical ($(wc -l <"$T_WORK/sys.cfk") lines)"
else
    sed 's/^/      /' "$T_WORK/cf.diff" | head -n 40
    fail "ucx_info -cf: key, syntax and inherits lines identical"
fi

served_tables <"$T_WORK/sys.cf" >"$T_WORK/sys.tables"
served_tables <"$T_WORK/ours.cf" >"$T_WORK/ours.tables"
if diff -u "$T_WORK/sys.tables" "$T_WORK/ours.tables" >"$T_WORK/tables.diff"; then
    pass "ucx_info -cf: served tables in the original's order ($(tr '\n' ',' <"$T_WORK/sys.tables" | sed 's/,$//'))"
else
    sed 's/^/      /' "$T_WORK/tables.diff"
    fail "ucx_info -cf: served tables in the original's order"
fi

# Settings, under each spelling the nesting allows, alone and together
# (the more specific one wins), and bad values (the table is not printed).
# Each case: the ib lines, the exit status and stderr, as the original's.
# check_env DESCRIPTION KEY VAR=VALUE...: KEY is the UCX_RC_VERBS_ key shown.
check_env() {
    local what=$1 key=$2
    shift 2
    ib_lines "$T_WORK/e.sys" "${SYS_RUN[@]}" "$@"
    ib_lines "$T_WORK/e.ours" "${RUN[@]}" "$@"
    local shown
    shown=$(grep -E "^UCX_RC_VERBS_${key}=" "$T_WORK/e.ours" | head -n 1)
    if [ "$(cat "$T_WORK/e.sys.rc")" != "$(cat "$T_WORK/e.ours.rc")" ]; then
        fail "$what: $*" "exit status $(cat "$T_WORK/e.ours.rc"), the original's $(cat "$T_WORK/e.sys.rc")"
    elif ! diff -u "$T_WORK/e.sys" "$T_WORK/e.ours" >"$T_WORK/e.diff"; then
        sed 's/^/      /' "$T_WORK/e.diff" | head -n 20
        fail "$what: $*" "ucx_info -c lines differ"
    elif ! diff -u "$T_WORK/e.sys.err" "$T_WORK/e.ours.err" >"$T_WORK/e.diff"; then
        sed 's/^/      /' "$T_WORK/e.diff" | head -n 20
        fail "$what: $*" "messages differ"
    else
        pass "$what: $* as the original (${shown:-rc_verbs table not printed})"
    fi
}

for v in UCX_RC_VERBS_TX_QUEUE_LEN UCX_RC_TX_QUEUE_LEN UCX_IB_TX_QUEUE_LEN; do
    check_env "accepted" TX_QUEUE_LEN "$v=128"
    check_env "rejected" TX_QUEUE_LEN "$v=abc"
done
check_env "most specific wins" TX_QUEUE_LEN UCX_IB_TX_QUEUE_LEN=64 UCX_RC_TX_QUEUE_LEN=96 UCX_RC_VERBS_TX_QUEUE_LEN=128
check_env "most specific wins" TX_QUEUE_LEN UCX_IB_TX_QUEUE_LEN=64 UCX_RC_TX_QUEUE_LEN=96
check_env "accepted" SEG_SIZE UCX_IB_SEG_SIZE=4k
check_env "accepted" MAX_NUM_EPS UCX_RC_MAX_NUM_EPS=inf
check_env "accepted" PATH_MTU UCX_RC_VERBS_PATH_MTU=2048
check_env "rejected" PATH_MTU UCX_IB_PATH_MTU=3000
check_env "accepted" TIMEOUT UCX_RC_TIMEOUT=10ms
check_env "accepted" FENCE UCX_RC_VERBS_FENCE=none
check_env "rejected" FLUSH_MODE UCX_RC_VERBS_FLUSH_MODE=later
check_env "accepted" PKEY UCX_IB_PKEY=0x7fff
check_env "accepted" ALLOC UCX_RC_VERBS_ALLOC=mmap,heap
check_env "accepted (md)" TX_QUEUE_LEN UCX_IB_REG_METHODS=direct UCX_IB_RCACHE_MAX_REGIONS=1000 \
    UCX_IB_MLX5_DEVX_OBJECTS=dct
check_env "rejected (md)" TX_QUEUE_LEN UCX_IB_MLX5_DEVX_OBJECTS=nothing
check_env "accepted (md)" TX_QUEUE_LEN UCX_IB_PCI_BW=mlx5_0:10Gbs UCX_IB_PCI_RELAXED_ORDERING=on
# keys of later releases (1.19-1.22; unknown to both sides on an older one)
check_env "later keys (md)" TX_QUEUE_LEN UCX_IB_MLX5_DEVX_OBJECTS=auto,dci UCX_IB_GDA_MAX_HCA_PER_GPU=2 \
    UCX_IB_GDA_DMABUF_ENABLE=no UCX_IB_GDA_RETAIN_INACTIVE_CTX=y UCX_IB_DIRECT_NIC=n
check_env "later keys (md), bad value" TX_QUEUE_LEN UCX_IB_GDA_MAX_HCA_PER_GPU=many
check_env "later keys" ROCE_REACHABILITY_MODE UCX_IB_ROCE_REACHABILITY_MODE=local_subnet
check_env "later keys" ROCE_REACHABILITY_MODE UCX_RC_ROCE_REACHABILITY_MODE=all
check_env "later keys, bad value" ROCE_REACHABILITY_MODE UCX_RC_VERBS_ROCE_REACHABILITY_MODE=nearby
check_env "later keys" ECE UCX_RC_VERBS_ECE=inf

finish
