#!/usr/bin/env bash
# The launcher (packaging/uct-rs.in, installed as uct-rs) and the versions:
#  - Cargo.toml, meson.build and debian/changelog carry one version, and
#    "uct-rs --version" prints it with the UCX releases the library serves
#    (ucx-releases.txt);
#  - "uct-rs run" puts LIBDIR first on LD_LIBRARY_PATH (and, with
#    --preload, its libuct.so.0 in LD_PRELOAD) and returns the command's exit
#    status; "uct-rs env" prints the same settings;
#  - "uct-rs which PID" names the libuct.so.0 a process has mapped: ours for
#    ucx_perftest started through "uct-rs run", the system's for the same
#    program started without it (installing the launcher changes nothing
#    for programs run without it).
# The launcher is the one meson configured ($UCT_TEST_BINDIR/uct-rs) or,
# without a meson build, the template filled in the same way.
# Usage: tests/launcher.sh [LIBDIR]
here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/.." && pwd)
. "$here/lib/common.sh"
. "$here/lib/two-proc.sh"

resolve_libdir "$@"
[ -n "$UCT_LIBDIR" ] || skip_suite "the launcher runs our library: give LIBDIR"
command -v ucx_perftest >/dev/null || abort "ucx_perftest" "not installed (apt-get install ucx-utils)"
make_workdir

releases=$(awk '!/^#/ && NF == 6 { r[++n] = "1." $1 } END { print r[1] " to " r[n] }' "$top/ucx-releases.txt")
cargo_v=$(sed -n 's/^version *= *"\(.*\)"/\1/p' "$top/Cargo.toml" | head -n 1)
meson_v=$(awk '/^project\(/ { p = 1 } p && /version *:/ { gsub(/.*version *: *'"'"'|'"'"'.*/, ""); print; exit }' \
          "$top/meson.build")
deb_v=$(sed -n '1s/^uct-rs (\([^)]*\)).*/\1/p' "$top/debian/changelog")
if [ -n "$cargo_v" ] && [ "$cargo_v" = "$meson_v" ] && [ "$cargo_v" = "$deb_v" ]; then
    pass "one version: Cargo.toml, meson.build and debian/changelog say $cargo_v"
else
    fail "one version" "Cargo.toml '$cargo_v', meson.build '$meson_v', debian/changelog '$deb_v'"
fi

launcher=$T_WORK/uct-rs
if [ -n "${UCT_TEST_BINDIR:-}" ] && [ -f "$UCT_TEST_BINDIR/uct-rs" ]; then
    cp "$UCT_TEST_BINDIR/uct-rs" "$launcher"
    echo "# launcher: $UCT_TEST_BINDIR/uct-rs"
else
    sed -e "s|@VERSION@|$cargo_v|g" -e "s|@UCX_RELEASES@|$releases|g" -e "s|@UCT_LIBDIR@|$UCT_LIBDIR|g" \
        "$top/packaging/uct-rs.in" >"$launcher"
    echo "# launcher: packaging/uct-rs.in, filled in"
fi
chmod +x "$launcher"
uct_rs() { UCT_RS_LIBDIR=$UCT_LIBDIR "$launcher" "$@"; }

out=$(uct_rs --version 2>&1)
if [[ $out == "uct-rs $cargo_v (serves UCX $releases; library $UCT_LIBDIR/libuct.so.0)" ]]; then
    pass "uct-rs --version: $out"
else
    fail "uct-rs --version" "printed '$out'"
fi

out=$(LD_LIBRARY_PATH=/x LD_PRELOAD= uct_rs run sh -c 'echo "$LD_LIBRARY_PATH|${LD_PRELOAD:-}"')
if [ "$out" = "$UCT_LIBDIR:/x|" ]; then
    pass "uct-rs run: LIBDIR first on LD_LIBRARY_PATH, nothing preloaded"
else
    fail "uct-rs run" "the command saw '$out'"
fi
# (preloaded into sh, the library needs its libucs: that of the UCX under
# test, SYS_LDPATH with another installation)
out=$("${SYS_RUN[@]}" ${SYS_LDPATH:+LD_LIBRARY_PATH=$SYS_LDPATH} UCT_RS_LIBDIR="$UCT_LIBDIR" "$launcher" run --preload -- \
      sh -c 'echo "$LD_LIBRARY_PATH|$LD_PRELOAD"')
if [ "$out" = "$UCT_LIBDIR${SYS_LDPATH:+:$SYS_LDPATH}|$UCT_LIBDIR/libuct.so.0" ]; then
    pass "uct-rs run --preload: the library in LD_PRELOAD too"
else
    fail "uct-rs run --preload" "the command saw '$out'"
fi
uct_rs run sh -c 'exit 7'
st=$?
if [ "$st" = 7 ]; then pass "uct-rs run: the command's exit status"; else fail "uct-rs run exit status" "$st, not 7"; fi
out=$(env -u LD_LIBRARY_PATH -u LD_PRELOAD UCT_RS_LIBDIR="$UCT_LIBDIR" "$launcher" env --preload | tr '\n' ' ')
if [ "$out" = "LD_LIBRARY_PATH=$UCT_LIBDIR LD_PRELOAD=$UCT_LIBDIR/libuct.so.0 " ]; then
    pass "uct-rs env --preload: $out"
else
    fail "uct-rs env --preload" "printed '$out'"
fi
out=$(UCT_RS_LIBDIR=$T_WORK/none "$launcher" run true 2>&1)
st=$?
if [ "$st" = 2 ] && [[ $out == *"not found"* ]]; then
    pass "uct-rs run without the library: exit 2 and a message"
else
    fail "uct-rs run without the library" "exit $st: $out"
fi

# which: a ucx_perftest server (it waits for a client) started both ways.
T_CHILDREN=${T_CHILDREN:-}
mapped_by() { # LABEL EXPECT-REGEX COMMAND-PREFIX...
    local label=$1 want=$2 port pid out
    shift 2
    port=$(free_port)
    "$@" ucx_perftest -p "$port" >"$T_WORK/perf.out" 2>&1 &
    pid=$!
    T_CHILDREN="$T_CHILDREN $pid"
    for _ in $(seq 100); do
        grep -q libuct "/proc/$pid/maps" 2>/dev/null && break
        sleep 0.1
    done
    out=$(uct_rs which "$pid")
    kill "$pid" 2>/dev/null
    wait "$pid" 2>/dev/null
    if [[ $out =~ $want ]]; then
        pass "uct-rs which, $label: $out"
    else
        fail "uct-rs which, $label" "printed '$out', expected /$want/"
    fi
}
# (the environment of the original, SYS_RUN; with another UCX installation
# that is its library directory, which the launcher puts ours in front of)
mapped_by "started with uct-rs run" "^[0-9]+: $UCT_LIBDIR/libuct\.so\.0 \(uct-rs\)$" \
    "${SYS_RUN[@]}" ${SYS_LDPATH:+LD_LIBRARY_PATH=$SYS_LDPATH} UCT_RS_LIBDIR="$UCT_LIBDIR" "$launcher" run
sys_real=$(readlink -f "$UCT_SYSTEM_LIB")
mapped_by "started without it" "^[0-9]+: ($UCT_SYSTEM_LIB|$sys_real)$" "${SYS_RUN[@]}"
finish
