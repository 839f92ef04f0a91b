#!/usr/bin/env bash
# libucp's I/O demo (io_demo from ucx-utils) over LIBDIR: a server and a
# client on 127.0.0.1 that exchange random-sized read/write requests and
# data through UCP's sockaddr connections, with data checking on (-q: the
# demo aborts on the first corrupt byte).  It drives paths the simpler
# examples do not: active messages with reply endpoints (header, empty
# payload, user header and footer in one short-iov message), pre-registered
# zero-copy buffers, chunked transfers, several servers at once, and a
# client that dies in the middle of its traffic.
#
#   UCX_TLS   tcp, tcp,posix,self, tcp,sysv,cma,self
#   modes     tag read+write 1 B-300 KB; AM read+write 1 B-300 KB;
#             tag -z window 8 1 KB-1 MB; AM -z write 1 B-1 MB in 64 KB chunks
#   more      one client over two servers (AM); three clients at once
#             (AM; tag -z); a client killed with
#             SIGKILL in the middle of its traffic, then a second client on
#             the same server (tag and AM)
#
# A case passes as on the original: the (last) client exits 0 with
# "Client exit with status 'OK'", every server is still serving at the end
# and exits 0 on SIGINT.  Each case runs on the system library first;
# LIBDIR may print no UCX warning or error line the original does not.  In
# the killed-client cases the server's "unexpected tag-receive descriptor
# ... was not matched" warnings at exit are left out of that comparison:
# whether the dead client's last messages were already read when the demo
# cancelled its receives is a race the original shows too.
# Usage: tests/io-demo.sh [LIBDIR]   (or UCT_LIBDIR)
here=$(cd "$(dirname "$0")" && pwd)
. "$here/lib/ab-common.sh"

ab_begin "$@"
ITERS=${ITERS:-1000}
command -v stdbuf >/dev/null || abort "stdbuf" "not installed (coreutils)"
IO_DEMO=$(command -v io_demo) || abort "io_demo" "not installed (apt-get install ucx-utils)"
OURS=$UCT_LIBDIR

# stop_servers: SIGINT to every server still alive; R_SRV = "" if all were
# alive and exited 0, else what went wrong
stop_servers() {
    local i pid st
    R_SRV=
    for i in "${!S_PIDS[@]}"; do
        pid=${S_PIDS[$i]}
        if kill -0 "$pid" 2>/dev/null; then
            kill -INT "$pid" 2>/dev/null
            # it cleans up and exits; do not wait forever
            for _ in $(seq 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
            kill -0 "$pid" 2>/dev/null && { kill -9 "$pid" 2>/dev/null; R_SRV="server $i hung on SIGINT"; }
            wait "$pid" 2>/dev/null
            st=$?
            [ -z "$R_SRV" ] && [ "$st" != 0 ] && R_SRV="server $i exited $st on SIGINT"
        else
            wait "$pid" 2>/dev/null
            R_SRV="server $i ended during the run (status $?)"
        fi
    done
    T_CHILDREN=
}

# run_case LIB TLS NSERVERS KILL ARGS... -> R_OK, R_WHY, R_BAD
# (KILL=1: a first client is killed in the middle of its traffic)
run_case() {
    local lib=$1 tls=$2 nsrv=$3 kill=$4 i port pid addrs=() cpid cst
    shift 4
    S_PIDS=()
    R_OK=0 R_BAD=0 R_WHY=
    rm -f "$T_WORK"/srv*.out "$T_WORK/cli.st"
    local used=" "
    for i in $(seq "$nsrv"); do
        port=$(free_port)
        while [[ $used == *" $port "* ]]; do port=$(free_port); done
        used="$used$port "
        env $(lib_env "$lib") UCX_TLS="$tls" stdbuf -oL \
            "$IO_DEMO" -p "$port" "$@" >"$T_WORK/srv$i.out" 2>&1 </dev/null &
        pid=$!
        S_PIDS+=("$pid")
        T_CHILDREN="${S_PIDS[*]}"
        if ! wait_listening "$pid" "$port"; then
            R_WHY="server $i did not listen: $(grep -a -h -m 1 'ERROR\|Assert\|signal' "$T_WORK/srv$i.out")"
            grep -a -q 'Assert\|signal' "$T_WORK/srv$i.out" && R_BAD=1
            stop_servers
            return
        fi
        addrs+=("127.0.0.1:$port")
    done
    if [ "$kill" = 1 ]; then
        env $(lib_env "$lib") UCX_TLS="$tls" "$IO_DEMO" "$@" -i 100000000 "${addrs[@]}" \
            >"$T_WORK/cli0.out" 2>&1 </dev/null &
        cpid=$!
        # let it connect and run for a while, then kill it mid-traffic
        for _ in $(seq 100); do
            grep -s -a -q 'Connected to server' "$T_WORK/cli0.out" && break
            sleep 0.1
        done
        sleep 1
        kill -9 "$cpid" 2>/dev/null
        wait "$cpid" 2>/dev/null
        # the server notices the dead client before the next one comes
        for _ in $(seq 100); do
            grep -a -q 'detected error' "$T_WORK/srv1.out" && break
            sleep 0.1
        done
    fi
    # CLIENTS=N: that many clients at once (their outputs: cli.out, cli2.out, ...)
    local k cpids=() out st
    rm -f "$T_WORK"/cli*.out "$T_WORK"/cli*.st
    for k in $(seq "${CLIENTS:-1}"); do
        out=cli; [ "$k" -gt 1 ] && out=cli$k
        env $(lib_env "$lib") UCX_TLS="$tls" "$RUN_WATCH" "$PAIR_TIMEOUT" "$T_WORK/$out.st" \
            "$IO_DEMO" "$@" -i "$ITERS" "${addrs[@]}" >"$T_WORK/$out.out" 2>&1 </dev/null &
        cpids+=($!)
    done
    T_CHILDREN="${S_PIDS[*]} ${cpids[*]}"
    wait "${cpids[@]}"
    cst="exit 0"
    local not_ok=
    for k in $(seq "${CLIENTS:-1}"); do
        out=cli; [ "$k" -gt 1 ] && out=cli$k
        st=$(status_of "$T_WORK/$out.st")
        if [ "$st" != "exit 0" ] && [ "$cst" = "exit 0" ]; then
            cst=$st
            cp "$T_WORK/$out.out" "$T_WORK/first-failed.out"
        fi
        grep -a -q "Client exit with status 'OK'" "$T_WORK/$out.out" || not_ok="$not_ok $out"
    done
    stop_servers
    if [ "$cst" != "exit 0" ]; then
        R_WHY="client $cst: $(grep -a -h -m 1 'Assert\|ERROR\|error\|failed' "$T_WORK/first-failed.out" | head -n 1)"
        case $cst in "exit "*) ;; *) R_BAD=1 ;; esac
    elif [ -n "$not_ok" ]; then
        R_WHY="client(s)$not_ok did not report status OK: $(tail -n 1 "$T_WORK/cli.out")"
    elif [ -n "$R_SRV" ]; then
        R_WHY="$R_SRV: $(grep -a -h -m 1 'Assert\|ERROR\|signal' "$T_WORK"/srv*.out | head -n 1)"
        R_BAD=1
    else
        R_OK=1
    fi
}

# lines_of KILL OUT: the UCX lines of the run (see the header for KILL)
lines_of() {
    if [ "$1" = 1 ]; then
        ucx_lines "$T_WORK"/srv*.out "$T_WORK"/cli*.out | grep -v 'unexpected tag-receive descriptor .* was not matched'
    else
        ucx_lines "$T_WORK"/srv*.out "$T_WORK"/cli*.out
    fi >"$2"
    return 0
}

# ab NAME TLS NSERVERS KILL ARGS...
ab() {
    local name=$1 tls=$2 nsrv=$3 kill=$4 sys_ok sys_why sys_bad
    shift 4
    run_case "" "$tls" "$nsrv" "$kill" "$@"
    sys_ok=$R_OK sys_why=$R_WHY sys_bad=$R_BAD
    lines_of "$kill" "$T_WORK/lines.sys"
    if [ -z "$OURS" ]; then
        if [ "$sys_ok" = 1 ]; then pass "$name (system)"; else fail "$name (system)" "$sys_why"; fi
        return
    fi
    run_case "$OURS" "$tls" "$nsrv" "$kill" "$@"
    lines_of "$kill" "$T_WORK/lines.ours"
    SYS_BAD=$sys_bad ab_verdict "$name" "$sys_ok" "$sys_why" "" "$T_WORK/cli.out" "$T_WORK"/srv*.out
}

modes=(
    "-q -o read,write -d 1:300000"
    "-q -A -o read,write -d 1:300000"
    "-q -z -o read,write -d 1000:1000000 -w 8"
    "-q -A -z -o write -d 1:1000000 -k 65536"
)
for tls in tcp tcp,posix,self tcp,sysv,cma,self; do
    for m in "${modes[@]}"; do
        # shellcheck disable=SC2086 # the mode is a list of options
        ab "io_demo UCX_TLS=$tls $m" "$tls" 1 0 $m
    done
done
ab "io_demo UCX_TLS=tcp,posix,self -q -A, one client over two servers" tcp,posix,self 2 0 \
    -q -A -o read,write -d 1:300000
CLIENTS=3 ab "io_demo UCX_TLS=tcp,posix,self -q -A, three clients at once" tcp,posix,self 1 0 \
    -q -A -o read,write -d 1:200000
CLIENTS=3 ab "io_demo UCX_TLS=tcp,sysv,cma,self -q -z -w 8, three clients at once" tcp,sysv,cma,self 1 0 \
    -q -z -o read,write -d 1000:1000000 -w 8
for tls in tcp tcp,posix,self; do
    ab "io_demo UCX_TLS=$tls -q, first client killed mid-traffic" "$tls" 1 1 -q -o read,write -d 1:100000
    ab "io_demo UCX_TLS=$tls -q -A, first client killed mid-traffic" "$tls" 1 1 -q -A -o read,write -d 1:100000
done

shm_check "no /dev/shm file or SysV segment left over" "$T_WORK/shm.before"
finish
