# shellcheck shell=bash
# Helpers for the tests that run every case twice, on the system library
# (the C original) and then on LIBDIR, and judge LIBDIR against it (sourced
# after common.sh and make_workdir).
#
#   ucx_lines FILE... > OUT      the UCX warning/error messages of a run,
#                                without time, pid and source position
#   ab_verdict NAME SYS_OK SYS_WHY DETAIL [FILE...]
#       pass/fail for LIBDIR's run, from R_OK / R_WHY / R_BAD (1: it
#       crashed or hung) of that run and the system run's SYS_OK/SYS_WHY
#       (and SYS_BAD=1 in the environment when the original crashed or hung
#       too: then LIBDIR doing the same is reported, not failed);
#       $T_WORK/lines.sys and $T_WORK/lines.ours hold both runs' ucx_lines.
#       A case the original passes must pass; one it fails must not crash
#       or hang; LIBDIR may print no UCX line the original does not.  FILEs:
#       outputs whose tail is shown on failure; DETAIL goes into the pass line.

ucx_lines() {
    sed -n 's/^\[[0-9.]*\] *\[[^]]*\] *[^ ]* *UCX  *\(WARN\|ERROR\) *\(.*\)$/\1 \2/p' "$@" |
        sed 's/[0-9][0-9]*/N/g' | sort -u
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
