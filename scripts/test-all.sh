#!/usr/bin/env bash
# Run every test: meson builds the library (through cargo) and the C tests,
# then `meson test` runs cargo test, the header and layout checks, the export
# and SONAME check, the C probes (LD_LIBRARY_PATH and LD_PRELOAD), the
# bad-input table, ucx_perftest/ucx_info/uct_hello_world over our library.
# Ends with "N passed, M failed" (meson tests) and a non-zero exit on failure.
set -u
top=$(cd "$(dirname "$0")/.." && pwd)
build=${BUILD_DIR:-$top/build}
if [ -f "$build/build.ninja" ]; then
    meson setup --reconfigure "$build" "$top" >/dev/null || exit 1
else
    meson setup "$build" "$top" >/dev/null || exit 1
fi
meson compile -C "$build" || { echo "0 passed, 1 failed"; exit 1; }
meson test -C "$build" --print-errorlogs --num-processes 1
rc=$?
# Summarise from meson's machine-readable log.
python3 - "$build/meson-logs/testlog.json" <<'PY'
import json, re, sys
# Count the cases inside each meson test where it reports them ("N passed,
# M failed" lines, cargo's "test result:" lines); a test without counts
# counts as one case.
passed = failed = 0
for line in open(sys.argv[1]):
    r = json.loads(line)
    out = r.get("stdout", "") or ""
    ok = r.get("result") in ("OK", "EXPECTEDFAIL", "SKIP")
    cargo = re.findall(r"test result: \w+\. (\d+) passed; (\d+) failed", out)
    plain = re.findall(r"^(\d+) passed, (\d+) failed$", out, re.M)
    if cargo:
        p, f = sum(int(a) for a, _ in cargo), sum(int(b) for _, b in cargo)
    elif plain:
        p, f = int(plain[-1][0]), int(plain[-1][1])
    else:
        p, f = (1, 0) if ok else (0, 1)
    if not ok and f == 0:
        f = 1
    passed += p
    failed += f
    print(f"{r.get('name'):20s} {r.get('result'):8s} {p:5d} passed, {f:3d} failed")
print(f"{passed} passed, {failed} failed")
PY
exit $rc
