#!/usr/bin/env bash
# Print the dynamic-symbol facts of one UCX release, for
# tests/data/ucx-RELEASE-exports.txt:
#
#   scripts/gen-exports.sh RELEASE UCX_LIBDIR LABEL=OUR_LIBUCT [LABEL=OUR_LIBUCT...]
#   scripts/gen-exports.sh --all [OUR_TARGET]
#
# --all rewrites tests/data/ucx-R-exports.txt for every release R of
# 1.13.1 .. 1.22.0 (the wheels through scripts/setup-ucx-wheel.sh, 1.13.1
# from Debian 12) with our two builds OUR_TARGET/libdir/libuct.so.0 (label
# 1.13) and OUR_TARGET/libdir-1.18/libuct.so.0 (label 1.18); OUR_TARGET
# defaults to target/ of this tree.
#
# UCX_LIBDIR holds the release's libuct.so.0, libucp.so.0 and libucs.so.0
# (Debian 12's /usr/lib/x86_64-linux-gnu for 1.13.1, PREFIX/lib of
# scripts/setup-ucx-wheel.sh for the others).  Each LABEL=OUR_LIBUCT names
# a build of this library (e.g. 1.13=target/libdir/libuct.so.0); the ucs_*
# symbols it imports are looked up in the release's libucs.
#
# Output: '#' comment lines, then three sections, each opened by a line
# "[name]" and holding one symbol a line, sorted (LC_ALL=C), names only
# (no version suffix):
#   [libuct-defined]       every defined dynamic symbol of libuct.so.0
#   [libucp-imports-uct]   the uct_* symbols libucp.so.0 leaves undefined
#   [libucs-used]          NAME <tab> present|absent <tab> LABEL[,LABEL...]:
#                          the ucs_* symbols our builds import, present or
#                          absent among libucs.so.0's defined symbols, and
#                          which builds import each.
# Needs binutils (nm).
set -eu
export LC_ALL=C

here=$(cd "$(dirname "$0")/.." && pwd)
if [ "${1:-}" = --all ]; then
    t=${2:-$here/target}
    for r in 1.13.1 1.14.1.post2 1.15.0.post2 1.16.0.post1 1.17.0 1.18.1 1.19.0 1.20.1 1.21.0 1.22.0; do
        if [ $r = 1.13.1 ]; then lib=/usr/lib/x86_64-linux-gnu; else lib=$("$here/scripts/setup-ucx-wheel.sh" $r)/lib; fi
        "$0" "${r%.post*}" "$lib" "1.13=$t/libdir/libuct.so.0" "1.18=$t/libdir-1.18/libuct.so.0" \
            > "$here/tests/data/ucx-${r%.post*}-exports.txt"
    done
    exit 0
fi
[ $# -ge 3 ] || { sed -n '2,29p' "$0" >&2; exit 2; }
release=$1 libdir=$2
shift 2

defined() { nm -D --defined-only --format=posix "$1" | awk '{sub(/@.*/, "", $1); print $1}' | sort -u; }
undefined() { nm -D --undefined-only --format=posix "$1" | awk '{sub(/@.*/, "", $1); print $1}' | sort -u; }

for f in libuct.so.0 libucp.so.0 libucs.so.0; do
    [ -e "$libdir/$f" ] || { echo "gen-exports: no $libdir/$f" >&2; exit 1; }
done

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
defined "$libdir/libucs.so.0" > "$tmp/ucs"
labels=()
for arg in "$@"; do
    label=${arg%%=*} lib=${arg#*=}
    [ "$label" != "$arg" ] && [ -e "$lib" ] || { echo "gen-exports: want LABEL=LIBUCT, got $arg" >&2; exit 2; }
    undefined "$lib" | grep '^ucs_' | sed "s/\$/ $label/" >> "$tmp/used"
    labels+=("$label")
done

echo "# UCX $release: dynamic symbols of libuct.so.0, libucp.so.0, libucs.so.0."
echo "# Made by scripts/gen-exports.sh --all (or: scripts/gen-exports.sh $release UCX_LIBDIR LABEL=OUR_LIBUCT...);"
echo "# our builds (labels): ${labels[*]}; format: see the script."
echo "[libuct-defined]"
defined "$libdir/libuct.so.0"
echo "[libucp-imports-uct]"
undefined "$libdir/libucp.so.0" | grep '^uct_' || true
echo "[libucs-used]"
sort -k1,1 -k2,2 "$tmp/used" | awk '
    { if ($1 == name) { who = who "," $2 } else { if (name != "") print name, who; name = $1; who = $2 } }
    END { if (name != "") print name, who }' |
while read -r name who; do
    if grep -qxF "$name" "$tmp/ucs"; then st=present; else st=absent; fi
    printf '%s\t%s\t%s\n' "$name" "$st" "$who"
done
