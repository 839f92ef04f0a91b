# shellcheck shell=bash
# The two-process runner (sourced after common.sh and after
# make_workdir/build_run_watch), used by the shared-memory and tcp tests and
# by the benchmarks: start a server and a client, each with its own library
# directory ("" = the reference UCX), on loopback, under run_watch, and tell how
# each ended.
#
#   free_port / port_listening PORT / wait_listening PID PORT
#   wait_pair SPID SST CPID CST [PORT]; status_of STATUSFILE
#   build_hello                 -> $HELLO (uct_hello_world from libucx-dev)
#   mixed_begin [LIBDIR [ITERS]]; shm_expected_column  -> $column
#   start_server_on_free_port ENV STATUS OUT CMD...  (sets port, spid)
#   run_hello_pair SRV_LIB CLI_LIB TL DEV MODE
#   run_perf_pair SRV_LIB CLI_LIB TL DEV TEST LAYOUT SIZE ITERS [WARMUP]
#   lib_label DIR               -> "ours" / "system" for messages
#   run_pair PORT SRV_CMD... -- CLI_CMD...
#                               any server and its client (below)
#
# PAIR_TIMEOUT (default 60 s) bounds each process; a process that reaches it
# is killed and counted as hung ("timeout").  Once one of the two has ended,
# the other gets PEER_GRACE seconds (default 10) to end too; after that it is
# killed and reported as "stuck" (also a hang): a process whose peer is gone
# has nothing left to wait for.

PAIR_TIMEOUT=${PAIR_TIMEOUT:-60}
PEER_GRACE=${PEER_GRACE:-10}

# port_listening PORT: true when some socket listens on TCP port PORT.
port_listening() {
    local hex
    hex=$(printf ':%04X' "$1")
    awk -v p="$hex" '$4 == "0A" && substr($2, length($2) - 4) == p { found = 1 }
                     END { exit !found }' /proc/net/tcp /proc/net/tcp6 2>/dev/null
}

# port_used PORT: true when any TCP socket (any state) has PORT as local port
port_used() {
    local hex
    hex=$(printf ':%04X' "$1")
    awk -v p="$hex" 'substr($2, length($2) - 4) == p { found = 1 }
                     END { exit !found }' /proc/net/tcp /proc/net/tcp6 2>/dev/null
}

# free_port: a port no socket uses, below the kernel's ephemeral range (so
# that no outgoing connection takes it between the check and the bind)
free_port() {
    local port lo=32768 span
    read -r lo _ </proc/sys/net/ipv4/ip_local_port_range 2>/dev/null
    span=$((lo - 10000))
    [ $span -lt 1000 ] && span=20000
    while :; do
        port=$((10000 + (RANDOM * 32768 + RANDOM) % span))
        port_used "$port" || break
    done
    echo "$port"
}

# wait_listening PID PORT: until PORT listens (true) or PID has exited or
# PAIR_TIMEOUT has passed (false)
wait_listening() {
    local i=0
    while ! port_listening "$2"; do
        kill -0 "$1" 2>/dev/null || return 1
        sleep 0.02
        i=$((i + 1))
        [ $i -gt $((PAIR_TIMEOUT * 50)) ] && return 1
    done
    return 0
}

# lost_port_race OUTPUT: the server could not bind its port (another program
# took it after free_port looked): the pair is started again on a new port
lost_port_race() {
    grep -qiE 'address already in use|bind\(\) failed|open server socket' "$1"
}

# (lib_env DIR, the env(1) argument that selects DIR's libuct.so.0, is in
# common.sh)

lib_label() {
    if [ -n "$1" ]; then echo ours; else echo system; fi
}

# status_of FILE: how a run_watch'ed process ended
status_of() {
    cat "$1" 2>/dev/null || echo "unknown"
}

# wait_pair SPID SST CPID CST [PORT]: wait for both run_watch'ed processes;
# see PEER_GRACE above.  With PORT (uct_hello_world), a server still
# listening after its client ended is let go by release_waiting_server, and
# PAIR_RELEASED is set to 1.
wait_pair() {
    local spid=$1 sst=$2 cpid=$3 cst=$4 port=${5:-} ended_at='' now pid st
    PAIR_RELEASED=0
    # block (no polling that would take CPU from the measured pair) until
    # one of the two ends
    wait -n "$spid" "$cpid" 2>/dev/null
    while :; do
        local salive=0 calive=0
        kill -0 "$spid" 2>/dev/null && salive=1
        kill -0 "$cpid" 2>/dev/null && calive=1
        [ $salive = 0 ] && [ $calive = 0 ] && break
        if [ $salive = 1 ] && [ $calive = 0 ] && [ -n "$port" ] &&
           [ "$PAIR_RELEASED" = 0 ] && port_listening "$port"; then
            sleep 0.2
            if kill -0 "$spid" 2>/dev/null && port_listening "$port"; then
                release_waiting_server "$port"
                PAIR_RELEASED=1
                continue
            fi
        fi
        now=$SECONDS
        if [ $salive = 0 ] || [ $calive = 0 ]; then
            [ -z "$ended_at" ] && ended_at=$now
            if [ $((now - ended_at)) -ge "$PEER_GRACE" ]; then
                if [ $salive = 1 ]; then pid=$spid st=$sst; else pid=$cpid st=$cst; fi
                kill -TERM "$pid" 2>/dev/null   # run_watch takes its command down
                wait "$pid" 2>/dev/null
                echo "stuck" >"$st"
                continue
            fi
        fi
        sleep 0.05
    done
    wait "$spid" 2>/dev/null
    wait "$cpid" 2>/dev/null
}

# bad_end TEXT: true for a crash ("signal N"), a hang ("timeout", "stuck")
bad_end() {
    case $1 in
        "exit "*) return 1 ;;
        *) return 0 ;;
    esac
}

# pair_failed_cleanly END_A END_B: for cases allowed to fail.  True when
# each process ended with an exit status, or with SIGPIPE (ucx_perftest of
# 1.13.1 dies of it when its peer closes the control socket early), or stayed
# stuck while the other one gave up with a non-zero exit status (perftest
# does that too: it waits forever on a control socket its peer closed).
pair_failed_cleanly() {
    _one_clean() {
        case $1 in
            "exit "* | "signal 13") return 0 ;;
            stuck | timeout) case $2 in "exit 0") return 1 ;; "exit "*) return 0 ;; esac ;;
        esac
        return 1
    }
    _one_clean "$1" "$2" && _one_clean "$2" "$1"
}

# need_hello: build uct_hello_world (a pass) or stop the script (an abort).
need_hello() {
    if build_hello; then
        pass "build uct_hello_world"
    else
        abort "build uct_hello_world"
    fi
}

# need_perftest: stop the script when ucx_perftest is missing.
need_perftest() {
    command -v ucx_perftest >/dev/null || abort "ucx_perftest" "not installed (apt-get install ucx-utils)"
}

# mixed_begin [LIBDIR [ITERS]]: the start of the suites that pair our
# library with the original (mixed-shm.sh, mixed-tcp.sh): LIBDIR (or
# UCT_LIBDIR), ITERS (default 10000), EXPECT_FAIL_TLS, ucx_perftest needed,
# the work directory, run_watch and uct_hello_world built; sets OURS (the
# library under test) and SYS ("" = the original).
mixed_begin() {
    resolve_libdir "${1-${UCT_LIBDIR:-}}"
    ITERS=${2:-${ITERS:-10000}}
    EXPECT_FAIL_TLS=${EXPECT_FAIL_TLS:-}
    need_perftest
    make_workdir
    build_run_watch
    need_hello
    [ -n "$UCT_LIBDIR" ] || echo "# no LIBDIR: system against system (sanity run; \"ours\" below is the system library too)"
    OURS=$UCT_LIBDIR
    SYS=
}

# shm_expected_column: sets column to the column of expected outcomes that
# applies to the library under test in the shared-memory suites: "system"
# for the original (or no LIBDIR), and from UCX 1.16 on, where the mm
# transports offer what UCX's do (src/transports/sm/release.rs); "ours" (our
# extra zero-copy cases) otherwise.
shm_expected_column() {
    column=ours
    if [ -z "$UCT_LIBDIR" ] || same_file "$UCT_LIB" "$UCT_SYSTEM_LIB"; then
        column=system
    fi
    # Our posix/sysv zero-copy operations exist up to 1.15 (from 1.16 the
    # mm transports offer what UCX's do: the system column).
    case ${UCX_ABI:-1.13} in
        1.13 | 1.14 | 1.15) ;;
        *) [ "$column" = ours ] && column=system ;;
    esac
}

build_hello() {
    HELLO=$T_WORK/uct_hello_world
    [ -x "$HELLO" ] && return 0
    [ -f "$UCX_EXAMPLES/uct_hello_world.c" ] || {
        echo "uct_hello_world.c not found in $UCX_EXAMPLES (apt-get install libucx-dev)"
        return 1
    }
    cp "$UCX_EXAMPLES/uct_hello_world.c" "$UCX_EXAMPLES/hello_world_util.h" "$T_WORK/"
    "$CC" -O2 "${UCX_CFLAGS[@]}" -o "$HELLO" "$T_WORK/uct_hello_world.c" "${UCX_LDFLAGS[@]}" \
        -luct -lucs 2>"$T_WORK/cc.log" || {
        cat "$T_WORK/cc.log"
        return 1
    }
}

# release_waiting_server PORT: uct_hello_world's server blocks in accept()
# until a client connects; when the client gave up before connecting, let the
# server go: connect, send an impossible address length (the example rejects
# lengths above SIZE_MAX/2 and exits with an error), read until it closes.
release_waiting_server() {
    timeout 10 bash -c '
        exec 3<>"/dev/tcp/127.0.0.1/$1" || exit 1
        printf "\377\377\377\377\377\377\377\377" >&3
        cat <&3 >/dev/null
        exec 3>&-' release "$1" 2>/dev/null
}

# start_server_on_free_port ENV STATUS OUT CMD...: start CMD in the
# background under run_watch with the environment ENV ("VAR=value ..."), its
# ending in STATUS and its output in OUT, each argument "@PORT@" replaced by a
# free port.  When the server could not bind because another program took that
# port in the meantime, try again on another one (three tries in all).  Sets
# the caller's port and spid, and T_CHILDREN.
start_server_on_free_port() {
    local senv=$1 st=$2 out=$3 try arg cmd
    shift 3
    for try in 1 2 3; do
        port=$(free_port)
        cmd=()
        for arg in "$@"; do
            if [ "$arg" = @PORT@ ]; then cmd+=("$port"); else cmd+=("$arg"); fi
        done
        rm -f "$st"
        # shellcheck disable=SC2086
        env $senv "$RUN_WATCH" "$PAIR_TIMEOUT" "$st" "${cmd[@]}" >"$out" 2>&1 </dev/null &
        spid=$!
        T_CHILDREN=$spid
        wait_listening "$spid" "$port" && break
        kill -0 "$spid" 2>/dev/null && break
        wait "$spid"
        lost_port_race "$out" || break
        echo "# port $port was taken, again on another port" >&2
    done
}

# run_hello_pair SRV_LIB CLI_LIB TL DEV MODE   (-s 20: the example sends
# "ABCDEFGHIJKLMNOPQRS" and its NUL)
# Sets HP_OK (1 = success as hello-matrix.sh defines it), HP_SRV / HP_CLI
# ("exit N", "signal N", "timeout"), HP_BAD (1 = a process crashed or hung),
# HP_RELEASED (1 = the client never connected and the waiting server was
# let go), HP_MSG (first error-looking line), HP_OUT_SRV / HP_OUT_CLI (files).
HELLO_WANT=ABCDEFGHIJKLMNOPQRS
run_hello_pair() {
    local slib=$1 clib=$2 tl=$3 dev=$4 mode=$5 port spid cpid
    local senv cenv
    senv=$(lib_env "$slib")
    cenv=$(lib_env "$clib")
    HP_OUT_SRV=$T_WORK/hello.srv
    HP_OUT_CLI=$T_WORK/hello.cli
    rm -f "$T_WORK/hcli.st"
    start_server_on_free_port "$senv" "$T_WORK/hsrv.st" "$HP_OUT_SRV" \
        "$HELLO" -t "$tl" -d "$dev" "$mode" -p @PORT@ -s 20
    # shellcheck disable=SC2086
    env $cenv "$RUN_WATCH" "$PAIR_TIMEOUT" "$T_WORK/hcli.st" "$HELLO" \
        -t "$tl" -d "$dev" "$mode" -p "$port" -s 20 -n 127.0.0.1 \
        >"$HP_OUT_CLI" 2>&1 </dev/null &
    cpid=$!
    T_CHILDREN="$spid $cpid"
    wait_pair "$spid" "$T_WORK/hsrv.st" "$cpid" "$T_WORK/hcli.st" "$port"
    HP_RELEASED=$PAIR_RELEASED
    T_CHILDREN=
    HP_SRV=$(status_of "$T_WORK/hsrv.st")
    HP_CLI=$(status_of "$T_WORK/hcli.st")
    HP_OK=0
    if [ "$HP_SRV" = "exit 0" ] && [ "$HP_CLI" = "exit 0" ] &&
       grep -q 'UCT TEST SUCCESS' "$HP_OUT_SRV" &&
       grep -q "sent $HELLO_WANT (20 bytes)" "$HP_OUT_SRV"; then
        HP_OK=1
    fi
    HP_BAD=0
    if bad_end "$HP_SRV" || bad_end "$HP_CLI"; then
        HP_BAD=1
    fi
    HP_MSG=$(grep -hiE 'fail|error|unsupported|unreach' "$HP_OUT_CLI" "$HP_OUT_SRV" |
             head -n 1 | cut -c1-100)
}

# run_perf_pair SRV_LIB CLI_LIB TL DEV TEST LAYOUT SIZE ITERS [WARMUP]
# ucx_perftest server and client (the server takes the test parameters from
# the client).  Sets PP_RESULT to one of
#   OK                  both exit 0, the final line reports ITERS iterations
#   UNSUP               perftest refused it: "Unsupported operation", exit 255
#   FAIL <why>          any other clean ending
#   CRASH <why>         a process was killed by a signal or hung
# and PP_LAT / PP_BW (average latency in us, average bandwidth in MB/s) for
# OK, PP_SRV / PP_CLI (how each ended), PP_OUT_SRV / PP_OUT_CLI (files).
run_perf_pair() {
    local slib=$1 clib=$2 tl=$3 dev=$4 test=$5 layout=$6 size=$7 iters=$8
    local warmup=${9:-100} port spid cpid senv cenv final why
    local args=(-t "$test" -x "$tl" -d "$dev" -s "$size" -n "$iters" -w "$warmup" -f)
    [ "$layout" != "-" ] && args+=(-D "$layout")
    senv=$(lib_env "$slib")
    cenv=$(lib_env "$clib")
    # PERF_PIN=1: server on CPU 1, client on CPU 0 (steadier numbers).
    local spin=() cpin=()
    if [ "${PERF_PIN:-0}" = 1 ] && command -v taskset >/dev/null && [ "$(nproc)" -ge 2 ]; then
        spin=(taskset -c 1)
        cpin=(taskset -c 0)
    fi
    PP_OUT_SRV=$T_WORK/perf.srv
    PP_OUT_CLI=$T_WORK/perf.cli
    PP_LAT='' PP_BW=''
    rm -f "$T_WORK/pcli.st"
    start_server_on_free_port "$senv" "$T_WORK/psrv.st" "$PP_OUT_SRV" \
        "${spin[@]}" ucx_perftest -p @PORT@ "${args[@]}"
    # shellcheck disable=SC2086
    env $cenv "$RUN_WATCH" "$PAIR_TIMEOUT" "$T_WORK/pcli.st" "${cpin[@]}" ucx_perftest \
        127.0.0.1 -p "$port" "${args[@]}" >"$PP_OUT_CLI" 2>&1 </dev/null &
    cpid=$!
    T_CHILDREN="$spid $cpid"
    wait_pair "$spid" "$T_WORK/psrv.st" "$cpid" "$T_WORK/pcli.st"
    T_CHILDREN=
    PP_SRV=$(status_of "$T_WORK/psrv.st")
    PP_CLI=$(status_of "$T_WORK/pcli.st")
    final=$(grep -E '^ *[0-9]+ +[0-9.]+ +[0-9.]+' "$PP_OUT_CLI" | tail -n 1)
    if bad_end "$PP_SRV" || bad_end "$PP_CLI"; then
        PP_RESULT="CRASH server $PP_SRV, client $PP_CLI"
    elif [ "$PP_SRV" = "exit 0" ] && [ "$PP_CLI" = "exit 0" ] && [ -n "$final" ]; then
        set -- $final
        if [ "$1" = "$iters" ]; then
            PP_RESULT=OK
            PP_LAT=$3
            PP_BW=$5
        else
            PP_RESULT="FAIL final line reports $1 iterations"
        fi
    elif [ "$PP_CLI" = "exit 255" ] && grep -q 'Unsupported operation' "$PP_OUT_CLI"; then
        PP_RESULT=UNSUP
    else
        why=$(grep -hE 'ERROR|rror|fail' "$PP_OUT_CLI" "$PP_OUT_SRV" | head -n 1 |
              sed 's/^\[[^]]*\] *\[[^]]*\] *//' | cut -c1-100)
        PP_RESULT="FAIL server $PP_SRV, client $PP_CLI${why:+: $why}"
    fi
}

# run_pair PORT SRV_CMD... -- CLI_CMD...: the server command in the
# background (output $T_WORK/srv.out) until PORT listens, then the client
# command (output $T_WORK/cli.out), both waited for (wait_pair, without
# PORT).  Each command runs its program under run_watch with the status file
# $T_WORK/srv.st or $T_WORK/cli.st (removed first).  Sets PAIR_SRV and
# PAIR_CLI (how each ended) and PAIR_SEC (seconds from the server's start,
# one decimal).  A server that ends without listening: false, PAIR_SRV set,
# R_WHY "server HOW, did not listen", and R_BAD=1 for a crash or a hang.
run_pair() {
    local port=$1 srv=() spid cpid t0
    shift
    while [ "$1" != -- ]; do srv+=("$1"); shift; done
    shift
    rm -f "$T_WORK/srv.st" "$T_WORK/cli.st"
    t0=$(date +%s%N)
    "${srv[@]}" >"$T_WORK/srv.out" 2>&1 </dev/null &
    spid=$!
    T_CHILDREN=$spid
    if ! wait_listening "$spid" "$port"; then
        wait "$spid"
        T_CHILDREN=
        PAIR_SRV=$(status_of "$T_WORK/srv.st")
        R_WHY="server $PAIR_SRV, did not listen"
        bad_end "$PAIR_SRV" && R_BAD=1
        return 1
    fi
    "$@" >"$T_WORK/cli.out" 2>&1 </dev/null &
    cpid=$!
    T_CHILDREN="$spid $cpid"
    wait_pair "$spid" "$T_WORK/srv.st" "$cpid" "$T_WORK/cli.st"
    T_CHILDREN=
    PAIR_SEC=$(awk -v a="$t0" -v b="$(date +%s%N)" 'BEGIN { printf "%.1f", (b - a) / 1e9 }')
    PAIR_SRV=$(status_of "$T_WORK/srv.st")
    PAIR_CLI=$(status_of "$T_WORK/cli.st")
    return 0
}
