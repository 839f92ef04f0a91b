#!/usr/bin/env bash
# A reference UCX installation of another release, from the PyPI wheel
# libucx-cu12 (pinned by version and sha256): downloaded with pip, unpacked
# into a cache directory and made runnable; prints the prefix (the directory
# holding bin/ lib/ include/ share/), e.g. for UCX_PREFIX / -Ducx-prefix.
#
#   scripts/setup-ucx-wheel.sh 1.18.1
#   UCX_PREFIX=$(scripts/setup-ucx-wheel.sh 1.18.1)
#   scripts/setup-ucx-wheel.sh --wheel 1.21   (the wheel file itself, as
#                                             pip would install it)
#
# VERSION is the exact PyPI version, suffix included (1.14.1.post2, ...;
# see `known` below).  Each pinned version has a single x86_64 wheel on PyPI
# (tagged manylinux_2_28_x86_64, from 1.19 on
# manylinux_2_24_x86_64.manylinux_2_28_x86_64), the one pip picks on an
# x86_64 host with glibc 2.28 or later; its sha256 is the pinned one.
#
# Cache: ${UCT_RS_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/uct-rs}/ucx-VERSION-SHA8/
# (SHA8: the first 8 digits of the wheel's sha256) holds the wheel's tree as
# it is: the prefix is its libucx/ directory, next to libucx_cu12.libs/ (the
# libraries the wheel bundles, which ucx_perftest finds through its RPATH
# $ORIGIN/../../libucx_cu12.libs).  Safe to run again:
# nothing is downloaded when the cache holds the prefix or the wheel.
# UCX_WHEEL_FILE=PATH uses an already downloaded wheel (its sha256 is checked
# all the same).  Needs python3 with pip; nothing else.
#
# Making the wheel's files runnable:
#  - a wheel (a zip) does not keep permissions as pip's unpacking would:
#    the mode bits recorded in the archive are put back, and bin/* and
#    the shared objects are made executable;
#  - the programs' RUNPATH names the wheel's build machine: run them with
#    LD_LIBRARY_PATH=PREFIX/lib (tests/lib/common.sh does);
#  - the libraries carry DT_RPATH ($ORIGIN...), which the loader searches
#    before LD_LIBRARY_PATH: a program linked with libucp alone (the
#    linker drops -luct when the program calls no uct function) would load
#    the wheel's libuct.so.0 as libucp's dependency even with ours first on
#    LD_LIBRARY_PATH. Each DT_RPATH tag in lib/ is made DT_RUNPATH (same
#    paths, searched after LD_LIBRARY_PATH, as for a distribution's
#    libraries); done on a prefix unpacked before this step too (marker
#    lib/.uct-rs-runpath);
#  - ucx_perftest of 1.17.0 and 1.18.x stops in the dynamic loader before
#    main: its .dynamic section lies on a page that a following read-only
#    PT_LOAD maps too, so the loader's write into .dynamic faults.  The fix
#    sets the write flag in that PT_LOAD's program header (one byte
#    changes, nothing moves); applied to every program, only where needed,
#    idempotent.  With it, every pinned release runs ucx_info -v/-d and a
#    loopback ucx_perftest.
set -eu

want=prefix
if [ "${1:-}" = --wheel ]; then
    want=wheel
    shift
fi

# The pins live in ucx-releases.txt (columns: minor ref wheel sha256 marker).
# VERSION is a wheel version (1.14.1.post2), a reference release (1.14.1) or
# a series (1.14).
list="$(cd "$(dirname "$0")/.." && pwd)/ucx-releases.txt"
known=$(awk '!/^#/ && NF == 6 && $3 != "-" { printf "%s ", $3 }' "$list")
arg=${1:?usage: setup-ucx-wheel.sh VERSION   (a wheel version, release or series of ucx-releases.txt; known: $known)}
row=$(awk -v v="$arg" '!/^#/ && NF == 6 && $3 != "-" && ($3 == v || $2 == v || "1." $1 == v) { print $3, $4; exit }' "$list")
if [ -z "$row" ]; then
    echo "setup-ucx-wheel: no pinned libucx-cu12 wheel for $arg in ucx-releases.txt (known: $known)" >&2
    exit 2
fi
version=${row% *}
sha=${row#* }

root=${UCT_RS_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/uct-rs}
dir=$root/ucx-$version-${sha:0:8}
prefix=$dir/libucx
# rpath_to_runpath DIR: every DT_RPATH of the shared objects under DIR
# becomes DT_RUNPATH (see above); then the marker.
rpath_to_runpath() {
    python3 - "$1" <<'PY'
import os, struct, sys

DT_NULL, DT_RPATH, DT_RUNPATH, PT_DYNAMIC = 0, 15, 29, 2

def patch(path):
    with open(path, "r+b") as f:
        ehdr = f.read(64)
        if ehdr[:4] != b"\x7fELF" or ehdr[4] != 2 or ehdr[5] != 1:
            return 0
        phoff, = struct.unpack_from("<Q", ehdr, 32)
        phentsize, phnum = struct.unpack_from("<HH", ehdr, 54)
        f.seek(phoff)
        table = f.read(phentsize * phnum)
        for i in range(phnum):
            p_type, _fl, off, _va, _pa, filesz, _ms = struct.unpack_from("<IIQQQQQ", table, i * phentsize)
            if p_type != PT_DYNAMIC:
                continue
            f.seek(off)
            dyn = f.read(filesz)
            tags = [struct.unpack_from("<Q", dyn, k)[0] for k in range(0, len(dyn) - 15, 16)]
            if DT_RUNPATH in tags:
                return 0
            changed = 0
            for k, tag in enumerate(tags):
                if tag == DT_NULL:
                    break
                if tag == DT_RPATH:
                    f.seek(off + 16 * k)
                    f.write(struct.pack("<Q", DT_RUNPATH))
                    changed += 1
            return changed
    return 0

n = 0
for dirpath, _, names in os.walk(sys.argv[1]):
    for name in names:
        p = os.path.join(dirpath, name)
        if ".so" in name and not os.path.islink(p):
            n += patch(p)
open(os.path.join(sys.argv[1], ".uct-rs-runpath"), "w").close()
print(f"setup-ucx-wheel: {n} DT_RPATH tag(s) made DT_RUNPATH", file=sys.stderr)
PY
}

if [ $want = prefix ] && [ -x "$prefix/bin/ucx_info" ] && [ -e "$prefix/lib/libuct.so.0" ]; then
    [ -e "$prefix/lib/.uct-rs-runpath" ] || rpath_to_runpath "$prefix/lib"
    echo "$prefix"
    exit 0
fi

mkdir -p "$root/wheels"
sha_of() { python3 -c 'import hashlib,sys; print(hashlib.sha256(open(sys.argv[1],"rb").read()).hexdigest())' "$1"; }

wheel=${UCX_WHEEL_FILE:-}
if [ -z "$wheel" ]; then
    wheel=$(ls "$root/wheels"/libucx_cu12-"$version"-*.whl 2>/dev/null | head -n 1 || true)
    if [ -z "$wheel" ] || [ "$(sha_of "$wheel")" != "$sha" ]; then
        dl=$(mktemp -d "$root/wheels/.dl.XXXXXX")
        trap 'rm -rf "$dl"' EXIT
        python3 -m pip download --quiet --no-deps --only-binary=:all: \
            --dest "$dl" "libucx-cu12==$version" >&2
        got=$(ls "$dl"/libucx_cu12-"$version"-*.whl 2>/dev/null | head -n 1 || true)
        [ -n "$got" ] || { echo "setup-ucx-wheel: pip fetched no libucx-cu12 $version wheel" >&2; exit 1; }
        wheel=$root/wheels/$(basename "$got")
        mv -f "$got" "$wheel"
    fi
fi
have=$(sha_of "$wheel")
if [ "$have" != "$sha" ]; then
    echo "setup-ucx-wheel: $wheel: sha256 $have, expected $sha" >&2
    exit 1
fi
if [ $want = wheel ]; then
    echo "$wheel"
    exit 0
fi

# Unpack beside the final place, make it runnable, then rename: a prefix
# that exists is complete.
tmp=$(mktemp -d "$root/.unpack.XXXXXX")
trap 'rm -rf "$tmp" ${dl:+"$dl"}' EXIT
python3 - "$wheel" "$tmp" <<'PY'
import os, stat, struct, sys, zipfile

wheel, dest = sys.argv[1], sys.argv[2]
with zipfile.ZipFile(wheel) as z:
    for info in z.infolist():
        path = z.extract(info, dest)
        mode = (info.external_attr >> 16) & 0o7777
        if mode and not info.is_dir():
            os.chmod(path, mode)

top = os.path.join(dest, "libucx")
for sub, want_exec in (("bin", lambda n: True), ("lib", lambda n: ".so" in n)):
    for dirpath, _, names in os.walk(os.path.join(top, sub)):
        for n in names:
            p = os.path.join(dirpath, n)
            if want_exec(n) and not os.path.islink(p):
                os.chmod(p, os.stat(p).st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)

PT_LOAD, PT_DYNAMIC, PF_W, PAGE = 1, 2, 2, 4096

def fix_dynamic_page(path):
    """Give PF_W to each read-only PT_LOAD that maps the page holding
    PT_DYNAMIC. Returns the number of headers changed (0: nothing to do)."""
    with open(path, "r+b") as f:
        ehdr = f.read(64)
        if ehdr[:4] != b"\x7fELF" or ehdr[4] != 2 or ehdr[5] != 1:
            return 0  # not a little-endian 64-bit ELF file
        phoff, = struct.unpack_from("<Q", ehdr, 32)
        phentsize, phnum = struct.unpack_from("<HH", ehdr, 54)
        f.seek(phoff)
        table = f.read(phentsize * phnum)
        phdrs = []
        for i in range(phnum):
            p_type, p_flags, _off, vaddr, _pa, _fsz, memsz = struct.unpack_from(
                "<IIQQQQQ", table, i * phentsize)
            phdrs.append((i, p_type, p_flags, vaddr, memsz))
        dyn = [h for h in phdrs if h[1] == PT_DYNAMIC]
        if not dyn:
            return 0
        page = dyn[0][3] & ~(PAGE - 1)
        changed = 0
        for i, p_type, p_flags, vaddr, memsz in phdrs:
            if p_type != PT_LOAD or p_flags & PF_W or memsz == 0:
                continue
            first = vaddr & ~(PAGE - 1)
            end = (vaddr + memsz + PAGE - 1) & ~(PAGE - 1)
            if first <= page < end:
                f.seek(phoff + i * phentsize + 4)
                f.write(struct.pack("<I", p_flags | PF_W))
                changed += 1
        return changed

bindir = os.path.join(top, "bin")
for n in sorted(os.listdir(bindir)):
    if fix_dynamic_page(os.path.join(bindir, n)):
        print(f"setup-ucx-wheel: {n}: write flag set on the PT_LOAD over .dynamic", file=sys.stderr)
PY
[ -x "$tmp/libucx/bin/ucx_info" ] || { echo "setup-ucx-wheel: the wheel has no libucx/bin/ucx_info" >&2; exit 1; }
rpath_to_runpath "$tmp/libucx/lib"
rm -rf "$dir"
mv "$tmp" "$dir"
echo "$prefix"
