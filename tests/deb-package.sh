#!/usr/bin/env bash
# The Debian packages end to end, on this machine's own system (root; it
# installs the packages and takes them away again, and for a while makes
# ours the system's libuct.so.0: nothing else may use UCX meanwhile):
#  1. dpkg-buildpackage -us -uc -b of a copy of the source tree; lintian
#     with no error (its warnings are printed);
#  2. libuct-rs0 + uct-rs-tools installed: programs started as usual still
#     load Debian's libuct.so.0 (uct_hello_world, checked in its
#     /proc/PID/maps); through "uct-rs run" uct_hello_world, ucp_hello_world
#     and an Open MPI job (c-tests/mpi_check.c: ping-pong with checked data
#     and more, each rank printing the libuct it mapped) run on ours;
#  3. uct-rs-system installed: the ld.so cache names ours first, and the
#     same Open MPI job with no environment set runs on ours; removed: on
#     Debian's again, and the link in /etc/ld.so.conf.d is gone;
#  4. all purged: nothing of ours left (dpkg -L, ldconfig -p, the private
#     directory, the launcher, diversions).
# The packages are purged on exit whatever happened.
# Usage: tests/deb-package.sh   (run by scripts/test-all.sh with UCT_RS_DEB_TEST=1;
#        needs debhelper, devscripts, lintian, Open MPI: scripts/setup-deps.sh)
here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/.." && pwd)
. "$here/lib/common.sh"
. "$here/lib/two-proc.sh"

[ -z "$UCX_PREFIX" ] || skip_suite "the packages are built for the system's UCX"
[ "$(id -u)" = 0 ] || skip_suite "installs packages: needs root"
for tool in dpkg-buildpackage lintian mpicc.openmpi mpirun.openmpi apt-get; do
    command -v "$tool" >/dev/null || abort "$tool" "not installed (scripts/setup-deps.sh)"
done
PKGS=(libuct-rs0 uct-rs-tools uct-rs-system)
for p in "${PKGS[@]}"; do
    if dpkg-query -W -f '${db:Status-Status}\n' "$p" 2>/dev/null | grep -qv '^not-installed$'; then
        abort "clean system" "$p is installed already: purge it first"
    fi
done
make_workdir
MA=$(dpkg-architecture -qDEB_HOST_MULTIARCH)
PRIV=/usr/lib/$MA/uct-rs
OURLIB=$PRIV/libuct.so.0
SYSLIB=$(readlink -f "$UCT_SYSTEM_LIB")
# purge_ours: purge those of our packages dpkg knows (apt refuses a name
# it has no record of, and a removed .deb is gone from its records)
purge_ours() {
    local p known=()
    for p in "${PKGS[@]}"; do
        dpkg-query -W -f '${db:Status-Status}\n' "$p" 2>/dev/null | grep -qv '^not-installed$' && known+=("$p")
    done
    [ ${#known[@]} -eq 0 ] && return 0
    DEBIAN_FRONTEND=noninteractive apt-get purge -y "${known[@]}" >"$T_WORK/purge.log" 2>&1
}
cleanup_all() {
    purge_ours
    cleanup_workdir
}
trap cleanup_all EXIT

# ---------------------------------------------------------------- 1. build
# copy_tree DIR: the source tree (what git tracks or would track) in DIR
copy_tree() {
    mkdir -p "$1"
    (cd "$top" && git ls-files -co --exclude-standard | tar -cf - -T -) | tar -xf - -C "$1"
}
copy_tree "$T_WORK/src/uct-rs"
if (cd "$T_WORK/src/uct-rs" && dpkg-buildpackage -us -uc -b) >"$T_WORK/build.log" 2>&1; then
    pass "dpkg-buildpackage -us -uc -b"
else
    tail -n 20 "$T_WORK/build.log"
    abort "dpkg-buildpackage" "failed (above)"
fi
VERSION=$(sed -n '1s/^uct-rs (\([^)]*\)).*/\1/p' "$top/debian/changelog")
ARCH=$(dpkg-architecture -qDEB_HOST_ARCH)
deb() { echo "$T_WORK/src/${1}_${VERSION}_$ARCH.deb"; }
lintian "$T_WORK/src/uct-rs_${VERSION}_$ARCH.changes" >"$T_WORK/lintian.out" 2>&1
grep -v 'running with root privileges' "$T_WORK/lintian.out" | sed 's/^/# lintian: /'
if grep -q '^E: ' "$T_WORK/lintian.out"; then
    fail "lintian" "errors: $(grep -c '^E: ' "$T_WORK/lintian.out")"
else
    pass "lintian: no errors ($(grep -c '^W: ' "$T_WORK/lintian.out") warnings)"
fi

# One package for every served release: libuct-rs0 depends on libucx0 from
# the oldest served release up to the newest series (ucx-releases.txt).
oldest=$(awk '!/^#/ && NF == 6 { print $2; exit }' "$top/ucx-releases.txt")
after=$(awk '!/^#/ && NF == 6 { m = $1 } END { print "1." m + 1 }' "$top/ucx-releases.txt")
deps=$(dpkg-deb -f "$(deb libuct-rs0)" Depends 2>/dev/null)
if [[ $deps == "libucx0 (>= $oldest), libucx0 (<< $after~)"* ]]; then
    pass "libuct-rs0 Depends $deps"
else
    fail "libuct-rs0 Depends" "'$deps', want libucx0 (>= $oldest), libucx0 (<< $after~)"
fi

install_debs() { # DEB...
    DEBIAN_FRONTEND=noninteractive apt-get install -y "$@" >"$T_WORK/install.log" 2>&1
}

# first_cache_entry: the libuct.so.0 the loader takes from its cache
first_cache_entry() {
    ldconfig -p | awk '$1 == "libuct.so.0" { print $NF; exit }'
}

# ----------------------------------------------- programs and what they map
build_hello || abort "build uct_hello_world" "see above"
cp "$UCX_EXAMPLES/ucp_hello_world.c" "$UCX_EXAMPLES/ucp_util.h" "$T_WORK/"
"$CC" -O2 -o "$T_WORK/ucp_hello_world" "$T_WORK/ucp_hello_world.c" -lucp -lucs -luct 2>"$T_WORK/cc.log" ||
    abort "build ucp_hello_world" "$(head -n 3 "$T_WORK/cc.log")"
mpicc.openmpi -O2 -o "$T_WORK/mpi_check" "$top/c-tests/mpi_check.c" 2>"$T_WORK/cc.log" ||
    abort "build mpi_check" "$(head -n 3 "$T_WORK/cc.log")"
pass "build uct_hello_world, ucp_hello_world, mpi_check"

# maps_of PID: the libuct.so files PID has mapped, one line
maps_of() {
    awk '$NF ~ /\/libuct\.so/ { print $NF }' "/proc/$1/maps" 2>/dev/null | sort -u | tr '\n' ' ' | sed 's/ $//'
}

# pair LABEL WANT-LIB PROG [PREFIX...]: PROG's server and client (the
# server started with PREFIX, the client too), the server's maps read while
# it waits for the client; passes when both exit 0 and the server had
# WANT-LIB mapped.
pair() {
    local label=$1 want=$2 prog=$3 port spid cpid maps=
    shift 3
    local args=()
    [ "$prog" = "$HELLO" ] && args=(-t posix -d memory -s 20)
    port=$(free_port)
    env -u LD_LIBRARY_PATH -u LD_PRELOAD "$@" timeout 60 "$prog" "${args[@]}" -p "$port" \
        >"$T_WORK/srv.out" 2>&1 </dev/null &
    spid=$!
    T_CHILDREN=$spid
    if ! wait_listening "$spid" "$port"; then
        fail "$label" "the server did not listen: $(tail -n 2 "$T_WORK/srv.out")"
        return
    fi
    # timeout(1) is the listener's parent: read the program's own maps
    maps=$(maps_of "$(pgrep -P "$spid" | head -n 1)")
    env -u LD_LIBRARY_PATH -u LD_PRELOAD "$@" timeout 60 "$prog" "${args[@]}" -p "$port" -n 127.0.0.1 \
        >"$T_WORK/cli.out" 2>&1 </dev/null
    local cst=$?
    wait "$spid"
    local sst=$?
    T_CHILDREN=
    if [ $sst -ne 0 ] || [ $cst -ne 0 ]; then
        fail "$label" "server exit $sst, client exit $cst: $(tail -n 2 "$T_WORK/cli.out")"
    elif [ "$maps" != "$want" ]; then
        fail "$label" "the server mapped '$maps', not $want"
    else
        pass "$label: ran on $maps"
    fi
}

# mpi LABEL WANT-LIB [PREFIX...]: mpi_check over Open MPI's pml and osc ucx,
# two ranks, PREFIX (if any) in front of each rank; both ranks must report
# WANT-LIB.
MCA=(--allow-run-as-root --oversubscribe -np 2 --mca pml ucx --mca pml_ucx_tls any --mca pml_ucx_devices any
     --mca btl "^vader,tcp,openib,uct" --mca osc ucx)
mpi() {
    local label=$1 want=$2
    shift 2
    env -u LD_LIBRARY_PATH -u LD_PRELOAD timeout 180 mpirun.openmpi "${MCA[@]}" "$@" "$T_WORK/mpi_check" --maps \
        >"$T_WORK/mpi.out" 2>&1 </dev/null
    local st=$? libs
    libs=$(sed -n 's/^mpi_check: rank [0-9]* libuct //p' "$T_WORK/mpi.out" | sort | uniq -c | awk '{ print $1 "x " $2 }' |
           tr '\n' ' ' | sed 's/ $//')
    if [ $st -ne 0 ] || ! grep -q '^mpi_check: OK' "$T_WORK/mpi.out"; then
        fail "$label" "exit $st: $(grep -m 1 -iE 'error|fail' "$T_WORK/mpi.out")"
    elif [ "$libs" != "2x $want" ]; then
        fail "$label" "the ranks mapped: $libs (not $want)"
    else
        pass "$label: mpi_check OK, both ranks on $want"
    fi
}

# ------------------------------------------- 2. the library and the launcher
if install_debs "$(deb libuct-rs0)" "$(deb uct-rs-tools)"; then
    pass "apt-get install libuct-rs0 uct-rs-tools"
else
    tail -n 5 "$T_WORK/install.log"
    abort "install" "apt-get failed (above)"
fi
if [[ $(dpkg -S "$OURLIB" 2>/dev/null) =~ ^libuct-rs0(:$ARCH)?:\ $OURLIB$ ]] && [ "$(first_cache_entry)" != "$OURLIB" ] &&
   ! ldconfig -p | grep -q "$PRIV"; then
    pass "libuct-rs0 owns $OURLIB, which is not in the ld.so cache"
else
    fail "private library" "dpkg -S: $(dpkg -S "$OURLIB" 2>&1); cache: $(ldconfig -p | grep libuct.so.0)"
fi
out=$(uct-rs --version)
releases=$(awk '!/^#/ && NF == 6 { r[++n] = "1." $1 } END { print r[1] " to " r[n] }' "$top/ucx-releases.txt")
if [ "$out" = "uct-rs $VERSION (serves UCX $releases; library $OURLIB)" ]; then
    pass "uct-rs --version: $out"
else
    fail "uct-rs --version" "printed '$out'"
fi
if [ "$(dpkg -S /usr/share/man/man1/uct-rs.1.gz 2>&1)" = "uct-rs-tools: /usr/share/man/man1/uct-rs.1.gz" ]; then
    pass "uct-rs-tools has the man page uct-rs(1)"
else
    fail "man page" "$(dpkg -S /usr/share/man/man1/uct-rs.1.gz 2>&1)"
fi
pair "uct_hello_world without the launcher" "$SYSLIB" "$HELLO"
pair "uct_hello_world via uct-rs run" "$OURLIB" "$HELLO" uct-rs run
pair "ucp_hello_world via uct-rs run" "$OURLIB" "$T_WORK/ucp_hello_world" uct-rs run
mpi "Open MPI, each rank via uct-rs run" "$OURLIB" uct-rs run
mpi "Open MPI, mpirun -x LD_LIBRARY_PATH" "$OURLIB" -x "LD_LIBRARY_PATH=$PRIV"
mpi "Open MPI, no launcher" "$SYSLIB"

# ----------------------------------------------------- 3. the system switch
if install_debs "$(deb uct-rs-system)"; then
    pass "apt-get install uct-rs-system"
else
    tail -n 5 "$T_WORK/install.log"
    fail "install uct-rs-system" "apt-get failed (above)"
fi
if [ "$(first_cache_entry)" = "$OURLIB" ]; then
    pass "uct-rs-system: the ld.so cache resolves libuct.so.0 to $OURLIB"
else
    fail "uct-rs-system: ld.so cache" "$(ldconfig -p | grep libuct.so.0)"
fi
owner=$(dpkg -S /etc/ld.so.conf.d/00-uct-rs.conf 2>&1)
[ "$owner" = "uct-rs-system: /etc/ld.so.conf.d/00-uct-rs.conf" ] && pass "dpkg -S: $owner" || fail "dpkg -S" "$owner"
mpi "Open MPI with uct-rs-system, no environment" "$OURLIB"
pair "uct_hello_world with uct-rs-system" "$OURLIB" "$HELLO"
if DEBIAN_FRONTEND=noninteractive apt-get remove -y uct-rs-system >"$T_WORK/remove.log" 2>&1; then
    pass "apt-get remove uct-rs-system"
else
    fail "apt-get remove uct-rs-system" "$(tail -n 2 "$T_WORK/remove.log")"
fi
if [ ! -e /etc/ld.so.conf.d/00-uct-rs.conf ] && [ ! -L /etc/ld.so.conf.d/00-uct-rs.conf ] &&
   [ "$(first_cache_entry)" != "$OURLIB" ] && ! ldconfig -p | grep -q "$PRIV"; then
    pass "removed: the link is gone, the ld.so cache resolves libuct.so.0 to $(first_cache_entry)"
else
    fail "removed uct-rs-system" "$(ls -l /etc/ld.so.conf.d/); $(ldconfig -p | grep libuct.so.0)"
fi
mpi "Open MPI after removing uct-rs-system" "$SYSLIB"

# ------------------------------------------------------------------ 4. purge
if purge_ours; then
    pass "apt-get purge ${PKGS[*]}"
else
    fail "apt-get purge" "$(tail -n 2 "$T_WORK/purge.log")"
fi
left=
for p in "${PKGS[@]}"; do
    dpkg -L "$p" >/dev/null 2>&1 && left="$left package:$p"
done
[ -e "$PRIV" ] && left="$left $PRIV"
[ -e /usr/bin/uct-rs ] && left="$left /usr/bin/uct-rs"
ldconfig -p | grep -q "$PRIV" && left="$left ld.so-cache"
dpkg-divert --list 2>/dev/null | grep -q uct && left="$left diversion"
if [ -z "$left" ] && [ "$(readlink -f "$(first_cache_entry)")" = "$SYSLIB" ]; then
    pass "purged: nothing of ours left; libuct.so.0 is Debian's ($SYSLIB)"
else
    fail "purged" "left:$left; cache: $(ldconfig -p | grep libuct.so.0)"
fi
finish
