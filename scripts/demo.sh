#!/usr/bin/env bash
# The main job: build libuct.so.0 and run UCX's own clients on it.
# Today the self transport is the one that works end to end, so this runs
# ucx_perftest's self loopback (AM, put, atomics) and ucx_info over our
# library; uct_hello_world needs two processes (shared memory or tcp) and
# joins this script when those transports land.
set -eu
top=$(cd "$(dirname "$0")/.." && pwd)
libdir=$top/target/libdir
"$top/scripts/cargo-build.sh" "$libdir" release
export LD_LIBRARY_PATH=$libdir
echo "== ucx_info -d (self) over $libdir/libuct.so.0"
ucx_info -d | sed -n '/Memory domain: self/,/error handling/p'
for t in "am_lat -D short" "am_lat -D bcopy" "put_lat -D short" "get -D bcopy" "add_lat" "fadd"; do
    echo "== ucx_perftest -l -t $t -x self -d memory0"
    # shellcheck disable=SC2086
    ucx_perftest -l -t $t -x self -d memory0 -s 8 -n 100000 -w 1000 -f | tail -n 1
done
