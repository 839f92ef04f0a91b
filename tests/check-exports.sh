#!/usr/bin/env bash
# Static checks of a libuct.so.0 file against UCX 1.13.1's ABI:
#  - every name in tests/data/ucx-1.13.1-public-exports.txt and
#    tests/data/seed-v1.8-extra-exports.txt is a defined dynamic symbol;
#  - the exported data arrays have the sizes of the original
#    (uct_alloc_method_names 48, uct_device_type_names 32,
#    uct_ep_operation_names 128 bytes) and are data, not code;
#    With UCX_PREFIX (another release), the public names are those of the
#    1.13.1 list and of the installation's uct/api headers that its
#    libuct.so.0 defines, and the array sizes are read from that library;
#  - the SONAME is libuct.so.0;
#  - the uct_ symbols carry no symbol version (the original has none).
# Usage: tests/check-exports.sh [LIBFILE]
#        default: $UCT_LIBDIR/libuct.so.0, or the system library.
here=$(cd "$(dirname "$0")" && pwd)
. "$here/lib/common.sh"

if [ $# -gt 0 ] && [ -n "$1" ]; then
    lib=$1
elif [ -n "${UCT_LIBDIR:-}" ]; then
    lib=$UCT_LIBDIR/libuct.so.0
else
    lib=$UCT_SYSTEM_LIB
fi
echo "# checking $lib"
[ -e "$lib" ] || abort "library file" "'$lib' does not exist"
make_workdir

if ! nm -D --defined-only "$lib" >"$T_WORK/defined" 2>"$T_WORK/nm.err"; then
    cat "$T_WORK/nm.err"
    abort "nm -D $lib"
fi
awk 'NF >= 3 { print $3 }' "$T_WORK/defined" | sort -u >"$T_WORK/names"

lists=("$here/data/ucx-1.13.1-public-exports.txt" "$here/data/seed-v1.8-extra-exports.txt")
if [ -n "$UCX_PREFIX" ]; then
    # the public names of this release: declared in its headers (or on the
    # 1.13.1 list) and defined by its libuct.so.0
    nm -D --defined-only "$UCT_SYSTEM_LIB" | awk 'NF >= 3 { print $3 }' | sort -u >"$T_WORK/orig.names"
    { grep -ohE '\buct_[a-z0-9_]+\b' "$UCX_PREFIX"/include/uct/api/*.h
      awk '$1 !~ /^#/ && NF { print $1 }' "${lists[0]}"; } | sort -u |
        comm -12 - "$T_WORK/orig.names" >"$T_WORK/ucx-$UCX_RELEASE-public-exports.txt"
    lists[0]=$T_WORK/ucx-$UCX_RELEASE-public-exports.txt
fi
for path in "${lists[@]}"; do
    list=$(basename "$path")
    missing=()
    total=0
    while read -r name _; do
        case "$name" in ''|'#'*) continue ;; esac
        total=$((total + 1))
        grep -qxF "$name" "$T_WORK/names" || missing+=("$name")
    done <"$path"
    if [ ${#missing[@]} -eq 0 ] && [ $total -gt 0 ]; then
        pass "all $total names of $list exported"
    else
        fail "names of $list exported" \
             "${#missing[@]} of $total missing: ${missing[*]}"
    fi
done

# name:size in bytes (nm -S prints the size in hex)
for spec in uct_alloc_method_names:48 uct_device_type_names:32 \
            uct_ep_operation_names:128; do
    name=${spec%%:*}
    want=${spec##*:}
    if [ -n "$UCX_PREFIX" ]; then
        want=$(nm -D -S --defined-only "$UCT_SYSTEM_LIB" | awk -v n="$name" '$NF == n { print $2 }')
        want=$((16#${want:-0}))
    fi
    row=$(nm -D -S --defined-only "$lib" | awk -v n="$name" '$NF == n')
    if [ -z "$row" ]; then
        fail "$name size" "not exported"
        continue
    fi
    set -- $row
    if [ $# -ne 4 ]; then
        fail "$name size" "nm shows no size: '$row'"
        continue
    fi
    size=$((16#$2))
    type=$3
    case "$type" in
        [DdRrBbGgSsVv]) ;;
        *) fail "$name is a data object" "symbol type '$type'"; continue ;;
    esac
    if [ "$size" -eq "$want" ]; then
        pass "$name is $want bytes of data"
    else
        fail "$name size" "$size bytes, want $want"
    fi
done

soname=$(readelf -d "$lib" | sed -n 's/.*Library soname: \[\(.*\)\].*/\1/p')
if [ "$soname" = "libuct.so.0" ]; then
    pass "SONAME libuct.so.0"
else
    fail "SONAME libuct.so.0" "found '$soname'"
fi

versioned=$(nm -D --defined-only --with-symbol-versions "$lib" |
            awk '$3 ~ /^uct_/ && $3 ~ /@/ { print $3 }' | head -n 5)
if [ -z "$versioned" ] && ! readelf -V "$lib" | grep -q 'Version definition'; then
    pass "uct_ symbols are unversioned"
else
    fail "uct_ symbols are unversioned" "versioned: ${versioned:-version definitions present}"
fi

finish
