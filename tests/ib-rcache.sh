#!/usr/bin/env bash
# The ib md's registrations on the soft RDMA device (tests/softrdma), one
# process, through the exported API (c-tests/ib_rcache.c, see there):
#  - UCX 1.13: through the registration cache (the same buffer twice = the
#    same handle and key, one device registration; kept after release; a
#    new mapping at the same address = a new registration, the stale one
#    dropped; close with a registration held deregisters all); 1.18:
#    direct registration, one per call;
#  - bad handles: UCS_ERR_INVALID_PARAM (our library only);
#  - "ucx_info -d": the md block of softrdma0 reads as the C original's:
#    the live original's when it has the verbs module, else the one
#    recorded for the release (tests/softrdma/expected/: 1.13.1's
#    ucx_info-d.softrdma0.c-original.txt, 1.22.0's, from a source build
#    with verbs, ucx_info-d.softrdma0.c-1.22.0.txt; 1.18.1: the direct
#    registration cost of its ib md, from its sources).
# (The layout of libucs's registration cache types is checked at compile
# time against every release's table, tests/data/ucx-*-layouts.tsv.)
# Needs what tests/softrdma/run.sh needs (root or user namespaces).
# Usage: tests/ib-rcache.sh [LIBDIR]   (or UCT_LIBDIR; empty = system library)
here=$(cd "$(dirname "$0")" && pwd)
. "$here/lib/common.sh"

resolve_libdir "$@"
need_ib_lib "$UCT_LIBDIR"
if testing_original && ! ref_has_verbs; then
    skip_suite "the UCX $UCX_ABI reference installation has no ib module"
fi
make_workdir
softrdma=$here/softrdma/run.sh
if ! "$softrdma" true >/dev/null 2>"$T_WORK/softrdma.log"; then
    cat "$T_WORK/softrdma.log"
    skip_suite "the soft RDMA device cannot be set up here"
fi

# -rdynamic: the program's ibv_reg_mr/ibv_dereg_mr counters must be what
# the library's calls bind to.
if "$CC" -O2 -g -Wall -rdynamic "${UCX_CFLAGS[@]}" -o "$T_WORK/ib_rcache" "$here/../c-tests/ib_rcache.c" \
        "${UCX_LDFLAGS[@]}" -luct -lucs -ldl 2>"$T_WORK/cc.log"; then
    pass "build ib_rcache"
else
    cat "$T_WORK/cc.log"
    abort "build ib_rcache"
fi

args=()
testing_original && args=(--no-bad-handles)
ldp=$(ld_path_for "$UCT_LIBDIR")
"$softrdma" env ${ldp:+LD_LIBRARY_PATH=$ldp} timeout 120 "$T_WORK/ib_rcache" "${args[@]}" softrdma0 \
    > "$T_WORK/out.txt" 2> "$T_WORK/err.txt"
rc=$?
cat "$T_WORK/out.txt"
summary=$(grep -E '^[0-9]+ passed, [0-9]+ failed$' "$T_WORK/out.txt" | tail -n 1)
if [ -n "$summary" ] && [ "$rc" -eq 0 ]; then
    pass "ib_rcache ($summary)"
else
    cat "$T_WORK/err.txt"
    fail "ib_rcache" "exit $rc${summary:+, $summary}"
fi
if cat "$T_WORK/out.txt" "$T_WORK/err.txt" | grep -q "still registered at close" || testing_original; then
    pass "close with a registration held is reported"
else
    fail "close with a registration held is reported" "no warning"
fi

# The md block of "ucx_info -d": from its header line to the first line
# that is not an md attribute (transports and CM lines follow).
md_block() {
    awk '/^# Memory domain: softrdma0$/ { on = 1 }
         on && (/^#   </ || /^#      Transport:/ || /^# </ || /^#$/) { exit }
         on { print }' "$1"
}
"$softrdma" env ${ldp:+LD_LIBRARY_PATH=$ldp} ucx_info -d > "$T_WORK/info.txt" 2>&1
md_block "$T_WORK/info.txt" > "$T_WORK/md.txt"
recorded=$here/softrdma/expected/ucx_info-d.softrdma0.c-$UCX_RELEASE.txt
[ "$UCX_RELEASE" = 1.13.1 ] && recorded=$here/softrdma/expected/ucx_info-d.softrdma0.c-original.txt
if ref_has_verbs && ! testing_original; then
    "$softrdma" env ${SYS_LDPATH:+LD_LIBRARY_PATH=$SYS_LDPATH} ucx_info -d > "$T_WORK/info.orig.txt" 2>&1
    md_block "$T_WORK/info.orig.txt" > "$T_WORK/md_expected.txt"
    echo "# reference: the live original's md block"
elif [ -f "$recorded" ]; then
    md_block "$recorded" > "$T_WORK/md_expected.txt"
    echo "# reference: $(basename "$recorded")"
else case $UCX_RELEASE in
    1.18.1) cat > "$T_WORK/md_expected.txt" <<'BLOCK'
# Memory domain: softrdma0
#     Component: ib
#             register: unlimited, cost: 16000 + 0.060 * N nsec
#           remote key: 8 bytes
#           local memory handle is required for zcopy
#         memory types: host (access,reg,cache)
BLOCK
    ;;
    *) : > "$T_WORK/md_expected.txt" ;;
esac
fi
if [ ! -s "$T_WORK/md_expected.txt" ]; then
    fail "ucx_info -d md block" "no reference for UCX $UCX_RELEASE"
elif diff -u "$T_WORK/md_expected.txt" "$T_WORK/md.txt"; then
    pass "ucx_info -d md block as the reference ($(sed -n 3p "$T_WORK/md.txt" | sed 's/^# *//'))"
else
    fail "ucx_info -d md block"
fi
finish
