#!/usr/bin/env bash
# Compare the ABI described by our generated header (include/uct-rs/uct_abi.h)
# with the real UCX headers of one release and with its reference layout
# table.
#
#   tests/layout-check.sh                   UCX 1.13.1: the installed
#                                           (Debian 12) headers
#   UCX_ABI=1.18 UCX_INCLUDE=DIR tests/layout-check.sh   (or UCX_PREFIX=DIR: DIR/include)
#                                           UCX 1.18.1: DIR is the include
#                                           directory of a 1.18.1 install
#                                           (e.g. the PyPI wheel's
#                                           libucx/include); our header is
#                                           compiled in its 1.18 mode
#                                           (UCT_RS_UCX_ABI_MINOR=18)
#   UCX_V2_INCLUDE=DIR2 ...                 DIR2 holds uct/api/v2/uct_v2.h
#                                           (from the release's sources): the
#                                           system build then also has the v2
#                                           items and compares them directly
#   UCX_V2_INCLUDE=DIR2 ... --update-v2-ref rewrite the release's
#                                           tests/data/ucx-<release>-v2-probe.txt
#
# UCX_ABI is a release series of ucx-releases.txt (default 1.13);
# UCX_INCLUDE may also be given for 1.13 (default: the compiler's search
# path).
#
# What is compared (each comparison counts as one item):
#   1. c-tests/layout_probe.c built against the real headers and against
#      ours: every sizeof/alignof/signedness/offsetof/member size and every
#      constant printed by the real build must be printed identically by
#      ours.
#   2. Items only our build prints (uct_v2.h, which UCX does not install)
#      must match tests/data/ucx-<release>-v2-probe.txt (or the real build
#      when UCX_V2_INCLUDE is set).
#   3. Every row of tests/data/ucx-<release>-layouts.tsv must match our build.
#   4. With gdb available: a structural signature (member offsets and types,
#      full function-pointer signatures) of every public type of src/abi is
#      extracted from the debug info of both builds and compared.
# The last line is "N passed, 0 failed" on success; mismatches are listed
# and the exit status is 1 otherwise.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
abi=${UCX_ABI:-1.13}
minor=${abi#1.}
release=$(awk -v m="$minor" '!/^#/ && NF == 6 && $1 == m { print $2 }' "$root/ucx-releases.txt")
if [ -z "$release" ]; then
    echo "layout-check: UCX_ABI '$abi' is not a release of ucx-releases.txt" >&2
    exit 2
fi
if [ "$minor" != 13 ]; then
    # The installation under test (tests/lib/common.sh's UCX_PREFIX).
    if [ -z "${UCX_INCLUDE:-}" ] && [ -n "${UCX_PREFIX:-}" ]; then
        UCX_INCLUDE=$UCX_PREFIX/include
    fi
    if [ -z "${UCX_INCLUDE:-}" ]; then
        echo "layout-check: UCX_ABI=$abi needs UCX_INCLUDE (the include dir of UCX $release)" >&2
        exit 2
    fi
fi
tsv="$root/tests/data/ucx-$release-layouts.tsv"
v2ref="$root/tests/data/ucx-$release-v2-probe.txt"
update_v2_ref=0
[ "${1:-}" = "--update-v2-ref" ] && update_v2_ref=1

work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

cc="${CC:-gcc}"
cflags=(-std=gnu11 -O0 -g -fno-eliminate-unused-debug-types
        -Wall -Wextra -Wno-type-limits -Werror -I"$root/c-tests"
        -DUCT_RS_UCX_ABI_MINOR=$minor)

# --- build and run both probes ---------------------------------------------
sys_inc=()
# -isystem: the real headers are not warning-clean under -Wextra -Werror.
[ -n "${UCX_INCLUDE:-}" ] && sys_inc=(-isystem "$UCX_INCLUDE")
sys_extra=()
if [ -n "${UCX_V2_INCLUDE:-}" ]; then
    sys_extra=(-DPROBE_HAVE_V2 -isystem "$UCX_V2_INCLUDE")
elif [ "$update_v2_ref" = 1 ]; then
    echo "layout-check: --update-v2-ref needs UCX_V2_INCLUDE" >&2
    exit 2
fi
"$cc" "${cflags[@]}" -DPROBE_SYSTEM ${sys_inc[@]+"${sys_inc[@]}"} \
    ${sys_extra[@]+"${sys_extra[@]}"} \
    "$root/c-tests/layout_probe.c" -o "$work/probe_system"
"$cc" "${cflags[@]}" -I"$root/include" \
    "$root/c-tests/layout_probe.c" -o "$work/probe_ours"
"$work/probe_system" > "$work/system.txt"
"$work/probe_ours" > "$work/ours.txt"

# --- structural signatures through gdb's view of the debug info -------------
have_gdb=0
if command -v gdb >/dev/null 2>&1 &&
   gdb -nx -batch -ex 'python import gdb' >/dev/null 2>&1; then
    have_gdb=1
    grep -hoE '^pub (struct|union|type) [A-Za-z0-9_]+' "$root"/src/abi/*.rs |
        awk '{print $3}' |
        # libucs's string buffer is mirrored by size only (it is only ever
        # passed by pointer, to libucs; its last member is a bit field).
        grep -vxE 'ucs_string_buffer(_t)?' > "$work/sig_names.txt"
    for m in system ours; do
        gdb -nx -batch -ex "python SIG_NAMES='$work/sig_names.txt'" \
            -x "$root/c-tests/abi_signatures.py" "$work/probe_$m" \
            > "$work/sig_$m.txt" 2> "$work/gdb_$m.log" || {
            cat "$work/gdb_$m.log" >&2; exit 1; }
        grep '^sig(' "$work/sig_$m.txt" >> "$work/$m.txt" || true
    done
fi

if [ "$update_v2_ref" = 1 ]; then
    # Items the v2-enabled system build prints but a plain one would not:
    # rebuild without v2 to find them.
    "$cc" "${cflags[@]}" -DPROBE_SYSTEM ${sys_inc[@]+"${sys_inc[@]}"} \
        "$root/c-tests/layout_probe.c" -o "$work/probe_plain"
    "$work/probe_plain" > "$work/plain.txt"
    if [ "$have_gdb" = 1 ]; then
        gdb -nx -batch -ex "python SIG_NAMES='$work/sig_names.txt'" \
            -x "$root/c-tests/abi_signatures.py" "$work/probe_plain" |
            grep '^sig(' >> "$work/plain.txt" || true
    fi
    {
        echo "# Probe output of c-tests/layout_probe.c for the uct_v2.h items (the lines"
        echo "# that only appear when the real UCX $release src/uct/api/v2/uct_v2.h is"
        if [ "$minor" = 13 ]; then
            echo "# included: -DPROBE_SYSTEM -DPROBE_HAVE_V2). Debian does not install that"
            echo "# header, so tests/layout-check.sh compares our v2 output with this file."
            echo "# Regenerate: UCX_V2_INCLUDE=<dir with uct/api/v2/uct_v2.h> tests/layout-check.sh --update-v2-ref"
        else
            echo "# included: -DPROBE_SYSTEM -DPROBE_HAVE_V2 -DUCT_RS_UCX_ABI_MINOR=$minor). UCX"
            echo "# installs do not ship that header, so tests/layout-check.sh compares our"
            echo "# v2 output with this file. Regenerate: UCX_ABI=$UCX_ABI UCX_INCLUDE=<include dir>"
            echo "# UCX_V2_INCLUDE=<dir with uct/api/v2/uct_v2.h> tests/layout-check.sh --update-v2-ref"
        fi
        grep -vxF -f "$work/plain.txt" "$work/system.txt"
    } > "$v2ref"
    echo "layout-check: wrote ${v2ref#$root/}"
fi

# --- compare ----------------------------------------------------------------
echo "layout-check: UCX $release"
python3 - "$work/system.txt" "$work/ours.txt" "$v2ref" "$tsv" "$have_gdb" <<'PY'
import os
import sys

system_path, ours_path, v2ref_path, tsv_path, have_gdb = sys.argv[1:6]
v2ref_name = os.path.relpath(v2ref_path, os.path.dirname(os.path.dirname(os.path.dirname(tsv_path))))


def load(path):
    items = {}
    with open(path, encoding="utf-8") as f:
        for line in f:
            line = line.rstrip("\n")
            if not line or line.startswith("#"):
                continue
            key, _, value = line.partition(" ")
            if key in items and items[key] != value:
                sys.exit(f"layout-check: {path}: conflicting values for {key}")
            items[key] = value
    return items


system = load(system_path)
ours = load(ours_path)
v2ref = load(v2ref_path)

# Types our header leaves out (cbindgen.toml's exclude list: the library's
# own libucs types, checked at compile time against the same tables) and
# the members the Rust types spell differently.
import re
root = os.path.dirname(os.path.dirname(os.path.dirname(tsv_path)))
with open(os.path.join(root, "cbindgen.toml"), encoding="utf-8") as f:
    m = re.search(r"^exclude = \[(.*?)\]", f.read(), re.S | re.M)
not_in_header = set(re.findall(r'"([^"]+)"', m.group(1))) if m else set()
not_in_header |= {"ucs_rcache_config_t"}

passed = 0
failed = []
skipped = []


def excerpt(a, b, width=60):
    """Short views of two long strings around their first difference."""
    if len(a) <= 2 * width and len(b) <= 2 * width:
        return a, b
    i = 0
    while i < min(len(a), len(b)) and a[i] == b[i]:
        i += 1
    lo = max(0, i - width // 2)
    cut = lambda s: ("..." if lo else "") + s[lo:lo + width] + ("..." if lo + width < len(s) else "")
    return cut(a), cut(b)


def check(key, expected, where):
    global passed
    got = ours.get(key)
    if got is None:
        failed.append(f"{key}: missing from our build (expected {expected!r}, {where})")
    elif got != expected:
        g, e = excerpt(got, expected)
        failed.append(f"{key}: ours {g!r} != {e!r} ({where})")
    else:
        passed += 1


def not_comparable(value):
    # The system headers leave these types incomplete or do not name them.
    return value in ("<missing>", "struct(opaque)", "union(opaque)")


# 1. everything the system build prints
for key, value in system.items():
    if key.startswith("sig(") and not_comparable(value):
        continue
    if key.startswith("sig(") and key[4:-1] in not_in_header:
        continue
    check(key, value, "system headers")

# 2. items only our build prints
for key, value in ours.items():
    sysval = system.get(key)
    if sysval is not None and not (key.startswith("sig(") and not_comparable(sysval)):
        continue  # compared above
    if key in v2ref:
        check(key, v2ref[key], v2ref_name)
    elif key.startswith("sig(") and value == "<missing>":
        # A type of src/abi that this release does not have (our header
        # declares it for other releases only): nothing to compare.
        pass
    elif key.startswith("sig("):
        # Names we invented for anonymous nested types, and opaque types:
        # covered through the enclosing struct's signature.
        skipped.append(key)
    else:
        failed.append(f"{key}: printed only by our build and not in any reference")

# 3. the reference layout table
with open(tsv_path, encoding="utf-8") as f:
    next(f)
    for line in f:
        line = line.rstrip("\n")
        if not line:
            continue
        header, ty, field, ctype, off, size = line.split("\t")
        where = f"TSV {ty} {field}"
        if ty in not_in_header or field.startswith("(anon)"):
            continue
        if field in ("(whole)", "(scalar)"):
            check(f"sizeof({ty})", str(int(size, 0)), where)
        elif field == "(const)":
            for name, value in zip(ty.split("/"), size.split("/")):
                # Constants the probe does not print (libucs's own, not
                # in the UCT headers) are checked at compile time only.
                if name in ours or name in system:
                    check(name, str(int(value, 0)), where)
        else:
            check(f"offsetof({ty},{field})", str(int(off, 0)), where)
            if int(size, 0) != 0:  # a flexible array member has no size
                check(f"fieldsize({ty},{field})", str(int(size, 0)), where)

if failed:
    print("MISMATCHES:")
    for msg in failed:
        print("  " + msg)
notes = []
if skipped:
    notes.append(f"{len(skipped)} signatures without a C counterpart not compared")
if have_gdb != "1":
    notes.append("gdb with Python not found: signature comparison skipped")
for n in notes:
    print("note: " + n)
print(f"{passed} passed, {len(failed)} failed")
sys.exit(1 if failed else 0)
PY
