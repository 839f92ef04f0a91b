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
#    for programs run without it);
#  - "uct-rs run --ucx" puts our library under a program that uses a UCX
#    installed with pip (the libucx-cu12 wheel of UCT_RS_PIP_RELEASE, 1.21
#    by default: what `pip install ucxx-cu12` brings), whose libucp finds
#    the wheel's own libuct first: a Python program using the wheel through
#    its loader (tests/lib/pip-ucx-check.py) and the wheel's ucx_perftest,
#    each with our libuct and one libucs mapped; without the launcher the
#    same program maps the wheel's libuct.
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
copy_launcher "$launcher" "$cargo_v" "$releases"
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
# started PID: a child to kill at exit, waited for until it maps a libuct
# (10 s at most)
started() {
    T_CHILDREN="$T_CHILDREN $1"
    for _ in $(seq 100); do
        grep -q libuct "/proc/$1/maps" 2>/dev/null && break
        sleep 0.1
    done
}
mapped_by() { # LABEL EXPECT-REGEX COMMAND-PREFIX...
    local label=$1 want=$2 port pid out
    shift 2
    port=$(free_port)
    "$@" ucx_perftest -p "$port" >"$T_WORK/perf.out" 2>&1 &
    pid=$!
    started "$pid"
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
# A pip-installed UCX: the wheel installed into a virtual environment by
# pip, as a user's would be (its files as pip lays them out: libucs.so,
# libucs.so.0 and libucs.so.0.0.0 are three copies, the libraries keep
# their DT_RPATH).
pip_release=${UCT_RS_PIP_RELEASE:-1.21}
pip_ucx() {
    local wheel venv=$T_WORK/venv
    wheel=$(bash "$top/scripts/setup-ucx-wheel.sh" --wheel "$pip_release") || {
        fail "pip UCX $pip_release" "no wheel (scripts/setup-ucx-wheel.sh --wheel $pip_release)"
        return 1
    }
    python3 -m venv "$venv" >"$T_WORK/venv.out" 2>&1 &&
        "$venv/bin/python" -m pip install --quiet --no-index --no-deps "$wheel" >>"$T_WORK/venv.out" 2>&1 || {
        fail "pip UCX $pip_release" "python3 -m venv / pip install: $(tail -n 3 "$T_WORK/venv.out")"
        return 1
    }
    PIP_UCX=$("$venv/bin/python" -c 'import os, libucx; print(os.path.dirname(libucx.__file__))')
    PIP_PY=$venv/bin/python
}
if pip_ucx; then
    echo "# pip UCX: $PIP_UCX"
    # (the launcher's directory of links goes under the work directory)
    export XDG_CACHE_HOME=$T_WORK/cache
    want_ucs=$PIP_UCX/lib/libucs.so
    out=$(cd "$T_WORK" && PYTHON=$PIP_PY uct_rs run --ucx python -- "$PIP_PY" "$here/lib/pip-ucx-check.py" 2>&1)
    if [[ $out == *"release $pip_release."* ]] && [[ $out == *"worker OK"* ]] &&
       [ "$(grep -c '^libuct ' <<<"$out")" = 1 ] && grep -qx "libuct $UCT_LIBDIR/libuct.so.0" <<<"$out" &&
       [ "$(grep -c '^libucs ' <<<"$out")" = 1 ] && grep -qx "libucs $want_ucs" <<<"$out"; then
        pass "uct-rs run --ucx python: a Python program over the $pip_release wheel maps our libuct and one libucs"
    else
        fail "uct-rs run --ucx python" "$(tr '\n' ';' <<<"$out")"
    fi
    out=$(cd "$T_WORK" && "$PIP_PY" "$here/lib/pip-ucx-check.py" 2>&1)
    if grep -qx "libuct $PIP_UCX/lib/libuct.so" <<<"$out" && [[ $out == *"worker OK"* ]]; then
        pass "the same program without the launcher maps the wheel's libuct"
    else
        fail "the same program without the launcher" "$(tr '\n' ';' <<<"$out")"
    fi
    out=$(uct_rs env --ucx "$PIP_UCX" | tr '\n' ' ')
    if [[ $out == "LD_LIBRARY_PATH="*":$UCT_LIBDIR:$PIP_UCX/lib"*" LD_PRELOAD=$UCT_LIBDIR/libuct.so.0"*" RAPIDS_LIBUCX_PREFER_SYSTEM_LIBRARY=true " ]]; then
        pass "uct-rs env --ucx DIR: $out"
    else
        fail "uct-rs env --ucx DIR" "printed '$out'"
    fi
    # the wheel's own ucx_perftest (its libraries' RPATH names the wheel):
    # a server and a client over tag_bw, the server's maps checked
    perf=$PIP_UCX/bin/ucx_perftest
    port=$(free_port)
    UCT_RS_LIBDIR=$UCT_LIBDIR "$launcher" run --ucx "$PIP_UCX" "$perf" -t tag_bw -p "$port" >"$T_WORK/pip-srv.out" 2>&1 &
    pid=$!
    started "$pid"
    maps=$(uct_rs which "$pid")
    ucs_maps=$(grep -E '/libucs\.so' "/proc/$pid/maps" 2>/dev/null | awk '{ print $NF }' | sort -u | tr '\n' ' ')
    cli=$(uct_rs run --ucx "$PIP_UCX" timeout 60 "$perf" -t tag_bw -p "$port" -n 2000 127.0.0.1 2>&1)
    st=$?
    wait "$pid" 2>/dev/null
    if [ "$st" = 0 ] && [[ $cli == *"Final:"* ]] && [[ $maps =~ ^[0-9]+:\ $UCT_LIBDIR/libuct\.so\.0\ \(uct-rs\)$ ]] &&
       [ "$ucs_maps" = "$want_ucs " ]; then
        pass "uct-rs run --ucx DIR: the wheel's ucx_perftest tag_bw on our libuct ($maps; libucs $ucs_maps)"
    else
        fail "uct-rs run --ucx DIR, the wheel's ucx_perftest" "exit $st, maps '$maps', libucs '$ucs_maps': $(tail -n 3 <<<"$cli" | tr '\n' ';')"
    fi
fi
finish
