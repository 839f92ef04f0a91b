#!/usr/bin/env bash
# Which UCX release the library serves is found when it loads, from the
# process's libucp or libucs (src/ucs/release.rs). Against the UCX
# installation under test (tests/lib/common.sh):
#  - "ucx_info -v" (a libucp program): the debug line names the release of
#    that installation, found through libucp's version;
#  - uct_hello_world (a libuct program without libucp): the same release
#    series, found through libucs's exports, and /proc/PID/maps shows our
#    libuct.so.0 mapped, not the installation's;
#  - UCT_RS_UCX_RELEASE names the release outright; a release the library
#    does not serve is refused with an error line, no transport is offered
#    and nothing crashes.
# Usage: tests/release-detect.sh [LIBDIR]   (or UCT_LIBDIR)
here=$(cd "$(dirname "$0")" && pwd)
. "$here/lib/common.sh"
. "$here/lib/two-proc.sh"

resolve_libdir "$@"
[ -n "$UCT_LIBDIR" ] || skip_suite "release detection is our library's: give LIBDIR"
need_ucx_info
make_workdir
# A wheel's version may carry a packaging suffix (1.14.1.post2): the
# release itself is the first three numbers.
release=${UCX_RELEASE%%.post*}
series=${release%.*}
echo "# UCX under test: $release"

# serving_line FILE: the release and source of our "serving" debug line.
serving_line() {
    sed -n 's/.*uct-rs: serving UCX \([0-9.]*\) (from \(.*\))$/\1 \2/p' "$1" | head -n 1
}

UCX_LOG_LEVEL=debug "${RUN[@]}" ucx_info -v >"$T_WORK/info.out" 2>&1
got=$(serving_line "$T_WORK/info.out")
if [ "$got" = "$release libucp's version" ]; then
    pass "ucx_info -v: serving UCX $release, from libucp's version"
else
    fail "ucx_info -v" "serving line '$got', want '$release libucp's version'"
fi

if build_hello; then
    # The server waits for a client: long enough to read its maps (its
    # output line-buffered, as it is killed).
    UCX_LOG_LEVEL=debug "${RUN[@]}" stdbuf -oL "$HELLO" -d lo -t tcp -p "$(free_port)" >"$T_WORK/hello.out" 2>&1 &
    pid=$!
    mapped=
    for _ in $(seq 50); do
        mapped=$(awk '$NF ~ /libuct\.so\.0$/ { print $NF; exit }' "/proc/$pid/maps" 2>/dev/null)
        [ -n "$mapped" ] && grep -q 'serving UCX' "$T_WORK/hello.out" && break
        sleep 0.1
    done
    kill "$pid" 2>/dev/null
    wait "$pid" 2>/dev/null
    got=$(serving_line "$T_WORK/hello.out")
    if [[ $got == "$series".*" libucs's exports" ]]; then
        pass "uct_hello_world: serving UCX $got"
    else
        fail "uct_hello_world" "serving line '$got', want UCX $series.x from libucs's exports"
    fi
    if [ "$mapped" -ef "$UCT_LIBDIR/libuct.so.0" ]; then
        pass "/proc/PID/maps: our libuct.so.0 ($mapped)"
    else
        fail "/proc/PID/maps" "libuct.so.0 mapped from '$mapped', not $UCT_LIBDIR"
    fi
else
    fail "build uct_hello_world"
fi

UCT_RS_UCX_RELEASE=$series UCX_LOG_LEVEL=debug "${RUN[@]}" ucx_info -v >"$T_WORK/same.out" 2>&1
got=$(serving_line "$T_WORK/same.out")
if [[ $got == "$series".*" UCT_RS_UCX_RELEASE" ]]; then
    pass "UCT_RS_UCX_RELEASE=$series: serving UCX $got"
else
    fail "UCT_RS_UCX_RELEASE=$series" "serving line '$got'"
fi

UCT_RS_UCX_RELEASE=1.99 "${RUN[@]}" ucx_info -d >"$T_WORK/bad.out" 2>&1
rc=$?
if [ $rc -lt 128 ] && grep -q "UCX 1.99.0 (UCT_RS_UCX_RELEASE=1.99) is not a release this libuct serves" "$T_WORK/bad.out" &&
   ! grep -q '^# *Transport:' "$T_WORK/bad.out"; then
    pass "UCT_RS_UCX_RELEASE=1.99: refused with an error line, no transport, exit $rc"
else
    tail -n 5 "$T_WORK/bad.out"
    fail "UCT_RS_UCX_RELEASE=1.99" "exit $rc"
fi
finish
