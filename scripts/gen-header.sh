#!/usr/bin/env bash
# Regenerate include/uct-rs/uct_abi.h from src/abi with cbindgen. The one
# header serves every UCX release of ucx-releases.txt: items only some
# releases have sit in #if blocks on UCT_RS_UCX_ABI_MINOR (default 13; see
# scripts/header-for-abi.sh for a copy with another default).
#
#   scripts/gen-header.sh            write include/uct-rs/uct_abi.h
#   scripts/gen-header.sh OUT.h      write OUT.h instead (used by
#                                    scripts/check-header.sh)
#
# Before writing, it verifies that every `pub struct|union|type` of src/abi
# is listed in cbindgen.toml ([export] include or exclude), and after
# generating it compiles the header as C99 and C11 with -Werror.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
out="${1:-$root/include/uct-rs/uct_abi.h}"
cfg="$root/cbindgen.toml"

if ! command -v cbindgen >/dev/null 2>&1; then
    echo "gen-header: cbindgen not found (install with: cargo install cbindgen)" >&2
    exit 2
fi

# 1. Every public type of src/abi must be known to cbindgen.toml.
missing=0
while read -r name; do
    if ! grep -q "^[[:space:]]*\"$name\",\?\$" "$cfg" &&
       ! sed -n '/^exclude = \[/,/\]/p' "$cfg" | grep -q "\"$name\""; then
        echo "gen-header: src/abi type '$name' is not listed in cbindgen.toml [export] include" >&2
        missing=1
    fi
done < <(grep -hoE '^pub (struct|union|type) [A-Za-z0-9_]+' "$root"/src/abi/*.rs | awk '{print $3}')
[ "$missing" = 0 ] || exit 1

# 2. Generate. Only src/abi is parsed: the input is the module file itself.
#    cbindgen warns about names it resolves through [export.rename] or the
#    after_includes block (libc socket types, uct_iface_h); hide only those.
tmp="$(mktemp)"
trap 'rm -f "$tmp" "$tmp.c" "$tmp.log"' EXIT
(cd "$root" && cbindgen --config "$cfg" --output "$tmp" src/abi/mod.rs) 2>"$tmp.log" || {
    cat "$tmp.log" >&2; exit 1; }
grep -vE "Can't find (sockaddr|sockaddr_storage|socklen_t|uct_iface_h)\. " "$tmp.log" >&2 || true

# 2b. One header for every release: items only some releases have go into
#     #if blocks on UCT_RS_UCX_ABI_MINOR, older layouts take their C names
#     (scripts/header-releases.py).
python3 "$root/scripts/header-releases.py" "$tmp"

# 3. The header must stand alone as C99 and C11, for every release it
#    serves (UCT_RS_UCX_ABI_MINOR, default 13).
printf '#include "%s"\nint main(void) { return 0; }\n' "$tmp" > "$tmp.c"
for minor in $(awk '!/^#/ && NF == 6 { print $1 }' "$root/ucx-releases.txt"); do
    for std in c99 c11; do
        gcc -std=$std -Wall -Wextra -pedantic -Werror -fsyntax-only \
            -DUCT_RS_UCX_ABI_MINOR=$minor -x c "$tmp.c"
    done
done
gcc -std=c11 -Wall -Wextra -pedantic -Werror -fsyntax-only -x c "$tmp.c"

mkdir -p "$(dirname "$out")"
cp "$tmp" "$out"
echo "gen-header: wrote ${out#$root/}"
