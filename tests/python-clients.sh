#!/usr/bin/env bash
# Python programs over a pip-installed UCX, the way RAPIDS users run them,
# moved onto our library by the launcher ("uct-rs run --ucx python"):
#   ucxx echo      tests/lib/ucxx-echo.py: a server and a client process,
#                  messages of 1 B to 8 MiB with every byte checked, over
#                  UCX_TLS=tcp, sm,tcp and all (ucxx connects through a
#                  listener: the tcp CM needs the tcp devices enabled)
#   dask           tests/lib/dask-ucxx.py: Dask's distributed with the ucxx
#                  comm (scheduler + two workers), a chunked computation
#                  and a broadcast checked against local results
# The packages (ucxx-cu12, distributed-ucxx-cu12 and what they need, with
# the libucx-cu12 1.21.0 wheel) are installed by pip into a virtual
# environment from tests/data/python-clients.txt (--require-hashes), kept
# under ~/.cache/uct-rs/ (UCT_RS_CACHE) for the next run.  Each case runs
# first on the wheel's own C libuct, then on ours: ours must pass what the
# original passes, print no UCX warning or error the original does not, and
# every process of ours must map our libuct.so.0 and a single libucs.
# Usage: tests/python-clients.sh LIBDIR
here=$(cd "$(dirname "$0")" && pwd)
. "$here/lib/common.sh"
. "$here/lib/two-proc.sh"

resolve_libdir "$@"
[ -n "$UCT_LIBDIR" ] || skip_suite "runs Python programs on our library: give LIBDIR"
make_workdir

# The virtual environment, made once per requirements file.
req=$here/data/python-clients.txt
root=${UCT_RS_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/uct-rs}
key=$(sha256sum "$req" | cut -c1-8)
venv=$root/python-clients-$key
if [ ! -e "$venv/.complete" ]; then
    rm -rf "$venv"
    mkdir -p "$root"
    if ! { python3 -m venv "$venv" && "$venv/bin/python" -m pip install --quiet --require-hashes --no-deps \
               -r "$req"; } >"$T_WORK/pip.out" 2>&1; then
        tail -n 5 "$T_WORK/pip.out"
        rm -rf "$venv"
        abort "pip install -r tests/data/python-clients.txt" \
              "needs python3 3.11 with venv and pip, and PyPI (scripts/setup-deps.sh)"
    fi
    touch "$venv/.complete"
fi
PY=$venv/bin/python
pkg=$("$PY" -c 'import os, libucx; print(os.path.dirname(libucx.__file__))')
echo "# Python clients: $venv (UCX $("$PY" -c 'import ucxx; print(".".join(map(str, ucxx.get_ucx_version())))'))"

# The launcher, as tests/launcher.sh finds it; its links go under T_WORK.
launcher=$T_WORK/uct-rs
copy_launcher "$launcher" test -
# SIDE: "original" (the wheel's C libuct) or "ours" (through the launcher)
on() {
    local side=$1
    shift
    if [ "$side" = ours ]; then
        env -u LD_LIBRARY_PATH -u LD_PRELOAD XDG_CACHE_HOME="$T_WORK/cache" UCT_RS_LIBDIR="$UCT_LIBDIR" \
            PYTHON="$PY" "$launcher" run --ucx python -- "$@"
    else
        env -u LD_LIBRARY_PATH -u LD_PRELOAD "$@"
    fi
}
# ucx_lines FILE: the UCX warning and error lines, without time and pid
ucx_lines() {
    sed -n 's/^\[[0-9.]*\] \[[^]]*\] *\([^ ]*\) *UCX  \(WARN\|ERROR\) \(.*\)/\2 \3/p' "$1" | sort -u
}

# echo_case SIDE TLS: the server and the client; "ok" or why not in ECHO
echo_case() {
    local side=$1 tls=$2 pf=$T_WORK/port.$RANDOM spid st
    ECHO=
    on "$side" env UCX_TLS="$tls" timeout 120 "$PY" "$here/lib/ucxx-echo.py" server "$pf" \
        >"$T_WORK/echo.srv" 2>&1 &
    spid=$!
    T_CHILDREN="${T_CHILDREN:-} $spid"
    for _ in $(seq 300); do
        [ -s "$pf" ] && break
        kill -0 "$spid" 2>/dev/null || break
        sleep 0.1
    done
    if [ ! -s "$pf" ]; then
        kill "$spid" 2>/dev/null
        wait "$spid" 2>/dev/null
        ECHO="the server wrote no port: $(tail -n 3 "$T_WORK/echo.srv" | tr '\n' ';')"
        return
    fi
    on "$side" env UCX_TLS="$tls" timeout 120 "$PY" "$here/lib/ucxx-echo.py" client "$(cat "$pf")" \
        >"$T_WORK/echo.cli" 2>&1
    st=$?
    wait "$spid"
    local sst=$?
    cat "$T_WORK/echo.srv" "$T_WORK/echo.cli" >"$T_WORK/echo.$side.out"
    if [ "$st" = 0 ] && [ "$sst" = 0 ] && grep -q "^echo 7/7 sizes intact$" "$T_WORK/echo.cli"; then
        ECHO=ok
    else
        ECHO="server exit $sst, client exit $st: $(grep -v '^\[' "$T_WORK/echo.cli" | tail -n 3 | tr '\n' ';')"
    fi
}

for tls in tcp sm,tcp all; do
    name="ucxx echo UCX_TLS=$tls"
    echo_case original "$tls"
    orig=$ECHO
    echo_case ours "$tls"
    if [ "$orig" != ok ]; then
        echo "# $name: the original fails ($orig); ours: $ECHO"
    elif [ "$ECHO" != ok ]; then
        fail "$name" "$ECHO"
    elif extra=$(comm -13 <(ucx_lines "$T_WORK/echo.original.out") <(ucx_lines "$T_WORK/echo.ours.out")) &&
         [ -n "$extra" ]; then
        fail "$name" "UCX lines the original does not print: $(tr '\n' ';' <<<"$extra")"
    else
        pass "$name: 7 sizes up to 8 MiB intact, as on the original"
    fi
done

name="dask distributed over ucxx"
on original timeout 300 "$PY" "$here/lib/dask-ucxx.py" >"$T_WORK/dask.original" 2>&1
orig_st=$?
on ours timeout 300 "$PY" "$here/lib/dask-ucxx.py" >"$T_WORK/dask.ours" 2>&1
st=$?
maps=$(grep '^maps ' "$T_WORK/dask.ours")
nproc_maps=$(wc -l <<<"$maps")
good_maps=$(awk -v uct="$UCT_LIBDIR/libuct.so.0" -v ucs="$pkg/lib/libucs.so" \
    'NF == 4 && (($3 == uct && $4 == ucs) || ($3 == ucs && $4 == uct)) { n++ } END { print n + 0 }' <<<"$maps")
if [ "$orig_st" != 0 ]; then
    echo "# $name: the original fails (exit $orig_st): $(tail -n 3 "$T_WORK/dask.original" | tr '\n' ';')"
elif [ "$st" != 0 ] || ! grep -qx 'result ok' "$T_WORK/dask.ours" || ! grep -qx 'scatter ok' "$T_WORK/dask.ours"; then
    fail "$name" "exit $st"
    grep -v '^\[' "$T_WORK/dask.ours" | tail -n 25 | sed 's/^/      /'
elif [ "$nproc_maps" != 3 ] || [ "$good_maps" != 3 ]; then
    fail "$name" "not every process maps our libuct and one libucs: $(tr '\n' ';' <<<"$maps")"
elif extra=$(comm -13 <(ucx_lines "$T_WORK/dask.original") <(ucx_lines "$T_WORK/dask.ours")) && [ -n "$extra" ]; then
    fail "$name" "UCX lines the original does not print: $(tr '\n' ';' <<<"$extra")"
else
    pass "$name: results checked; scheduler and both workers on our libuct"
fi
finish
