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
. "$here/lib/api-probe.sh"

resolve_libdir "$@"
make_workdir

need_c "$T_WORK/api_self" "$here/../c-tests/api_self.c"
api_probe_system "$T_WORK/api_self"

"${RUN[@]}" timeout 60 "$T_WORK/api_self" >"$T_WORK/cand.out" 2>&1
cand_rc=$?
grep '^api: ' "$T_WORK/cand.out" >"$T_WORK/cand.txt"
api_probe_verdict $cand_rc "$T_WORK/cand.out" "probe on the tested library"

# Make sure the run above really used the library under test.
"${RUN[@]}" env UCT_PROBE_SHOW_PROVIDER=1 timeout 60 "$T_WORK/api_self" \
    >"$T_WORK/prov.out" 2>&1
prov=$(sed -n 's/^provider: //p' "$T_WORK/prov.out" | head -n 1)
if same_file "$prov" "$UCT_LIB"; then
    pass "uct_iface_open comes from $UCT_LIB"
else
    fail "library under test was loaded" "uct_iface_open from '$prov'"
fi

api_probe_same "$T_WORK/cand.txt" "identical output"

finish
