#!/usr/bin/env bash
# Shared-memory leftovers: files in /dev/shm and SysV segments (what `ipcs -m`
# lists, read from /proc/sysvipc/shm) that appear while something runs and are
# still there, unused, after it ended.
#
# Standalone:
#   tests/lib/shm-leftovers.sh [--] CMD [ARG...]  run CMD, then compare; fails
#                                   on new leftovers and when CMD exits non-zero
#   tests/lib/shm-leftovers.sh --snapshot FILE    record the current state
#   tests/lib/shm-leftovers.sh --check FILE       compare with a snapshot
#   tests/lib/shm-leftovers.sh --self-test        creates a leftover file and
#                                   a segment (ipcmk) and checks they are found
# Each prints "N passed, M failed" and exits non-zero on failure.
#
# Sourced (after common.sh): shm_snapshot FILE; shm_leftovers FILE (prints one
# line per leftover); shm_check NAME FILE (pass/fail NAME, removes what it
# reports unless SHM_KEEP_LEFTOVERS=1).
#
# What counts: only entries owned by the current uid that are not in the
# snapshot.  A file still open or mapped by a live process, or a segment still
# attached (nattch > 0) or whose creator is alive, is in use, not left over
# (other programs on the machine may be running).  SHM_CPIDS="PID..." counts
# only segments created by those processes.  SHM_DIRS (default /dev/shm) lists
# the directories to watch (add UCX_POSIX_DIR when a test sets it).  Leftovers
# are looked for again for up to SHM_SETTLE seconds (default 2) before they
# are reported, since a process that has just been reaped is gone with its
# mappings but a segment's last detach may lag behind on another CPU.

SHM_DIRS=${SHM_DIRS:-/dev/shm}
SHM_SETTLE=${SHM_SETTLE:-2}

# shm_list_now: "file PATH" and "sysv SHMID" lines, owned by us, sorted
shm_list_now() {
    local uid d
    uid=$(id -u)
    for d in $SHM_DIRS; do
        [ -d "$d" ] || continue
        find "$d" -mindepth 1 -maxdepth 1 -uid "$uid" -printf 'file %p\n' 2>/dev/null
    done
    _shm_sysv_rows | awk -v uid="$uid" '$8 == uid { print "sysv " $2 }'
    true
}

# SysV segments, one per line: key shmid perms size cpid lpid nattch uid ...
_shm_sysv_rows() {
    if [ -r /proc/sysvipc/shm ]; then
        tail -n +2 /proc/sysvipc/shm
    elif command -v ipcs >/dev/null; then
        # fallback: ipcs -m -p gives cpid/lpid, ipcs -m gives nattch; uid is
        # approximated by the owner name
        join -1 1 -2 1 \
            <(ipcs -m | awk 'NR > 3 && NF >= 6 { print $2, $1, $4, $5, $6, $3 }' | sort) \
            <(ipcs -m -p | awk 'NR > 3 && NF >= 4 { print $1, $3, $4 }' | sort) |
            while read -r id key perms size nattch owner cpid lpid; do
                echo "$key $id $perms $size $cpid $lpid $nattch $(id -u "$owner" 2>/dev/null || echo -1)"
            done
    fi
}

shm_snapshot() {
    shm_list_now | sort >"$1"
}

# paths of files open or mapped by some live process
_shm_paths_in_use() {
    find /proc/[0-9]*/fd -maxdepth 1 -type l -printf '%l\n' 2>/dev/null
    cat /proc/[0-9]*/maps 2>/dev/null | awk 'NF >= 6 { print $6 }'
}

# _shm_new_leftovers SNAPSHOT: one description per line, nothing when clean
_shm_new_leftovers() {
    local before=$1 now in_use='' kind what row
    now=$(shm_list_now | sort)
    comm -13 "$before" <(printf '%s\n' "$now" | sed '/^$/d') | while read -r kind what; do
        case $kind in
        file)
            [ -e "$what" ] || continue
            [ -z "$in_use" ] && in_use=$(_shm_paths_in_use | sort -u)
            if printf '%s\n' "$in_use" | grep -qxF "$what"; then
                continue
            fi
            echo "file $what ($(stat -c '%s bytes, mode %a' "$what" 2>/dev/null))"
            ;;
        sysv)
            row=$(_shm_sysv_rows | awk -v id="$what" '$2 == id')
            [ -n "$row" ] || continue
            set -- $row
            # $5 cpid, $7 nattch
            if [ -n "${SHM_CPIDS:-}" ]; then
                case " $SHM_CPIDS " in *" $5 "*) ;; *) continue ;; esac
            fi
            [ "$7" -eq 0 ] || continue
            if kill -0 "$5" 2>/dev/null && [ -z "${SHM_CPIDS:-}" ]; then
                continue   # its creator is alive: may be about to attach
            fi
            echo "sysv shmid=$what key=$(printf '0x%08x' "$(($1 & 0xffffffff))") size=$4 cpid=$5 nattch=$7"
            ;;
        esac
    done
}

# shm_leftovers SNAPSHOT: leftovers that are still there after SHM_SETTLE s
shm_leftovers() {
    local out waited=0
    while :; do
        out=$(_shm_new_leftovers "$1")
        if [ -z "$out" ] || ! awk -v a="$waited" -v b="$SHM_SETTLE" 'BEGIN { exit !(a < b) }'; then
            break
        fi
        sleep 0.2
        waited=$(awk -v a="$waited" 'BEGIN { print a + 0.2 }')
    done
    [ -n "$out" ] && printf '%s\n' "$out"
    true
}

# shm_remove LINES: remove what shm_leftovers reported
shm_remove() {
    local kind what
    while read -r kind what; do
        case $kind in
        file) rm -f -- "${what%% (*}" ;;
        sysv) what=${what#shmid=}; ipcrm -m "${what%% *}" 2>/dev/null ;;
        esac
    done <<<"$1"
}

# shm_check NAME SNAPSHOT [dirs]: pass/fail (common.sh) and clean up; with
# "dirs", directories are left out (the soft RDMA device's suites make their
# private registry directories there, and so do other suites running beside)
shm_check() {
    local left kind path
    left=$(shm_leftovers "$2")
    if [ "${3:-}" = dirs ]; then
        left=$(printf '%s\n' "$left" | while read -r kind path; do
            [ -n "$kind" ] || continue
            [ "$kind" = file ] && [ -d "${path%% (*}" ] && continue
            echo "$kind $path"
        done)
    fi
    if [ -z "$left" ]; then
        pass "$1"
        return 0
    fi
    fail "$1" "$(printf '%s' "$left" | wc -l | awk '{print $1 + 1}') new leftover(s)"
    printf '%s\n' "$left" | sed 's/^/      leftover: /'
    if [ "${SHM_KEEP_LEFTOVERS:-0}" != 1 ]; then
        shm_remove "$left"
        echo "      (removed; SHM_KEEP_LEFTOVERS=1 keeps them)"
    fi
    return 1
}

# ---------------------------------------------------------------- standalone
if [ "${BASH_SOURCE[0]}" = "$0" ]; then
    here=$(cd "$(dirname "$0")" && pwd)
    . "$here/common.sh"

    case ${1:-} in
    --snapshot)
        [ $# -eq 2 ] || abort "usage" "--snapshot FILE"
        shm_snapshot "$2" || abort "snapshot" "cannot write $2"
        pass "snapshot of $SHM_DIRS and SysV segments in $2 ($(wc -l <"$2") entries)"
        finish
        ;;
    --check)
        [ $# -eq 2 ] && [ -r "$2" ] || abort "usage" "--check SNAPSHOT-FILE"
        shm_check "no new shared-memory leftovers since the snapshot" "$2"
        finish
        ;;
    --self-test)
        make_workdir
        command -v ipcmk >/dev/null || abort "self-test" "ipcmk not found (apt-get install util-linux)"
        shm_snapshot "$T_WORK/before"
        f=/dev/shm/uct-rs-leftover-selftest.$$
        : >"$f"
        id=$(ipcmk -M 4096 2>/dev/null | awk '{ print $NF }')
        left=$(SHM_SETTLE=0 shm_leftovers "$T_WORK/before")
        if printf '%s\n' "$left" | grep -q "^file $f " &&
           printf '%s\n' "$left" | grep -q "^sysv shmid=$id "; then
            pass "finds a new /dev/shm file and a new SysV segment"
        else
            fail "finds a new /dev/shm file and a new SysV segment" "got: ${left:-nothing}"
        fi
        # a file that a live process keeps open is in use, not left over
        ( exec 3<"$f"; exec sleep 30 ) &
        holder=$!
        T_CHILDREN=$holder
        left2=$(SHM_SETTLE=0 shm_leftovers "$T_WORK/before")
        if printf '%s\n' "$left2" | grep -q "^file $f "; then
            fail "an open file is not a leftover" "$left2"
        else
            pass "an open file is not a leftover"
        fi
        kill "$holder" 2>/dev/null
        wait "$holder" 2>/dev/null
        T_CHILDREN=
        shm_remove "$left"
        rm -f "$f"
        [ -n "$id" ] && ipcrm -m "$id" 2>/dev/null
        left=$(SHM_SETTLE=0 shm_leftovers "$T_WORK/before")
        if [ -z "$left" ]; then
            pass "clean again after removal"
        else
            fail "clean again after removal" "$left"
        fi
        finish
        ;;
    --)
        shift
        ;;
    "" | -h | --help)
        sed -n '2,/^$/p' "$0" | sed 's/^# \{0,1\}//'
        exit 2
        ;;
    esac
    [ $# -gt 0 ] || abort "usage" "no command"
    make_workdir
    shm_snapshot "$T_WORK/before"
    "$@"
    rc=$?
    if [ $rc -eq 0 ]; then
        pass "command: $*"
    else
        fail "command: $*" "exit status $rc"
    fi
    shm_check "no new shared-memory leftovers" "$T_WORK/before"
    finish
fi
