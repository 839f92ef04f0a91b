#!/usr/bin/env bash
# Run every test: meson builds the library (through cargo) and the C tests,
# then `meson test` runs cargo test, the header and layout checks, the export
# and SONAME check, the C probes (LD_LIBRARY_PATH and LD_PRELOAD), the
# bad-input table, ucx_perftest/ucx_info/uct_hello_world over our library.
# One library serves every UCX release (ucx-releases.txt); it is built once
# (the build directories share one cargo target) and tested against:
#   the full tier      UCT_RS_FULL (default "1.13"): 1.13 is Debian 12's
#                      system UCX (build/), every other release its PyPI
#                      wheel (build-1.N/, scripts/setup-ucx-wheel.sh);
#   the conformance    UCT_RS_CONFORMANCE (default: every other release):
#   tier               the layout, ucx_info, UCT perftest, libucp and mixed
#                      ours/C suites (meson -Dtier=conformance).
# Fuzzing, clippy and the header check run once, in the system build.
# Then, as root, the Debian packages (tests/deb-package.sh; UCT_RS_DEB_TEST=0
# leaves them out).  Ends with "N passed, M failed" over all of them and a
# non-zero exit on failure.
set -u
top=$(cd "$(dirname "$0")/.." && pwd)
served=$(awk '!/^#/ && NF == 6 { printf "1.%s ", $1 }' "$top/ucx-releases.txt")
full=${UCT_RS_FULL:-1.13}
if [ -n "${UCT_RS_CONFORMANCE+set}" ]; then
    conformance=$UCT_RS_CONFORMANCE
else
    conformance=
    for r in $served; do
        [[ " $full " == *" $r "* ]] || conformance="$conformance $r"
    done
fi
cargo_target=${UCT_RS_CARGO_TARGET:-$top/build/cargo-target}
logs=()      # LABEL=testlog.json per build that ran its tests
extra_fail=0 # builds that could not be set up or compiled
rc=0

# run_build LABEL DIR [meson setup options...]
run_build() {
    local label=$1 build=$2
    shift 2
    echo "=== UCX $label: $build"
    if [ -f "$build/build.ninja" ]; then
        meson setup --reconfigure "$build" "$top" -Dcargo-target-dir="$cargo_target" "$@" >/dev/null
    else
        meson setup "$build" "$top" -Dcargo-target-dir="$cargo_target" "$@" >/dev/null
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

# release_build RELEASE TIER: the build directory of one release.
release_build() {
    local r=$1 tier=$2 prefix
    if [ "$r" = 1.13 ]; then
        run_build "$r" "${BUILD_DIR:-$top/build}" -Dtier="$tier"
        return
    fi
    prefix=$(bash "$top/scripts/setup-ucx-wheel.sh" "$r") || {
        echo "setup-ucx-wheel.sh $r failed"
        extra_fail=$((extra_fail + 1))
        rc=1
        return
    }
    run_build "$r" "$top/build-$r" -Ducx-prefix="$prefix" -Dtier="$tier"
}

for r in $full; do
    release_build "$r" all
done
for r in $conformance; do
    release_build "$r" conformance
done

# The Debian packages (tests/deb-package.sh): built, checked with lintian,
# installed, used through the launcher and the system switch, purged. It
# changes the system while it runs, so it runs alone, after the builds, and
# only as root (UCT_RS_DEB_TEST=0 leaves it out).
if [ "${UCT_RS_DEB_TEST:-1}" != 0 ] && [ "$(id -u)" = 0 ] && [[ " $full " == *" 1.13 "* ]]; then
    echo "=== Debian packages"
    deb_log=${BUILD_DIR:-$top/build}/deb-package.log
    bash "$top/tests/deb-package.sh" >"$deb_log" 2>&1
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
