#!/usr/bin/env bash
# Run every test: meson builds the library (through cargo) and the C tests,
# then `meson test` runs cargo test, the header and layout checks, the export
# and SONAME check, the C probes (LD_LIBRARY_PATH and LD_PRELOAD), the
# bad-input table, ucx_perftest/ucx_info/uct_hello_world over our library.
# That for each UCX ABI in turn:
#   1.13  build/ (BUILD_DIR): Debian 12's system UCX 1.13.1, every test
#   1.18  build-1.18/ (BUILD_DIR_1_18): the library built for UCX 1.18,
#         tested against the UCX 1.18.1 wheel (scripts/setup-ucx-wheel.sh,
#         or UCX_PREFIX_1_18=DIR): cargo test and clippy under that ABI's
#         cfg, the layout check and the suites (those that apply to 1.18;
#         the others skip); not the fuzzing and header steps, which do not
#         depend on the ABI
# Then, as root, the Debian packages (tests/deb-package.sh; UCT_RS_DEB_TEST=0
# leaves them out).
# UCT_RS_ABIS="1.13" (or "1.18") runs only those.  Ends with
# "N passed, M failed" over all of them and a non-zero exit on failure.
set -u
top=$(cd "$(dirname "$0")/.." && pwd)
abis=${UCT_RS_ABIS:-1.13 1.18}
logs=()      # LABEL=testlog.json per build that ran its tests
extra_fail=0 # builds that could not be set up or compiled
rc=0

# run_build LABEL DIR [meson setup options...]
run_build() {
    local label=$1 build=$2
    shift 2
    echo "=== UCX ABI $label: $build"
    if [ -f "$build/build.ninja" ]; then
        meson setup --reconfigure "$build" "$top" "$@" >/dev/null
    else
        meson setup "$build" "$top" "$@" >/dev/null
    fi || { echo "meson setup failed ($label)"; extra_fail=$((extra_fail + 1)); rc=1; return; }
    meson compile -C "$build" || {
        echo "meson compile failed ($label)"
        extra_fail=$((extra_fail + 1))
        rc=1
        return
    }
    meson test -C "$build" --print-errorlogs --num-processes 1 || rc=1
    logs+=("$label=$build/meson-logs/testlog.json")
}

for abi in $abis; do
    case $abi in
        1.13) run_build 1.13 "${BUILD_DIR:-$top/build}" ;;
        1.18)
            prefix=${UCX_PREFIX_1_18:-}
            if [ -z "$prefix" ]; then
                prefix=$(bash "$top/scripts/setup-ucx-wheel.sh" 1.18.1) || {
                    echo "setup-ucx-wheel.sh 1.18.1 failed"
                    extra_fail=$((extra_fail + 1))
                    rc=1
                    continue
                }
            fi
            run_build 1.18 "${BUILD_DIR_1_18:-$top/build-1.18}" -Ducx-abi=1.18 -Ducx-prefix="$prefix" ;;
        *) echo "unknown UCX ABI '$abi' in UCT_RS_ABIS"; extra_fail=$((extra_fail + 1)); rc=1 ;;
    esac
done

# The Debian packages (tests/deb-package.sh): built, checked with lintian,
# installed, used through the launcher and the system switch, purged. It
# changes the system while it runs, so it runs alone, after the builds, and
# only as root (UCT_RS_DEB_TEST=0 leaves it out).
if [ "${UCT_RS_DEB_TEST:-1}" != 0 ] && [ "$(id -u)" = 0 ] && [[ " $abis " == *" 1.13 "* ]]; then
    echo "=== Debian packages"
    deb_log=${BUILD_DIR:-$top/build}/deb-package.log
    UCX_PREFIX_1_18=${prefix:-${UCX_PREFIX_1_18:-}} bash "$top/tests/deb-package.sh" >"$deb_log" 2>&1
    deb_rc=$?
    cat "$deb_log"
    [ $deb_rc -eq 0 ] || [ $deb_rc -eq 77 ] || rc=1
    python3 - "$deb_log" "$deb_rc" "${deb_log%.log}.json" <<'PY'
import json, sys
out = open(sys.argv[1], errors="replace").read()
rc = int(sys.argv[2])
result = "OK" if rc == 0 else ("SKIP" if rc == 77 else "FAIL")
with open(sys.argv[3], "w") as f:
    f.write(json.dumps({"name": "deb-package", "result": result, "stdout": out}) + "\n")
PY
    logs+=("deb=${deb_log%.log}.json")
fi

# Summarise from meson's machine-readable logs.
python3 - "$extra_fail" "${logs[@]}" <<'PY'
import json, re, sys
# Count the cases inside each meson test where it reports them ("N passed,
# M failed" lines, cargo's "test result:" lines); a test without counts
# counts as one case.
passed, failed = 0, int(sys.argv[1])
several = len(sys.argv) > 3
for arg in sys.argv[2:]:
    label, path = arg.split("=", 1)
    for line in open(path):
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
        # meson names a tagged test "project:tag+tag / name": keep the name
        name, width = r.get("name", "").rsplit(" / ", 1)[-1], 20
        if several:
            name, width = f"{label}/{name}", 25
        print(f"{name:{width}s} {r.get('result'):8s} {p:5d} passed, {f:3d} failed")
print(f"{passed} passed, {failed} failed")
PY
exit $rc
