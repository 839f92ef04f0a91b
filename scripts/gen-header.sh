#!/usr/bin/env bash
# Regenerate include/uct-rs/uct_abi.h from src/abi with cbindgen. The one
# header serves every UCX release the crate builds for: items a release
# changed sit in #if blocks on UCT_RS_UCX_SINCE_1_<N>, which the header
# derives from UCT_RS_UCX_ABI_MINOR (default 13; see
# scripts/header-for-abi.sh for an installed copy with another default).
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
       ! grep -q "^exclude = \[.*\"$name\"" "$cfg"; then
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

# 2b. cbindgen puts the `;` of a struct member that carries #[cfg(...)]
#     after the member's `#endif`, which leaves an empty declaration (an
#     error under -pedantic) when the member is compiled out. Move each such
#     `;` back onto the member's last line, inside the #if block.
python3 - "$tmp" <<'PY'
import re
import sys

path = sys.argv[1]
with open(path, encoding="utf-8") as f:
    lines = f.read().split("\n")
out = []
i = 0
while i < len(lines):
    line = lines[i]
    if (line.strip() == "#endif" and i + 1 < len(lines)
            and re.fullmatch(r"\s*;", lines[i + 1])):
        j = len(out) - 1
        while j >= 0 and out[j].lstrip().startswith("#"):
            j -= 1
        if j < 0 or out[j].rstrip().endswith((";", "{", "}", "*/")):
            sys.exit(f"gen-header: cannot place the ';' of line {i + 2}")
        out[j] = out[j].rstrip() + ";"
        out.append(line)
        i += 2
        continue
    out.append(line)
    i += 1
with open(path, "w", encoding="utf-8") as f:
    f.write("\n".join(out))
PY

# 3. The header must stand alone as C99 and C11, for every release it
#    serves (UCT_RS_UCX_ABI_MINOR, default 13).
printf '#include "%s"\nint main(void) { return 0; }\n' "$tmp" > "$tmp.c"
for minor in 13 18; do
    for std in c99 c11; do
        gcc -std=$std -Wall -Wextra -pedantic -Werror -fsyntax-only \
            -DUCT_RS_UCX_ABI_MINOR=$minor -x c "$tmp.c"
    done
done
gcc -std=c11 -Wall -Wextra -pedantic -Werror -fsyntax-only -x c "$tmp.c"

mkdir -p "$(dirname "$out")"
cp "$tmp" "$out"
echo "gen-header: wrote ${out#$root/}"
