# shellcheck shell=bash
# Helpers for the tests that run every case twice, on the system library
# (the C original) and then on LIBDIR, and judge LIBDIR against it.
# Sourcing this file brings common.sh, two-proc.sh and shm-leftovers.sh (all
# three in tests/lib/, next to this file).
#
#   ab_begin ARGS...             the common start of such a test: LIBDIR
#                                from ARGS (resolve_libdir), a work
#                                directory, run_watch, and the shared-memory
#                                state that shm_check compares at the end
#   ucx_lines FILE... > OUT      the UCX warning/error messages of a run,
#                                without time, pid and source position
#   build_ucp_example NAME       compile libucx-dev's NAME.c (a libucp
#                                example) unchanged into $T_WORK/NAME (a pass)
#                                or stop the script (an abort)
#   test_string SIZE [END]       the string the examples generate for SIZE
#                                ('A' + i % 26, SIZE - 1 letters), then END
#   ab_verdict NAME SYS_OK SYS_WHY DETAIL [FILE...]
#       pass/fail for LIBDIR's run, from R_OK / R_WHY / R_BAD (1: it
#       crashed or hung) of that run and the system run's SYS_OK/SYS_WHY
#       (and SYS_BAD=1 in the environment when the original crashed or hung
#       too: then LIBDIR doing the same is reported, not failed);
#       $T_WORK/lines.sys and $T_WORK/lines.ours hold both runs' ucx_lines.
#       A case the original passes must pass; one it fails must not crash
#       or hang; LIBDIR may print no UCX line the original does not.  FILEs:
#       outputs whose tail is shown on failure; DETAIL goes into the pass line.

_ab_dir=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
. "$_ab_dir/common.sh"
. "$_ab_dir/two-proc.sh"
. "$_ab_dir/shm-leftovers.sh"

ab_begin() {
    resolve_libdir "$@"
    make_workdir
    build_run_watch
    shm_snapshot "$T_WORK/shm.before"
}

ucx_lines() {
    sed -n 's/^\[[0-9.]*\] *\[[^]]*\] *[^ ]* *UCX  *\(WARN\|ERROR\) *\(.*\)$/\1 \2/p' "$@" |
        sed 's/[0-9][0-9]*/N/g' | sort -u
}

build_ucp_example() {
    local name=$1
    [ -f "$UCX_EXAMPLES/$name.c" ] ||
        abort "$name.c" "not found in $UCX_EXAMPLES (apt-get install libucx-dev)"
    cp "$UCX_EXAMPLES/$name.c" "$UCX_EXAMPLES/hello_world_util.h" "$UCX_EXAMPLES/ucp_util.h" "$T_WORK/"
    if "$CC" -O2 "${UCX_CFLAGS[@]}" -o "$T_WORK/$name" "$T_WORK/$name.c" "${UCX_LDFLAGS[@]}" \
            -lucp -lucs -luct 2>"$T_WORK/cc.log"; then
        pass "build $name"
    else
        abort "build $name" "$(head -n 3 "$T_WORK/cc.log")"
    fi
}

test_string() {
    awk -v n="$1" -v end="${2:-}" \
        'BEGIN { s = ""; for (i = 0; i < n - 1; i++) s = s sprintf("%c", 65 + i % 26); print s end }'
}

ab_verdict() {
    local name=$1 sys_ok=$2 sys_why=$3 detail=$4 extra
    shift 4
    extra=$(comm -23 "$T_WORK/lines.ours" "$T_WORK/lines.sys")
    if [ "$sys_ok" = 1 ] && [ "$R_OK" != 1 ]; then
        fail "$name" "$R_WHY (the original passes)"
        [ $# -gt 0 ] && tail -n 5 "$@" | sed 's/^/      /'
    elif [ "$sys_ok" != 1 ] && [ "${R_BAD:-0}" = 1 ] && [ "${SYS_BAD:-0}" != 1 ]; then
        fail "$name" "crashed or hung: $R_WHY (the original fails cleanly: $sys_why)"
    elif [ -n "$extra" ]; then
        fail "$name" "UCX lines the original does not print:"
        printf '%s\n' "$extra" | sed 's/^/      /'
    elif [ "$sys_ok" = 1 ]; then
        pass "$name${detail:+ ($detail)}"
    elif [ "${R_BAD:-0}" = 1 ]; then
        pass "$name (crashes or hangs like the original: $sys_why)"
    else
        pass "$name (fails cleanly like the original: $sys_why)"
    fi
}
