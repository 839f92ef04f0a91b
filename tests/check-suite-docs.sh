#!/usr/bin/env bash
# The list of suites and its documentation agree: every line of
# tests/suites.txt has a row in the suites table of docs/testing.md (the
# first table under "## The suites") with the same name and script, in the
# same order, and the table has no other row; every script exists; every
# AREA and NEED of suites.txt is one its header explains, every TIER is
# "quick" or "quick,full".  Touches no library: LIBDIR is accepted and
# ignored, so the suite runs from meson and tests/run-all.sh like the others.
# Usage: tests/check-suite-docs.sh [LIBDIR]
here=$(cd "$(dirname "$0")" && pwd)
top=$(dirname "$here")
. "$here/lib/common.sh"

suites=$here/suites.txt
doc=$top/docs/testing.md
[ -f "$doc" ] || abort "docs/testing.md" "missing"

# the tags the header explains: "#          WORD  text" lines
known=" $(sed -n 's/^#          \([a-z][a-z0-9.-]*\)  .*/\1/p' "$suites" | tr '\n' ' ') "
# NAME SCRIPT of the table rows (after its header and separator lines)
rows=$(awk '/^## The suites/ { s = 1; next }
            s && /^## / { exit }
            s && /^\|/ { t = 1; print; next }
            t { exit }' "$doc" |
       awk -F'|' 'NR > 2 { n = $2; p = $3; gsub(/[ `]/, "", n); gsub(/[ `]/, "", p); print n, p }')
[ -n "$rows" ] || abort "suites table" "no table under '## The suites' in docs/testing.md"

listed=
while read -r name script area tier needs extra; do
    case $name in "" | "#"*) continue ;; esac
    listed="$listed$name $script"$'\n'
    bad=
    [ -f "$top/$script" ] || bad="$bad no such script $script;"
    [ -n "$needs" ] || bad="$bad fewer than 5 columns;"
    case ${extra:-libdir} in libdir | libfile) ;; *) bad="$bad ARG '$extra' is not libfile;" ;; esac
    case $tier in quick | quick,full | quick,conformance | quick,full,conformance) ;; *) bad="$bad TIER '$tier';" ;; esac
    tags=${area//,/ }
    [ "$needs" = - ] || tags="$tags ${needs//,/ }"
    for t in $tags; do
        case $known in *" $t "*) ;; *) bad="$bad tag '$t' not explained in the header;" ;; esac
    done
    row=$(awk -v n="$name" '$1 == n { print $2 }' <<<"$rows")
    if [ -z "$row" ]; then
        bad="$bad no row in docs/testing.md;"
    elif [ "$row" != "$script" ]; then
        bad="$bad docs/testing.md says $row;"
    fi
    if [ -z "$bad" ]; then
        pass "$name"
    else
        bad=${bad# }
        fail "$name" "${bad%;}"
    fi
done <"$suites"

extra_rows=$(awk 'NR == FNR { have[$1] = 1; next } !($1 in have) { print $1 }' \
    <(printf '%s' "$listed") <(printf '%s\n' "$rows") | tr '\n' ' ')
if [ -z "$extra_rows" ]; then
    pass "no row in docs/testing.md without a suite"
else
    fail "no row in docs/testing.md without a suite" "$extra_rows"
fi
if [ "$(printf '%s' "$listed" | cut -d' ' -f1)" = "$(printf '%s\n' "$rows" | cut -d' ' -f1)" ]; then
    pass "table in the order of suites.txt"
else
    fail "table in the order of suites.txt"
fi
finish
