#!/usr/bin/env bash
# A/B test of the "self" transport API: build c-tests/api_self.c against the
# UCX headers under test, run it once on the original libuct.so.0 and once
# with LIBDIR's, and require exit status 0 from both and identical result
# lines ("api: ...").  On a release other than 1.13 (UCX_PREFIX) the probe's
# 1.13 expectations that the original does not meet may fail: then ours must
# fail them the same way (same exit status, identical lines).
# Usage: tests/api-self.sh [LIBDIR]     (or UCT_LIBDIR=...; empty = system)
here=$(cd "$(dirname "$0")" && pwd)
. "$here/lib/common.sh"

resolve_libdir "$@"
make_workdir

if build_c "$T_WORK/api_self" "$here/../c-tests/api_self.c" 2>"$T_WORK/cc.log"; then
    pass "build api_self"
else
    cat "$T_WORK/cc.log"
    abort "build api_self"
fi

# Reference: the system library, with any inherited LD_LIBRARY_PATH removed.
"${SYS_RUN[@]}" timeout 60 "$T_WORK/api_self" \
    >"$T_WORK/ref.out" 2>&1
ref_rc=$?
grep '^api: ' "$T_WORK/ref.out" >"$T_WORK/ref.txt"
if [ $ref_rc -eq 0 ]; then
    pass "probe on the system library (exit 0)"
elif [ "$UCX_ABI" != 1.13 ] && [ $ref_rc -eq 1 ] && [ -s "$T_WORK/ref.txt" ]; then
    # the probe's expectations are UCX 1.13's (e.g. the self device name):
    # on another release the original misses some; ours must miss the same
    # ones (the exit status and the identical lines below)
    pass "probe on the system library (UCX $UCX_RELEASE: $(grep -c '^api: FAIL' "$T_WORK/ref.txt") checks of 1.13 do not hold; compared line by line)"
else
    grep '^api: FAIL' "$T_WORK/ref.out"
    fail "probe on the system library" "exit status $ref_rc"
fi

"${RUN[@]}" timeout 60 "$T_WORK/api_self" >"$T_WORK/cand.out" 2>&1
cand_rc=$?
grep '^api: ' "$T_WORK/cand.out" >"$T_WORK/cand.txt"
if [ $cand_rc -eq 0 ]; then
    pass "probe on the tested library (exit 0)"
elif [ "$UCX_ABI" != 1.13 ] && [ $cand_rc -eq $ref_rc ]; then
    pass "probe on the tested library (exit $cand_rc, as the original)"
else
    grep '^api: FAIL' "$T_WORK/cand.out"
    tail -n 5 "$T_WORK/cand.out"
    fail "probe on the tested library" "exit status $cand_rc"
fi

# Make sure the run above really used the library under test.
"${RUN[@]}" env UCT_PROBE_SHOW_PROVIDER=1 timeout 60 "$T_WORK/api_self" \
    >"$T_WORK/prov.out" 2>&1
prov=$(sed -n 's/^provider: //p' "$T_WORK/prov.out" | head -n 1)
if same_file "$prov" "$UCT_LIB"; then
    pass "uct_iface_open comes from $UCT_LIB"
else
    fail "library under test was loaded" "uct_iface_open from '$prov'"
fi

if [ -s "$T_WORK/ref.txt" ] && diff -u "$T_WORK/ref.txt" "$T_WORK/cand.txt" \
        >"$T_WORK/diff.txt"; then
    pass "identical output ($(wc -l <"$T_WORK/ref.txt") lines)"
else
    cat "$T_WORK/diff.txt"
    fail "identical output"
fi

finish
