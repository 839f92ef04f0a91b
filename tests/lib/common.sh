# shellcheck shell=bash
# Shared helpers for the uct-rs test scripts (sourced, not run; the other
# shell libraries in tests/lib/ build on this one).
#
# Every script takes the library directory to test as its first argument or
# as $UCT_LIBDIR: a directory holding our libuct.so.0.  Empty means "test the
# reference UCX" (the C original).  Programs under test are started through
# "${RUN[@]}", which sets LD_LIBRARY_PATH to select LIBDIR's libuct.so.0;
# the original runs through "${SYS_RUN[@]}".
#
# The UCX installation under test (the reference: the C libuct we compare
# against, its libucs/libucp/libucm, tools, headers and examples):
#   default         the system's, Debian 12's UCX 1.13.1: tools in PATH,
#                   /usr/lib/x86_64-linux-gnu/libuct.so.0, /usr/include,
#                   /usr/share/doc/libucx-dev/examples
#   UCX_PREFIX=DIR  another installation in DIR (scripts/setup-ucx-wheel.sh
#                   prints one): tools from DIR/bin, libraries DIR/lib,
#                   headers DIR/include, examples DIR/share/ucx/examples.
#                   Every process then runs with LD_LIBRARY_PATH: DIR/lib for
#                   the original, LIBDIR:DIR/lib for ours (our libuct.so.0
#                   first, then the reference's libucs, libucp, libucm).
# UCX_ABI ("1.13", "1.18"): the ABI of that installation, from its version
# unless given; UCX_RELEASE: its version ("1.13.1", "1.18.1").  Suites that
# only make sense for one release call need_abi (a skip elsewhere).
#
# Counting: pass NAME / fail NAME [REASON]; finish prints "N passed, M failed"
# and exits non-zero when M > 0; skip_suite REASON stops a whole suite as
# skipped (exit 77, 0 cases).  full_tier: true under UCT_RS_TIER=full.

# Sourced once per shell: the libraries that build on this one source it
# too, and a second time must not reset the work directory or the counts.
[ -n "${_T_COMMON_LOADED:-}" ] && return 0
_T_COMMON_LOADED=1

set -u

UCX_PREFIX=${UCX_PREFIX:-}
if [ -n "$UCX_PREFIX" ]; then
    if [ ! -e "$UCX_PREFIX/lib/libuct.so.0" ]; then
        printf 'FAIL  UCX_PREFIX: no lib/libuct.so.0 in %s\n0 passed, 1 failed\n' "$UCX_PREFIX"
        exit 1
    fi
    UCX_PREFIX=$(cd "$UCX_PREFIX" && pwd -P)
    UCT_SYSTEM_LIB=${UCT_SYSTEM_LIB:-$UCX_PREFIX/lib/libuct.so.0}
    export UCT_SYSTEM_LIB   # c-tests/bad_input.c tells the original by it
    UCX_EXAMPLES=${UCX_EXAMPLES:-$UCX_PREFIX/share/ucx/examples}
    case ":$PATH:" in *":$UCX_PREFIX/bin:"*) ;; *) PATH=$UCX_PREFIX/bin:$PATH ;; esac
    export PATH
    if [ -z "${UCX_RELEASE:-}" ]; then
        if [ -f "$UCX_PREFIX/VERSION" ]; then
            UCX_RELEASE=$(head -n 1 "$UCX_PREFIX/VERSION")
        else
            UCX_RELEASE=$(LD_LIBRARY_PATH=$UCX_PREFIX/lib ucx_info -v 2>/dev/null |
                          sed -n 's/^# Library version: //p')
        fi
    fi
    # what every process of the original needs; ours come first (ld_path_for)
    SYS_LDPATH=$UCX_PREFIX/lib
    SYS_RUN=(env -u LD_PRELOAD "LD_LIBRARY_PATH=$SYS_LDPATH")
    # compiling against this installation (its pkg-config files name the
    # machine it was built on: not used)
    UCX_CFLAGS=(-I"$UCX_PREFIX/include")
    UCX_LDFLAGS=(-L"$UCX_PREFIX/lib" -Wl,-rpath-link,"$UCX_PREFIX/lib")
else
    UCT_SYSTEM_LIB=${UCT_SYSTEM_LIB:-/usr/lib/x86_64-linux-gnu/libuct.so.0}
    UCX_EXAMPLES=${UCX_EXAMPLES:-/usr/share/doc/libucx-dev/examples}
    UCX_RELEASE=${UCX_RELEASE:-1.13.1}
    SYS_LDPATH=
    SYS_RUN=(env -u LD_LIBRARY_PATH -u LD_PRELOAD)
    UCX_CFLAGS=()
    UCX_LDFLAGS=()
fi
UCX_ABI=${UCX_ABI:-$(echo "$UCX_RELEASE" | cut -d. -f1,2)}
# the self transport's one device: "memory0" up to 1.13, "memory" since 1.14
UCT_SELF_DEV=memory0
case $UCX_ABI in 1.13) ;; *) UCT_SELF_DEV=memory ;; esac
# From 1.21 libucm waits a grace period (UCX_MEM_BISTRO_GRACE_DURATION, 50 ms)
# after each of the ~8 code patches it makes when libucs loads: about 0.4 s
# of sched_yield at the start of every process, ours and the original's
# alike (the patching is theirs). The suites start hundreds of processes;
# they run without the wait, both libraries the same way. Only where the
# key exists: older releases would warn about an unknown variable.
case $UCX_ABI in
    1.1[3-9] | 1.20) ;;
    *) export UCX_MEM_BISTRO_GRACE_DURATION=${UCX_MEM_BISTRO_GRACE_DURATION:-0} ;;
esac
# UCX reads every UCX_* variable of its environment and warns about the ones
# it does not know ("unused env variable"): these are for the scripts only,
# never passed on to the programs they start (UCX_PREFIX_1_18: the 1.18
# reference of scripts/test-all.sh and CI).
export -n UCX_PREFIX UCX_ABI UCX_RELEASE UCX_EXAMPLES UCX_PREFIX_1_18 2>/dev/null
CC=${CC:-gcc}

# The tier: UCT_RS_TIER=quick (default; what CI runs) or full (the suites
# marked "quick,full" in tests/suites.txt then do more: more cases, rows,
# messages). One variable for every suite and for tests/attack/attack.py,
# which reads it from the environment.
UCT_RS_TIER=${UCT_RS_TIER:-quick}
case $UCT_RS_TIER in
    quick | full) ;;
    *)
        printf 'FAIL  UCT_RS_TIER=%s: want quick or full\n0 passed, 1 failed\n' "$UCT_RS_TIER"
        exit 1 ;;
esac
export UCT_RS_TIER

# ref_has_verbs: the reference installation has UCX's verbs module
# (ucx/libuct_ib.so.0 beside its libuct.so.0): Debian's 1.13.1 and a UCX
# built from source with verbs do, the PyPI wheels do not.
ref_has_verbs() {
    [ -e "$(dirname "$(readlink -f "$UCT_SYSTEM_LIB")")/ucx/libuct_ib.so.0" ]
}

# full_tier: true under UCT_RS_TIER=full.
full_tier() {
    [ "$UCT_RS_TIER" = full ]
}

T_PASSED=0
T_FAILED=0
T_WORK=

pass() {
    T_PASSED=$((T_PASSED + 1))
    printf 'PASS  %s\n' "$1"
}

fail() {
    T_FAILED=$((T_FAILED + 1))
    if [ $# -gt 1 ] && [ -n "$2" ]; then
        printf 'FAIL  %s: %s\n' "$1" "$2"
    else
        printf 'FAIL  %s\n' "$1"
    fi
}

finish() {
    printf '%d passed, %d failed\n' "$T_PASSED" "$T_FAILED"
    [ "$T_FAILED" -eq 0 ]
    exit $?
}

# Stop early: report what went wrong as one failure and print the summary.
abort() {
    fail "$1" "${2:-}"
    finish
}

# skip_suite REASON: the whole suite does not apply here (meson: skipped).
skip_suite() {
    printf 'SKIP  %s\n' "$1"
    printf '0 passed, 0 failed\n'
    exit 77
}

# need_abi ABI REASON: skip the suite unless the installation under test has
# that ABI (e.g. a suite whose reference data is of one release).
need_abi() {
    [ "$UCX_ABI" = "$1" ] || skip_suite "UCX $UCX_ABI: $2"
}

# ld_path_for DIR: the LD_LIBRARY_PATH a process needs to load DIR's
# libuct.so.0 ("" = the original); empty when nothing is to be set.
ld_path_for() {
    if [ -n "$1" ]; then
        echo "$1${SYS_LDPATH:+:$SYS_LDPATH}"
    else
        echo "$SYS_LDPATH"
    fi
}

# lib_env DIR: the env(1) argument that selects DIR's libuct.so.0 ("" = the
# original), or nothing; used unquoted: env $(lib_env "$dir") CMD...
lib_env() {
    local p
    p=$(ld_path_for "$1")
    if [ -n "$p" ]; then
        echo "LD_LIBRARY_PATH=$p"
    fi
}

# resolve_libdir [DIR]: sets UCT_LIBDIR (absolute or empty), UCT_LIB (the
# library file that will be loaded), RUN (command prefix) and OUR_LDPATH
# (LD_LIBRARY_PATH for it, empty when none is needed).
resolve_libdir() {
    UCT_LIBDIR=${1-${UCT_LIBDIR:-}}
    RUN=()
    if [ -n "$UCT_LIBDIR" ]; then
        if [ ! -e "$UCT_LIBDIR/libuct.so.0" ]; then
            abort "library directory" "no libuct.so.0 in '$UCT_LIBDIR'"
        fi
        UCT_LIBDIR=$(cd "$UCT_LIBDIR" && pwd -P)
        UCT_LIB=$UCT_LIBDIR/libuct.so.0
        echo "# testing $UCT_LIB"
    else
        UCT_LIB=$UCT_SYSTEM_LIB
        if [ -n "$UCX_PREFIX" ]; then
            echo "# testing the reference library $UCT_LIB"
        else
            echo "# testing the system library $UCT_LIB"
        fi
    fi
    OUR_LDPATH=$(ld_path_for "$UCT_LIBDIR")
    [ -n "$OUR_LDPATH" ] && RUN=(env "LD_LIBRARY_PATH=$OUR_LDPATH")
    [ -n "$UCX_PREFIX" ] && echo "# UCX installation under test: $UCX_PREFIX (UCX $UCX_RELEASE, ABI $UCX_ABI)"
    return 0
}

# testing_original: true when the library under test is the reference C
# library itself (no LIBDIR, or a LIBDIR holding that very file): for what
# only this project's library promises (bounds, extensions).
testing_original() {
    [ -z "$UCT_LIBDIR" ] || same_file "$UCT_LIB" "$UCT_SYSTEM_LIB"
}

# make_workdir: a private temporary directory, removed when the script exits.
make_workdir() {
    T_WORK=$(mktemp -d "${TMPDIR:-/tmp}/uct-rs-test.XXXXXX")
    trap 'cleanup_workdir' EXIT
    trap 'exit 130' INT TERM
}

cleanup_workdir() {
    if [ -n "${T_CHILDREN:-}" ]; then
        # shellcheck disable=SC2086
        kill $T_CHILDREN 2>/dev/null
        wait 2>/dev/null
    fi
    [ -n "$T_WORK" ] && rm -rf "$T_WORK"
}

# build_c OUT SRC...: compile a C test against the UCX headers under test.
# When $UCT_TEST_BINDIR holds a program of the same name (meson builds the
# c-tests there), that build is used instead.
build_c() {
    local out=$1
    shift
    if [ -n "${UCT_TEST_BINDIR:-}" ] && [ -x "$UCT_TEST_BINDIR/$(basename "$out")" ]; then
        cp "$UCT_TEST_BINDIR/$(basename "$out")" "$out"
        return
    fi
    "$CC" -O2 -g -Wall "${UCX_CFLAGS[@]}" -o "$out" "$@" "${UCX_LDFLAGS[@]}" -luct -lucs -ldl
}

# need_c [-h HINT] OUT SRC [CC-ARGS...]: build_c, then a pass "build NAME"
# (NAME: OUT's file name), or the compiler's messages and an abort (with
# HINT, e.g. the package to install, as its reason).
need_c() {
    local hint= name
    if [ "$1" = -h ]; then
        hint=$2
        shift 2
    fi
    name=$(basename "$1")
    if build_c "$@" 2>"$T_WORK/cc.log"; then
        pass "build $name"
    else
        cat "$T_WORK/cc.log"
        abort "build $name" "$hint"
    fi
}

# build_run_watch: compile c-tests/run_watch.c into the work directory.
# Then: "$RUN_WATCH" SECONDS STATUSFILE CMD... records "exit N", "signal N"
# or "timeout" in STATUSFILE (see the source for why a shell cannot).
build_run_watch() {
    RUN_WATCH=$T_WORK/run_watch
    "$CC" -O2 -Wall -o "$RUN_WATCH" "$(dirname "${BASH_SOURCE[0]}")/../../c-tests/run_watch.c" ||
        abort "build run_watch"
}

# ended_badly STATUSFILE: true when the process was killed or timed out.
ended_badly() {
    case $(cat "$1" 2>/dev/null) in
        "exit "*) return 1 ;;
        *) return 0 ;;
    esac
}

# same_file A B: true when both paths name the same file.
same_file() {
    [ -e "$1" ] && [ -e "$2" ] && [ "$(readlink -f "$1")" = "$(readlink -f "$2")" ]
}

# diff_verdict A B PASS-NAME FAIL-NAME [WHY [MAX]]: pass PASS-NAME when the
# files A and B are identical; otherwise fail FAIL-NAME with WHY (default
# "differs:") and show the unified diff (kept in B.diff) indented, its first
# MAX lines only when MAX is given.
diff_verdict() {
    if diff -u "$1" "$2" >"$2.diff"; then
        pass "$3"
    else
        fail "$4" "${5:-differs:}"
        sed 's/^/      /' "$2.diff" | head -n "${6:-1000000}"
    fi
}

# lib_has_ib DIR: true when DIR's libuct has the ib component (built with
# the verbs feature): its settings are listed by `ucx_info -c`. The suites
# of the ib family skip themselves otherwise.
lib_has_ib() {
    local info=ucx_info
    [ -n "$UCX_PREFIX" ] && info=$UCX_PREFIX/bin/ucx_info
    env $(lib_env "$1") "$info" -c 2>/dev/null | grep -q '^UCX_IB_FORK_INIT='
}

# need_ib_lib DIR: skip the suite when DIR (a library under test, not the
# system one) was built without the verbs feature.
need_ib_lib() {
    if [ -n "$1" ] && ! lib_has_ib "$1"; then
        skip_suite "the library was built without the verbs feature (no ib component)"
    fi
}

# need_ucx_info: stop the suite when ucx_info is not installed.
need_ucx_info() {
    command -v ucx_info >/dev/null || abort "ucx_info" "not installed (apt-get install ucx-utils)"
}

# netns_usable WHAT: true when this process may create network namespaces
# (root, and "ip netns" works here); otherwise prints why, followed by WHAT
# (what the suite leaves out), as a comment line, and is false.
netns_usable() {
    if [ "$(id -u)" != 0 ]; then
        echo "# not root: $1"
        return 1
    fi
    if ! ip netns add "nschk$$" 2>/dev/null; then
        echo "# ip netns does not work here: $1"
        return 1
    fi
    ip netns del "nschk$$"
}

# kill_peer_report OUT ST: read c-tests/kill_peer.c's report OUT (and the
# run_watch status file ST) into ended, result, got_caps, via, status,
# ep_ok, calls, ms, reap_ms, survivor, putc.
kill_peer_report() {
    local out=$1 st=$2
    ended=$(cat "$st" 2>/dev/null || echo unknown)
    result=$(awk '$1 == "RESULT" { print $2 }' "$out" | tail -n 1)
    got_caps=$(sed -n 's/.*errhandle_peer_failure=\([01]\) ep_check=\([01]\).*/\1:\2/p' "$out")
    via=$(sed -n 's/^detected=1 via=\([a-z_]*\) .*/\1/p' "$out")
    status=$(sed -n 's/^detected=1 via=[a-z_]* status=\(-*[0-9]*\) .*/\1/p' "$out")
    ep_ok=$(sed -n 's/.* handler_ep_ok=\([01]\).*/\1/p' "$out")
    calls=$(sed -n 's/.* handler_calls=\([0-9]*\).*/\1/p' "$out")
    ms=$(sed -n 's/^detect_ms_after_kill=\([-0-9.]*\).*/\1/p' "$out")
    reap_ms=$(sed -n 's/.*detect_ms_after_reap=\([-0-9.]*\).*/\1/p' "$out")
    survivor=$(sed -n 's/^survivor [a-z]* pid=[0-9]*: \(.*\)$/\1/p' "$out")
    putc=$(sed -n 's/^failed_put_completion=\(.*\)$/\1/p' "$out")
}

# tcp_lo_unreachable: UCX 1.20's tcp finds no route to a peer on the
# loopback device (its reachability check reads a route out of the
# loopback device address, which holds none): uct_hello_world reports
# "Failed to reach the peer" and ucx_perftest "Destination is unreachable"
# over tcp/lo, with the original as with ours.
tcp_lo_unreachable() {
    [ "$UCX_ABI" = 1.20 ]
}

# tcp_md_registers: the original's tcp memory domain registers memory (its
# ucx_info -d block has a "register:" line): up to UCX 1.18; from 1.19 it
# registers nothing and uct_hello_world -z refuses tcp.
tcp_md_registers() {
    "${SYS_RUN[@]}" ucx_info -d 2>/dev/null |
        awk '/^# Memory domain: tcp$/ { on = 1; next }
             on && /^# Memory domain:/ { exit }
             on && /register:/ { found = 1 }
             END { exit !found }'
}

# copy_launcher DEST VERSION RELEASES: the uct-rs launcher under test as
# DEST, executable: the one meson configured ($UCT_TEST_BINDIR/uct-rs) or,
# without a meson build, packaging/uct-rs.in filled in the same way (for
# UCT_LIBDIR, with VERSION and RELEASES as its --version line says).
# Prints where it came from as a "# " line.
copy_launcher() {
    local dest=$1 version=$2 releases=$3 top
    top=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
    if [ -n "${UCT_TEST_BINDIR:-}" ] && [ -f "$UCT_TEST_BINDIR/uct-rs" ]; then
        cp "$UCT_TEST_BINDIR/uct-rs" "$dest"
        echo "# launcher: $UCT_TEST_BINDIR/uct-rs"
    else
        sed -e "s|@VERSION@|$version|g" -e "s|@UCX_RELEASES@|$releases|g" -e "s|@UCT_LIBDIR@|$UCT_LIBDIR|g" \
            "$top/packaging/uct-rs.in" >"$dest"
        echo "# launcher: packaging/uct-rs.in, filled in"
    fi
    chmod +x "$dest"
}
