#!/usr/bin/env bash
# What libucp reads from libuct, A/B: build c-tests/v2_probe.c against the
# system headers, run it on the system libuct.so.0 and on LIBDIR's, and
# require identical output: md attributes (flags, memory types, rkey size,
# reg_cost), interface attributes (cap flags, priority, address lengths,
# overhead, latency, bandwidth, size limits), uct_iface_estimate_perf of
# every supported operation, uct_md_mkey_pack_v2 / uct_md_mem_dereg_v2, and
# a uct_config_modify of an unknown key that must fail.
# The one expected difference is this project's zero-copy on posix and sysv
# (README): before the comparison, both outputs have, in the posix and sysv
# blocks, the AM/put/get zcopy capability bits cleared, the AM zcopy limits
# and the zcopy perf lines removed, and the md's reg_mem_types dropped.
# Usage: tests/v2-probe.sh [LIBDIR]     (or UCT_LIBDIR=...; empty = system)
here=$(cd "$(dirname "$0")" && pwd)
. "$here/lib/common.sh"

resolve_libdir "$@"
make_workdir

if build_c "$T_WORK/v2_probe" "$here/../c-tests/v2_probe.c" 2>"$T_WORK/cc.log"; then
    pass "build v2_probe"
else
    cat "$T_WORK/cc.log"
    abort "build v2_probe"
fi

# the zero-copy extension of posix and sysv, masked (see above)
mask_extension() {
    python3 - "$1" <<'PY'
import re, sys
mm = False
ours_only = False
for line in open(sys.argv[1]):
    line = line.rstrip("\n")
    if line.startswith("md "):
        mm = line.split()[1] in ("posix", "sysv")
        # posix_get: a rendezvous lane only two libraries of ours share (README)
        ours_only = line.split()[1] == "posix_get"
    if ours_only:
        continue
    if mm:
        if line.startswith("  flags "):
            line = re.sub(r" reg_mem \S+", " reg_mem -", line)
        elif line.startswith("    flags "):
            f = line.split()
            f[1] = hex(int(f[1], 16) & ~0x444)
            line = "    " + " ".join(f)
        elif line.startswith("    am short "):
            line = re.sub(r" zcopy \d+ hdr \d+", " zcopy - hdr -", line)
        elif re.match(r"    perf (am|put|get)_zcopy ", line):
            continue
    print(line)
PY
}

"${SYS_RUN[@]}" timeout 60 "$T_WORK/v2_probe" >"$T_WORK/ref.out" 2>&1
ref_rc=$?
if [ $ref_rc -eq 0 ]; then pass "probe on the system library (exit 0)"
else fail "probe on the system library" "exit status $ref_rc"; tail -n 5 "$T_WORK/ref.out"; fi

"${RUN[@]}" timeout 60 "$T_WORK/v2_probe" >"$T_WORK/cand.out" 2>&1
cand_rc=$?
if [ $cand_rc -eq 0 ]; then pass "probe on the tested library (exit 0)"
else fail "probe on the tested library" "exit status $cand_rc"; tail -n 5 "$T_WORK/cand.out"; fi

mask_extension "$T_WORK/ref.out" >"$T_WORK/ref.txt"
mask_extension "$T_WORK/cand.out" >"$T_WORK/cand.txt"
n=$(grep -c '' "$T_WORK/ref.txt")
if [ "$n" -lt 20 ]; then
    fail "identical output" "the reference printed only $n lines"
else
    diff_verdict "$T_WORK/ref.txt" "$T_WORK/cand.txt" \
        "identical attributes, estimate_perf, mkey_pack_v2, mem_dereg_v2, config_modify ($n lines)" \
        "identical output" "differs:" 60
fi
finish
