#!/usr/bin/env bash
# LD_PRELOAD test: the api_self probe, linked against the original libuct.so.0,
# is started with LD_PRELOAD=$UCT_LIBDIR/libuct.so.0 (the system library
# itself when UCT_LIBDIR is empty).  Its result lines must equal those of a
# plain run on the system library, and the dynamic linker must bind
# uct_iface_open to the preloaded file (checked twice: through dladdr plus
# /proc/self/maps inside the probe, and through LD_DEBUG=bindings).
# Usage: tests/preload.sh [LIBDIR]     (or UCT_LIBDIR=...; empty = system)
here=$(cd "$(dirname "$0")" && pwd)
. "$here/lib/common.sh"
. "$here/lib/api-probe.sh"

resolve_libdir "$@"
make_workdir
probe=$T_WORK/api_self

need_c "$probe" "$here/../c-tests/api_self.c"

# The probe must be linked against the system library for this test to mean
# anything: without LD_PRELOAD it resolves libuct.so.0 to the system file.
linked=$("${SYS_RUN[@]}" ldd "$probe" |
         awk '$1 == "libuct.so.0" { print $3 }')
if same_file "$linked" "$UCT_SYSTEM_LIB"; then
    pass "probe links the system libuct.so.0"
else
    fail "probe links the system libuct.so.0" "ldd says '$linked'"
fi

clean_env=("${SYS_RUN[@]}")

api_probe_system "$probe"

"${clean_env[@]}" LD_PRELOAD="$UCT_LIB" timeout 60 "$probe" \
    >"$T_WORK/pre.out" 2>&1
pre_rc=$?
grep '^api: ' "$T_WORK/pre.out" >"$T_WORK/pre.txt"
api_probe_verdict $pre_rc "$T_WORK/pre.out" "probe with LD_PRELOAD"

api_probe_same "$T_WORK/pre.txt" "identical output with LD_PRELOAD"

# 1) What the probe sees from the inside.
"${clean_env[@]}" LD_PRELOAD="$UCT_LIB" UCT_PROBE_SHOW_PROVIDER=1 \
    timeout 60 "$probe" >"$T_WORK/prov.out" 2>&1
prov=$(sed -n 's/^provider: //p' "$T_WORK/prov.out" | head -n 1)
if same_file "$prov" "$UCT_LIB"; then
    pass "dladdr: uct_iface_open is in the preloaded library"
else
    fail "dladdr: uct_iface_open is in the preloaded library" "found in '$prov'"
fi
others=0
while read -r m; do
    same_file "$m" "$UCT_LIB" || others=$((others + 1))
done < <(sed -n 's/^mapped: //p' "$T_WORK/prov.out")
if grep -q '^mapped: ' "$T_WORK/prov.out" && [ $others -eq 0 ]; then
    pass "/proc/self/maps: only the preloaded libuct is mapped"
else
    grep '^mapped: ' "$T_WORK/prov.out"
    fail "/proc/self/maps: only the preloaded libuct is mapped" \
         "$others other libuct file(s) mapped"
fi

# 2) What the dynamic linker reports.
"${clean_env[@]}" LD_PRELOAD="$UCT_LIB" LD_DEBUG=bindings \
    LD_DEBUG_OUTPUT="$T_WORK/ld" timeout 60 "$probe" >/dev/null 2>&1
to=$(cat "$T_WORK"/ld.* 2>/dev/null |
     grep "binding file $probe .*symbol \`uct_iface_open'" |
     sed -n 's/.* to \(.*\) \[[0-9]*\]: .*/\1/p' | head -n 1)
if same_file "$to" "$UCT_LIB"; then
    pass "LD_DEBUG=bindings: uct_iface_open bound to the preloaded library"
else
    fail "LD_DEBUG=bindings: uct_iface_open bound to the preloaded library" \
         "bound to '$to'"
fi

finish
