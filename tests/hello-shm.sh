#!/usr/bin/env bash
# uct_hello_world (built at test time from the libucx-dev examples) as server
# + client on loopback over the shared-memory transports, with LIBDIR's
# libuct.so.0 on both sides: posix/memory and sysv/memory with -i (am_short),
# -b (am_bcopy) and -z (am_zcopy), and cma/memory with all three.
#
# A case succeeds as in the acceptance hello-matrix.sh: both processes exit
# with 0 and the server prints "UCT TEST SUCCESS" and the exact string sent.
# The expected outcome of every case is in the table below, one column for
# the system library (UCX 1.13.1, the C original) and one for ours (any
# LIBDIR that is not the system library): ours adds zero-copy on posix and
# sysv, so -z must succeed there.  An expected failure passes when it ends
# cleanly (no signal, no hang) with the message the table gives.
#
# EXPECT_FAIL_CASES="posix:-z sysv:-z" (or a bare transport, "cma", or the
# hello-uct.sh spelling EXPECT_FAIL_TLS="posix sysv") marks cases that are
# not done yet on the library under test: such a case passes when it fails
# cleanly (or works: XPASS), and fails only on a crash or a hang.
# At the end no new /dev/shm file or SysV segment may be left over.
# Usage: tests/hello-shm.sh [LIBDIR]   (or UCT_LIBDIR; empty = system library)
here=$(cd "$(dirname "$0")" && pwd)
. "$here/lib/common.sh"
. "$here/lib/two-proc.sh"
. "$here/lib/shm-leftovers.sh"

resolve_libdir "$@"
EXPECT_FAIL_CASES="${EXPECT_FAIL_CASES:-} ${EXPECT_FAIL_TLS:-}"
PAIR_TIMEOUT=${HELLO_TIMEOUT:-30}
make_workdir
build_run_watch
shm_snapshot "$T_WORK/shm.before"
need_hello

shm_expected_column
echo "# expected outcomes: the '$column' column"

# tl  dev  mode  system-outcome  ours-outcome   (PASS, or FAIL:<message>)
expected_cases() {
    cat <<'CASES'
posix memory -i PASS                                                PASS
posix memory -b PASS                                                PASS
posix memory -z FAIL:Unsupported memory type host by posix/memory   PASS
sysv  memory -i PASS                                                PASS
sysv  memory -b PASS                                                PASS
sysv  memory -z FAIL:Unsupported memory type host by sysv/memory    PASS
cma   memory -i FAIL:Failed to find supported device and transport  FAIL:Failed to find supported device and transport
cma   memory -b FAIL:Failed to find supported device and transport  FAIL:Failed to find supported device and transport
cma   memory -z FAIL:Failed to find supported device and transport  FAIL:Failed to find supported device and transport
CASES
}

expected_to_fail() { # tl mode
    case " $EXPECT_FAIL_CASES " in
        *" $1 "* | *" $1:$2 "*) return 0 ;;
    esac
    return 1
}

while read -r line; do
    tl=$(awk '{print $1}' <<<"$line")
    dev=$(awk '{print $2}' <<<"$line")
    mode=$(awk '{print $3}' <<<"$line")
    # the outcome columns may contain spaces: split on runs of 2+ spaces
    rest=$(sed -E 's/^[^ ]+ +[^ ]+ +[^ ]+ //' <<<"$line")
    sys_want=$(sed -E 's/  +/\t/' <<<"$rest" | cut -f1)
    ours_want=$(sed -E 's/  +/\t/' <<<"$rest" | cut -f2)
    if [ "$column" = system ]; then want=$sys_want; else want=$ours_want; fi

    run_hello_pair "$UCT_LIBDIR" "$UCT_LIBDIR" "$tl" "$dev" "$mode"
    how="server $HP_SRV, client $HP_CLI"
    [ "$HP_RELEASED" = 1 ] && how="$how, client never connected"
    name="$tl/$dev $mode (expect ${want%%:*})"

    if expected_to_fail "$tl" "$mode"; then
        name="$tl/$dev $mode (EXPECT_FAIL_CASES)"
        if [ "$HP_BAD" = 1 ]; then
            fail "$name" "must fail cleanly: $how"
        elif [ "$HP_OK" = 1 ]; then
            pass "$name XPASS: works now, drop it from EXPECT_FAIL_CASES"
        else
            pass "$name fails cleanly as allowed ($how${HP_MSG:+; $HP_MSG})"
        fi
    elif [ "$want" = PASS ]; then
        if [ "$HP_OK" = 1 ]; then
            pass "$name"
        else
            fail "$name" "$how${HP_MSG:+; $HP_MSG}"
        fi
    else
        msg=${want#FAIL:}
        if [ "$HP_BAD" = 1 ]; then
            fail "$name" "must fail cleanly: $how"
        elif [ "$HP_OK" = 1 ]; then
            fail "$name" "succeeded; the table says it fails with '$msg'"
        elif grep -qF "$msg" "$HP_OUT_SRV" "$HP_OUT_CLI"; then
            pass "$name: $msg"
        else
            fail "$name" "failed, but not with '$msg' ($how${HP_MSG:+; $HP_MSG})"
        fi
    fi
done < <(expected_cases)

shm_check "no /dev/shm file or SysV segment left over" "$T_WORK/shm.before"
finish
