#!/usr/bin/env bash
# The main job: build libuct.so.0 and run UCX's own clients on it.
# Builds Debian's uct_hello_world example unchanged against the system UCX
# headers and runs it as server + client over our library (posix shared
# memory, AM short and zero-copy), then ucx_info and a ucx_perftest self
# loopback.
set -eu
top=$(cd "$(dirname "$0")/.." && pwd)
libdir=$top/target/libdir
"$top/scripts/cargo-build.sh" "$libdir" release
export LD_LIBRARY_PATH=$libdir
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
ex=/usr/share/doc/libucx-dev/examples
cp "$ex/uct_hello_world.c" "$ex/hello_world_util.h" "$work/"
gcc -O2 -o "$work/uct_hello_world" "$work/uct_hello_world.c" -luct -lucs
for mode in -i -z; do
    port=$((20000 + RANDOM % 10000))
    echo "== uct_hello_world -t posix -d memory $mode (server + client on $libdir/libuct.so.0)"
    timeout 20 "$work/uct_hello_world" -t posix -d memory $mode -p $port &
    server=$!
    sleep 0.5
    timeout 20 "$work/uct_hello_world" -t posix -d memory $mode -p $port -n 127.0.0.1
    wait $server
done
echo "== ucx_info -d (transports)"
ucx_info -d | grep -E 'Memory domain|Transport|Device'
for t in "am_lat -D short" "put_lat -D short" "add_lat"; do
    echo "== ucx_perftest -l -t $t -x self -d memory0"
    # shellcheck disable=SC2086
    ucx_perftest -l -t $t -x self -d memory0 -s 8 -n 100000 -w 1000 -f | tail -n 1
done
