#!/usr/bin/env bash
# libucp's endpoint configuration over the verbs transports: `ucx_info -e`
# on the soft RDMA device (tests/softrdma/run.sh), the lanes libucp builds
# and the protocol thresholds of each operation, identical between the
# original and LIBDIR for the same device.
#
#   UCX_TLS    rc_verbs,ud_verbs; ud_verbs; rc_verbs,ud_verbs,posix,self
#   features   -u t, tw (wakeup, as ucp_hello_world -w/-f), te (error
#              handling), s, r, a, m, and "tsram" at once (what ucx_perftest's
#              UCP tests ask for: tag, stream, put/get, atomics, am)
#   placement  -P self, intra, inter (the peer in this process, on this node,
#              on another node: lanes differ, shm only within the node)
#   worker     `ucx_info -w -u t`: the worker address length
#
# Compared as text after dropping what changes from run to run (the
# worker's memory, descriptors and creation time; hexadecimal addresses and
# process ids are masked).  LIBDIR may print no UCX warning or error line the
# original does not.  With no LIBDIR the original's output is printed (the
# reference: tests/softrdma/expected/ucp-verbs-info.c-original.txt).
# Usage: tests/ucp-verbs-info.sh [LIBDIR]   (or UCT_LIBDIR)
here=$(cd "$(dirname "$0")" && pwd)
. "$here/lib/ucp-verbs.sh"

ucpv_begin "$@"
INFO=$(ucx_tool ucx_info)
FEATURES="t tw te s r a m tsram"
PLACES="self intra inter"

# dump LIB TLS OUT: every ucx_info run of one TLS set, in one process of
# run.sh (a device per command would cost a second each). The shared-memory
# devices are the original's (UCX_SHM_DEVICES=memory): our posix_get device,
# a rendezvous lane only two libraries of ours share (README), is left out
# of this comparison (tests/ucx-info.sh checks it).
dump() {
    local lib=$1 tls=$2 out=$3
    rm -f "$T_WORK/dump.st"
    # shellcheck disable=SC2016 # expanded by the inner shell
    ucpv_side "$lib" "$tls" "$T_WORK/dump.st" bash -c '
        info=$1; features=$2; places=$3
        export UCX_SHM_DEVICES=memory
        echo "## -w -u t"
        "$info" -w -u t 2>&1
        for f in $features; do
            for p in $places; do
                echo "## -e -u $f -P $p"
                "$info" -e -u "$f" -P "$p" 2>&1
            done
        done' dump "$INFO" "$FEATURES" "$PLACES" >"$out.raw" 2>&1
    ucx_lines "$out.raw" >"$out.lines"
    grep -v -E '^# *(memory: |create time: )|^# UCP worker ' "$out.raw" |
        grep -v -E 'UCX +(WARN|ERROR|INFO|DEBUG)' |
        sed -E 's/0x[0-9a-fA-F]+/0xX/g; s/pid[ =:]+[0-9]+/pid N/g' >"$out"
    # With posix in the set: our posix/sysv have put/get zcopy, beyond the
    # original (README), so libucp lists "<zcopy>" where the original lists
    # "<bcopy>" on the shared-memory RMA lanes (as tests/ucx-info.sh
    # normalises); the verbs lanes are compared exactly by the other sets.
    case $tls in
    *posix*) sed -i -E '/^# +(put|get)\[[0-9]+\]:/s/<zcopy>/<bcopy>/' "$out" ;;
    esac
    DUMP_ST=$(status_of "$T_WORK/dump.st")
}

for tls in $UCPV_SETS; do
    name="ucx_info -e UCX_TLS=$tls"
    dump "" "$tls" "$T_WORK/info.sys"
    if [ "$DUMP_ST" != "exit 0" ] || ! grep -q 'lane\[0\]' "$T_WORK/info.sys"; then
        fail "$name (system)" "ucx_info $DUMP_ST, $(grep -c 'lane\[' "$T_WORK/info.sys") lane lines"
        continue
    fi
    nlanes=$(grep -c 'lane\[' "$T_WORK/info.sys")
    if [ -z "$OURS" ]; then
        pass "$name (system: $nlanes lane lines over $(grep -c '^## -e' "$T_WORK/info.sys") configurations)"
        echo "### UCX_TLS=$tls"
        cat "$T_WORK/info.sys"
        continue
    fi
    dump "$OURS" "$tls" "$T_WORK/info.ours"
    extra=$(comm -23 "$T_WORK/info.ours.lines" "$T_WORK/info.sys.lines")
    if [ "$DUMP_ST" != "exit 0" ]; then
        fail "$name" "ucx_info $DUMP_ST"
        tail -n 5 "$T_WORK/info.ours.raw" | sed 's/^/      /'
    elif ! diff -u "$T_WORK/info.sys" "$T_WORK/info.ours" >"$T_WORK/info.diff"; then
        fail "$name" "lanes or thresholds differ from the original's ($(grep -c '^[-+]#' "$T_WORK/info.diff") lines)"
        head -n 40 "$T_WORK/info.diff" | sed 's/^/      /'
    elif [ -n "$extra" ]; then
        fail "$name" "UCX lines the original does not print:"
        printf '%s\n' "$extra" | sed 's/^/      /'
    else
        pass "$name: $nlanes lane lines and every threshold as the original's ($(grep -c '^## -e' "$T_WORK/info.sys") configurations)"
    fi
done

ucpv_end
