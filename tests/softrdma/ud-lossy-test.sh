#!/bin/bash
# The lossy UD knobs of the soft device (SOFTRDMA_UD_DROP/_DELAY_US/
# _REORDER/_SEED), two processes each: build/ud-lossy-test drop (10 %),
# delay (50 ms), reorder (30 %), and the drop case twice with one seed
# (same datagrams lost). Exit status: number of failed cases, plus 1 if the
# registry segment was left behind in its private directory.
here=$(cd "$(dirname "$0")" && pwd)
out=${SOFTRDMA_BUILD:-$here/build}
dev=${SOFTRDMA_DEV:-softrdma0}
[ -x "$out/ud-lossy-test" ] || "$here/build.sh" >/dev/null || exit 100
# shellcheck source=registry-dir.sh
. "$here/registry-dir.sh"
trap '[ -z "$own_shm" ] || rm -rf "$SOFTRDMA_SHM_DIR"' EXIT
fails=0
case_() { # NAME ENV... -- ARGS...
    local name=$1 o rc; shift
    local envs=()
    while [ "$1" != -- ]; do envs+=("$1"); shift; done
    shift
    o=$(env "${envs[@]}" timeout -k 5 120 "$here/run.sh" "$out/ud-lossy-test" "$@" "$dev" 2>&1)
    rc=$?
    printf '%s\n' "$o" | sed "s/^/[$name] /"
    if [ $rc -ne 0 ]; then echo "FAIL $name (rc=$rc)"; fails=$((fails + 1)); else echo "PASS $name"; fi
    last_out=$o
}
case_ drop SOFTRDMA_UD_DROP=10 SOFTRDMA_UD_SEED=7 -- drop 2000
d1=$(printf '%s\n' "$last_out" | grep '^# digest')
case_ drop-again SOFTRDMA_UD_DROP=10 SOFTRDMA_UD_SEED=7 -- drop 2000
d2=$(printf '%s\n' "$last_out" | grep '^# digest')
if [ -n "$d1" ] && [ "$d1" = "$d2" ]; then echo "PASS same seed, same datagrams lost ($d1)"
else echo "FAIL same seed, different losses ($d1 / $d2)"; fails=$((fails + 1)); fi
case_ delay SOFTRDMA_UD_DELAY_US=50000 -- delay 20
case_ reorder SOFTRDMA_UD_REORDER=30 -- reorder 2000
if [ -n "$(ls -A "$SOFTRDMA_SHM_DIR" 2>/dev/null)" ]; then
    echo "FAIL registry left in $SOFTRDMA_SHM_DIR: $(ls -A "$SOFTRDMA_SHM_DIR")"; fails=$((fails + 1))
else
    echo "PASS registry segment removed"
fi
exit $fails
