#!/usr/bin/env bash
# Memory errors under the real clients: server and client under valgrind's
# memcheck, LD_LIBRARY_PATH at LIBDIR, over every transport and the main
# data paths (the unsafe code of this library: shared-memory FIFOs and
# segments, process_vm_* transfers, socket buffers, iov handling, the
# libucs structures it touches).
#
#   uct_hello_world   posix -z, sysv -b, tcp -z (-b where the tcp md
#                     registers nothing, from UCX 1.19)
#   ucx_perftest      am_bw posix zcopy, am_lat sysv bcopy, put_bw cma
#                     zcopy, am_bw tcp zcopy, put_bw tcp zcopy; UCP stream_bw
#                     over tcp
#   ucp_hello_world   tcp; sysv,cma -s 200000 (rendezvous)
#   io_demo           -A (active messages, replies) over tcp,posix,self
#
# A case passes when both processes exit 0 and valgrind reports no error
# in either (no "==PID== " line other than valgrind's own WARNING notes, no
# exit status 99, valgrind's error exit code here), memory leaks that are
# "definitely lost" included.  Short runs: valgrind is 20-50 times slower.
# Without valgrind (apt-get install valgrind) the test says so and fails:
# scripts/setup-deps.sh installs it.
# Usage: tests/memcheck.sh [LIBDIR]   (or UCT_LIBDIR)
here=$(cd "$(dirname "$0")" && pwd)
# valgrind is slow: a longer limit per process than the helpers' 60 s
: "${PAIR_TIMEOUT:=240}"
. "$here/lib/ab-common.sh"

ab_begin "$@"
command -v valgrind >/dev/null || abort "valgrind" "not installed (apt-get install valgrind)"
need_perftest
need_hello
build_ucp_example ucp_hello_world
IO_DEMO=$(command -v io_demo) || abort "io_demo" "not installed (apt-get install ucx-utils)"
VG=(valgrind -q --error-exitcode=99 --leak-check=full --show-leak-kinds=definite --errors-for-leak-kinds=definite)
# UCX 1.18.1's own code, whatever libuct is under it (seen with its C libuct
# as LIBDIR): its ucp_hello_world example leaks a buffer its main()
# allocates, and libucp's multi-fragment AM send and its pending queue
# (ucp_request_pending_add, when a send answers NO_RESOURCE, also through
# its inlined ucp_ep_get_lane as valgrind reports it) test and use, as an
# index, values valgrind takes for uninitialised (the wheel has no valgrind
# annotations).
# ucx_perftest's own code, whatever libuct is under it: in the UCP tests it
# sends its peer a structure with uninitialised padding over its control
# socket (every frame of the report is in ucx_perftest).
cat >"$T_WORK/perftest.supp" <<'SUPP'
{
   reference-perftest-control-padding
   Memcheck:Param
   socketcall.sendto(msg)
   ...
   obj:*/ucx_perftest
}
SUPP
VG+=(--suppressions="$T_WORK/perftest.supp")
if [ "$UCX_ABI" != 1.13 ]; then
    cat >"$T_WORK/ucx-$UCX_ABI.supp" <<'SUPP'
{
   reference-example-main-leak
   Memcheck:Leak
   match-leak-kinds: definite
   fun:malloc
   fun:main
}
{
   reference-libucp-proto-multi-no-resource
   Memcheck:Cond
   fun:ucp_proto_multi_no_resource
}
{
   reference-libucp-pending-add-lane
   Memcheck:Cond
   fun:ucp_request_pending_add
}
{
   reference-libucp-pending-add-lane-inlined
   Memcheck:Cond
   fun:ucp_ep_get_lane
   fun:ucp_request_pending_add
}
{
   reference-libucp-pending-add-lane-value
   Memcheck:Value8
   fun:ucp_request_pending_add
}
{
   reference-libucp-pending-add-lane-inlined-value
   Memcheck:Value8
   fun:ucp_ep_get_lane
   fun:ucp_request_pending_add
}
SUPP
    VG+=(--suppressions="$T_WORK/ucx-$UCX_ABI.supp")
fi

# pair NAME TLS -- SERVER... -- CLIENT_EXTRA...: the server command gets
# "-p PORT"; the client is the same command plus CLIENT_EXTRA (and -p PORT).
# STOP=1: the server serves until stopped with SIGINT (io_demo);
# OURS_ONLY=1: a path only this library has (posix zero-copy), not run when
# the library under test is the system one.
pair() {
    local name=$1 tls=$2 port spid srv=() cli=() st_s st_c errs
    shift 3
    if [ "${OURS_ONLY:-0}" = 1 ] && testing_original; then
        pass "$name (not run on the system library: it has no zero-copy on posix)"
        return
    fi
    while [ "$1" != -- ]; do srv+=("$1"); shift; done
    shift
    cli=("${srv[@]}" "$@")
    port=$(free_port)
    rm -f "$T_WORK/srv.st" "$T_WORK/cli.st"
    env $(lib_env "$UCT_LIBDIR") UCX_TLS="$tls" "$RUN_WATCH" "$PAIR_TIMEOUT" "$T_WORK/srv.st" \
        "${VG[@]}" "${srv[@]}" -p "$port" >"$T_WORK/srv.out" 2>&1 </dev/null &
    spid=$!
    T_CHILDREN=$spid
    if ! wait_listening "$spid" "$port"; then
        wait "$spid"
        T_CHILDREN=
        fail "$name" "the server did not listen: $(tail -n 2 "$T_WORK/srv.out" | tr '\n' ' ')"
        return
    fi
    env $(lib_env "$UCT_LIBDIR") UCX_TLS="$tls" "$RUN_WATCH" "$PAIR_TIMEOUT" "$T_WORK/cli.st" \
        "${VG[@]}" "${cli[@]}" -p "$port" >"$T_WORK/cli.out" 2>&1 </dev/null
    if [ "${STOP:-0}" = 1 ]; then
        # SIGINT to the server itself (run_watch would answer it with SIGKILL)
        local child
        child=$(pgrep -P "$spid" | head -n 1)
        [ -n "$child" ] && kill -INT "$child" 2>/dev/null
    fi
    wait "$spid"
    T_CHILDREN=
    st_s=$(status_of "$T_WORK/srv.st")
    st_c=$(status_of "$T_WORK/cli.st")
    # valgrind's own notes ("WARNING: valgrind ignores ...") are no errors
    errs=$(grep -h '^==[0-9]*== ' "$T_WORK/srv.out" "$T_WORK/cli.out" | grep -v '== WARNING: ' | head -n 12)
    if [ -n "$errs" ] || [ "$st_s" = "exit 99" ] || [ "$st_c" = "exit 99" ]; then
        fail "$name" "valgrind reports (server $st_s, client $st_c):"
        printf '%s\n' "$errs" | sed 's/^/      /'
    elif [ "$st_s" != "exit 0" ] || [ "$st_c" != "exit 0" ]; then
        fail "$name" "server $st_s, client $st_c: $(grep -h -m 1 'ERROR\|Assert\|signal' "$T_WORK/srv.out" "$T_WORK/cli.out" | head -n 1)"
    else
        pass "$name: no memory error"
    fi
}

P=(-n 300 -w 10)
# posix zero-copy is ours only, and only up to UCX 1.15 (see
# src/transports/sm/release.rs): from 1.16 the same cases run with bcopy.
if [ "${UCX_ABI:-1.13}" = 1.13 ]; then
    OURS_ONLY=1 pair "uct_hello_world posix -z" x -- "$HELLO" -d memory -t posix -z -- -n 127.0.0.1
else
    pair "uct_hello_world posix -b" x -- "$HELLO" -d memory -t posix -b -- -n 127.0.0.1
fi
pair "uct_hello_world sysv -b" x -- "$HELLO" -d memory -t sysv -b -- -n 127.0.0.1
# (from 1.19 the tcp md registers nothing: uct_hello_world takes -b there)
if tcp_md_registers; then
    pair "uct_hello_world tcp -z" x -- "$HELLO" -d lo -t tcp -z -- -n 127.0.0.1
else
    pair "uct_hello_world tcp -b" x -- "$HELLO" -d lo -t tcp -b -- -n 127.0.0.1
fi
if [ "${UCX_ABI:-1.13}" = 1.13 ]; then
    OURS_ONLY=1 pair "ucx_perftest am_bw posix zcopy 4000" x -- ucx_perftest -t am_bw -x posix -d memory -D zcopy -s 4000 "${P[@]}" -- 127.0.0.1
else
    pair "ucx_perftest am_bw posix bcopy 4000" x -- ucx_perftest -t am_bw -x posix -d memory -D bcopy -s 4000 "${P[@]}" -- 127.0.0.1
fi
pair "ucx_perftest am_lat sysv bcopy 4000" x -- ucx_perftest -t am_lat -x sysv -d memory -D bcopy -s 4000 "${P[@]}" -- 127.0.0.1
pair "ucx_perftest put_bw cma zcopy 100000" x -- ucx_perftest -t put_bw -x cma -d memory -D zcopy -s 100000 "${P[@]}" -- 127.0.0.1
pair "ucx_perftest am_bw tcp zcopy 60000" x -- ucx_perftest -t am_bw -x tcp -d lo -D zcopy -s 60000 "${P[@]}" -- 127.0.0.1
# libucp keeps stream data that arrives before its receive as the
# transport's descriptors (large tcp messages: UCX_TCP_RX_DESC_MIN).
pair "ucx_perftest stream_bw tcp 40000" tcp -- ucx_perftest -t stream_bw -s 40000 "${P[@]}" -- 127.0.0.1
pair "ucx_perftest put_bw tcp zcopy 100000" x -- ucx_perftest -t put_bw -x tcp -d lo -D zcopy -s 100000 "${P[@]}" -- 127.0.0.1
pair "ucp_hello_world tcp" tcp -- "$T_WORK/ucp_hello_world" -- -n 127.0.0.1
pair "ucp_hello_world sysv,cma -s 200000" sysv,cma -- "$T_WORK/ucp_hello_world" -s 200000 -- -n 127.0.0.1
STOP=1 pair "io_demo -A tcp,posix,self" tcp,posix,self -- "$IO_DEMO" -q -A -o read,write -d 1:100000 -- -i 200 127.0.0.1

shm_check "no /dev/shm file or SysV segment left over" "$T_WORK/shm.before"
finish
