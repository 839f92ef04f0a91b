# shellcheck shell=bash
# Shared helpers for the uct-rs test scripts (sourced, not run; the other
# shell libraries in tests/lib/ build on this one).
#
# Every script takes the library directory to test as its first argument or
# as $UCT_LIBDIR: a directory holding our libuct.so.0.  Empty means "test the
# system UCX" (the C original).  Programs under test are started through
# "${RUN[@]}", which sets LD_LIBRARY_PATH=$UCT_LIBDIR when a directory is given.
#
# Counting: pass NAME / fail NAME [REASON]; finish prints "N passed, M failed"
# and exits non-zero when M > 0.

set -u

UCT_SYSTEM_LIB=${UCT_SYSTEM_LIB:-/usr/lib/x86_64-linux-gnu/libuct.so.0}
UCX_EXAMPLES=${UCX_EXAMPLES:-/usr/share/doc/libucx-dev/examples}
CC=${CC:-gcc}

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

# resolve_libdir [DIR]: sets UCT_LIBDIR (absolute or empty), UCT_LIB (the
# library file that will be loaded) and RUN (command prefix).
resolve_libdir() {
    UCT_LIBDIR=${1-${UCT_LIBDIR:-}}
    RUN=()
    if [ -n "$UCT_LIBDIR" ]; then
        if [ ! -e "$UCT_LIBDIR/libuct.so.0" ]; then
            abort "library directory" "no libuct.so.0 in '$UCT_LIBDIR'"
        fi
        UCT_LIBDIR=$(cd "$UCT_LIBDIR" && pwd -P)
        UCT_LIB=$UCT_LIBDIR/libuct.so.0
        RUN=(env "LD_LIBRARY_PATH=$UCT_LIBDIR")
        echo "# testing $UCT_LIB"
    else
        UCT_LIB=$UCT_SYSTEM_LIB
        echo "# testing the system library $UCT_LIB"
    fi
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

# build_c OUT SRC...: compile a C test against the system UCX headers.
# When $UCT_TEST_BINDIR holds a program of the same name (meson builds the
# c-tests there), that build is used instead.
build_c() {
    local out=$1
    shift
    if [ -n "${UCT_TEST_BINDIR:-}" ] && [ -x "$UCT_TEST_BINDIR/$(basename "$out")" ]; then
        cp "$UCT_TEST_BINDIR/$(basename "$out")" "$out"
        return
    fi
    "$CC" -O2 -g -Wall -o "$out" "$@" -luct -lucs -ldl
}

# build_run_watch: compile tests/tools/run_watch.c into the work directory.
# Then: "$RUN_WATCH" SECONDS STATUSFILE CMD... records "exit N", "signal N"
# or "timeout" in STATUSFILE (see the source for why a shell cannot).
build_run_watch() {
    RUN_WATCH=$T_WORK/run_watch
    "$CC" -O2 -Wall -o "$RUN_WATCH" "$(dirname "${BASH_SOURCE[0]}")/../tools/run_watch.c" ||
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
