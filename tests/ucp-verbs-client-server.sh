#!/usr/bin/env bash
# libucp's sockaddr API over the verbs transports: Debian's
# ucp_client_server example (built unchanged from libucx-dev), server and
# client on 127.0.0.1, each with the soft RDMA device (tests/softrdma/run.sh)
# and LD_LIBRARY_PATH at LIBDIR.  The connection is made by the tcp
# connection manager (the device has no rdmacm), so tcp is added to each TLS
# set; the data lanes are the verbs ones (compared with the original's
# from the info log: ep_cfg lines).
#
#   UCX_TLS   rc_verbs,ud_verbs,tcp; ud_verbs,tcp; rc_verbs,ud_verbs,posix,self,tcp
#   API       stream, tag;  -s 16 and -s 300000 (rendezvous);  -i 3
#   tiers     CI: stream -s 16 and tag over rc_verbs,ud_verbs,tcp, two over
#             each other set; UCT_RS_TIER=full: all twelve (stream -s 300000
#             races in the example itself, below: full tier only)
#   refused   UCX_TLS=ud_verbs (no tcp: no connection manager; the
#             original's client exits 255): LIBDIR must fail cleanly too
#
# A case passes as on the original: the client exits 0, and the server
# printed "UCX data message was received" with the exact string the client
# generated as many times as on the original.  A lost last message (the
# example's client force-closes its endpoint right after its last send,
# see tests/ucp-client-server.sh; a stream send is complete once sent, so
# with -s 300000 the server may still be receiving, and then ends on a
# reset or waits for data that never comes, on the original too) is retried
# up to four times (tests/lib/ucp-verbs.sh, ucpv_cs_final); a crash or a
# hang never is.  Each case runs on the original first; LIBDIR may print no UCX
# warning or error line the original does not.
# Usage: tests/ucp-verbs-client-server.sh [LIBDIR]   (or UCT_LIBDIR)
here=$(cd "$(dirname "$0")" && pwd)
. "$here/lib/ucp-verbs.sh"
. "$here/lib/client-server.sh"

ucpv_begin "$@"
cs_build
UCPV_ENV=(UCX_LOG_LEVEL=info)

# run_case LIB TLS API SIZE -> R_OK, R_WHY, R_BAD, R_GOT, R_SEC
run_case() {
    local lib=$1 tls=$2 api=$3 size=$4 port cst t0
    port=$(free_port)
    rm -f "$T_WORK/cli.st" "$T_WORK/srv.st"
    R_OK=0 R_BAD=0 R_WHY= R_GOT=0
    t0=$(date +%s%N)
    # line-buffered: the server is stopped by a signal at the end
    cs_start_server "$port" ucpv_side "$lib" "$tls" "$T_WORK/srv.st" stdbuf -oL \
        "$CS" -p "$port" -c "$api" -s "$size" -i "$ITERS" || return
    ucpv_side "$lib" "$tls" "$T_WORK/cli.st" \
        "$CS" -a 127.0.0.1 -p "$port" -c "$api" -s "$size" -i "$ITERS" >"$T_WORK/cli.out" 2>&1 </dev/null
    cst=$(status_of "$T_WORK/cli.st")
    ucpv_cs_server_end
    R_SEC=$(awk -v a="$t0" -v b="$(date +%s%N)" 'BEGIN { printf "%.1f", (b - a) / 1e9 }')
    cs_judge "$cst" "$(ucpv_string_count "$size" "$T_WORK/srv.out" .)" "$SRV_GONE"
}

# what cs_tries tries again: tests/lib/ucp-verbs.sh (ucpv_cs_final)
cs_final() { ucpv_cs_final; }
CS_TRIES=5

# ab NAME TLS API SIZE
ab() {
    local name=$1 tls=$2 api=$3 size=$4 sys_ok sys_why sys_bad sys_got sys_sec
    cs_tries "" "$tls" "$api" "$size"
    sys_ok=$R_OK sys_why=$R_WHY sys_bad=$R_BAD sys_got=$R_GOT sys_sec=$R_SEC
    ucx_lines "$T_WORK/srv.out" "$T_WORK/cli.out" >"$T_WORK/lines.sys"
    ucpv_lanes "$T_WORK/srv.out" "$T_WORK/cli.out" >"$T_WORK/lanes.sys"
    if [ -z "$OURS" ]; then
        ucpv_system_only "$name" "$sys_ok" "$sys_why" \
            "$sys_sec s, $sys_got messages, lanes: $(grep -o 'tag(.*\|stream(.*' "$T_WORK/lanes.sys" | sort -u | tr '\n' ' ')" "$sys_bad"
        return
    fi
    cs_tries "$OURS" "$tls" "$api" "$size"
    ucx_lines "$T_WORK/srv.out" "$T_WORK/cli.out" >"$T_WORK/lines.ours"
    ucpv_lanes "$T_WORK/srv.out" "$T_WORK/cli.out" >"$T_WORK/lanes.ours"
    if [ "$R_OK" = 1 ] && ! diff "$T_WORK/lanes.sys" "$T_WORK/lanes.ours" >"$T_WORK/lanes.diff"; then
        R_OK=0 R_WHY="the lanes differ from the original's: $(head -n 4 "$T_WORK/lanes.diff" | tr '\n' ' ')"
    fi
    if [ "$R_OK" = 1 ] && [ "$R_GOT" != "$sys_got" ]; then
        R_OK=0 R_WHY="the server got $R_GOT messages, on the original $sys_got"
    fi
    SYS_BAD=$sys_bad ab_verdict "$name" "$sys_ok" "$sys_why" \
        "$R_SEC s, original $sys_sec s; $R_GOT messages; $(grep -c . "$T_WORK/lanes.sys") ep configs as the original's" \
        "$T_WORK/srv.out" "$T_WORK/cli.out"
}

# the CI tier: every case but stream -s 300000 over rc_verbs,ud_verbs; over
# the other two sets stream -s 16 and tag -s 300000 (ud_verbs), tag (with
# posix and self)
ci_case() {
    case $1:$2:$3 in
        *:stream:300000) return 1 ;;
        rc_verbs,ud_verbs:*) return 0 ;;
        ud_verbs:stream:16 | ud_verbs:tag:300000) return 0 ;;
        *posix*:tag:*) return 0 ;;
    esac
    return 1
}
for set in $UCPV_SETS; do
    tls=$set,tcp
    for api in stream tag; do
        for size in 16 300000; do
            full_tier || ci_case "$set" "$api" "$size" || continue
            ab "ucp_client_server UCX_TLS=$tls -c $api -s $size" "$tls" "$api" "$size"
        done
    done
done
ab "ucp_client_server UCX_TLS=ud_verbs (no connection manager) -c tag -s 16" ud_verbs tag 16

ucpv_end
