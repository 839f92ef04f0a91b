#!/usr/bin/env bash
# The layout of libucs's registration cache types that src/ucs/rcache.rs
# declares for a release (its layout_1_13 / layout_1_18 assertions) against
# that release's ucs/memory/rcache.h: c-tests/rcache_layout.c prints every
# size, offset and constant from the header; each must equal the value our
# assertion states, and every assertion must have its line.
#   tests/rcache-layout.sh                 UCX 1.13.1 (the system headers)
#   UCX_PREFIX=DIR tests/rcache-layout.sh  the installation in DIR (1.18.1)
here=$(cd "$(dirname "$0")" && pwd)
. "$here/lib/common.sh"

case $UCX_ABI in
    1.13) mod=layout_1_13; minor=13 ;;
    1.18) mod=layout_1_18; minor=18 ;;
    *) skip_suite "no rcache layout declared for UCX $UCX_ABI" ;;
esac
make_workdir
if ! "$CC" -std=gnu11 -Wall -DUCX_MINOR=$minor "${UCX_CFLAGS[@]/#-I/-isystem}" -o "$T_WORK/probe" \
        "$here/../c-tests/rcache_layout.c" 2>"$T_WORK/cc.log"; then
    cat "$T_WORK/cc.log"
    abort "build rcache_layout"
fi
"$T_WORK/probe" | sort > "$T_WORK/header.txt"
# "const _: () = assert!(EXPR as u64 == N, "KEY");" -> "KEY N"
awk -v m="mod $mod {" '
    index($0, m) { on = 1; next }
    on && /^}/ { exit }
    on && /assert!/ {
        if (match($0, /== [0-9]+, "[^"]+"/)) {
            s = substr($0, RSTART + 3, RLENGTH - 3)
            split(s, a, ", ")
            gsub(/"/, "", a[2])
            print a[2], a[1]
        }
    }' "$here/../src/ucs/rcache.rs" | sort > "$T_WORK/ours.txt"
[ -s "$T_WORK/ours.txt" ] || abort "assertions of $mod" "none found in src/ucs/rcache.rs"
while read -r key val; do
    got=$(awk -v k="$key" '$1 == k { print $2 }' "$T_WORK/ours.txt")
    if [ "$got" = "$val" ]; then
        pass "$key = $val"
    else
        fail "$key" "header $val, ours ${got:-(none)}"
    fi
done < "$T_WORK/header.txt"
while read -r key _; do
    grep -q "^$key " "$T_WORK/header.txt" || fail "$key" "asserted but not in the header probe"
done < "$T_WORK/ours.txt"
finish
