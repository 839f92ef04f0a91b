# shellcheck shell=bash
# Helpers for the suites that run on the soft RDMA device (tests/softrdma/),
# sourced after common.sh (the functions below other than softrdma_begin
# want the work directory: softrdma_begin makes it, or call make_workdir).
#
#   softrdma_begin ARGS...  the usual start of a suite on the device:
#                           resolve_libdir ARGS, a skip when the reference
#                           under test has no verbs (UCX other than 1.13),
#                           make_workdir, softrdma_setup
#   softrdma_need_rc_verbs  skip the suite unless the library under test
#                           lists rc_verbs on the device
#   softrdma_setup          build the device into the work directory
#                           ($SOFTRDMA_BUILD) and skip the suite when it
#                           cannot run here; sets SR (the softrdma directory)
#   softrdma_shm_dir        a private registry directory under /dev/shm
#                           (exported as SOFTRDMA_SHM_DIR; removed at exit)
#   softrdma_registry_empty NAME
#                           a pass NAME when the registry directory is empty,
#                           else a fail listing it (and a false return)
#   softrdma_registry_check the registry reaped and empty (pass/fail), removed
#   (ref_has_verbs, tests/lib/common.sh: whether the reference has them)
#   lib_has_rc_verbs DIR    true when DIR's libuct lists rc_verbs on the device
#   expected_status MATRIX ROW
#                           PASS/UNSUP of the C original for a row of
#                           rc-matrix.sh (expected/rc-matrix.c-original.txt)
#   judge_matrix FILE MATRIX LABEL
#                           one pass/fail per row of an rc-matrix.sh output
#                           against the original's statuses
#   ucx_tool NAME           the path of a UCX tool of the installation
#                           under test (the wheel's for UCX_PREFIX)
#   flush_pending_case SIDES [VAR=VALUE...] -- TL EPS
#                           c-tests/flush_pending.c on TL (softrdma0:1,
#                           EPS endpoints) for each of SIDES ("original",
#                           "LIBDIR": $OURS), with the variables set; a pass
#                           or fail per side (LIBDIR must also tear down;
#                           the original's hang after its checks is noted)

SR=$(cd "$(dirname "${BASH_SOURCE[0]}")/../softrdma" && pwd)
SR_EXPECTED=$SR/expected/rc-matrix.c-original.txt

ucx_tool() {
    if [ -n "$UCX_PREFIX" ]; then echo "$UCX_PREFIX/bin/$1"; else command -v "$1"; fi
}


softrdma_begin() {
    resolve_libdir "$@"
    if testing_original && ! ref_has_verbs; then
        skip_suite "the UCX $UCX_ABI reference has no verbs transports"
    fi
    make_workdir
    softrdma_setup
}

softrdma_need_rc_verbs() {
    if ! lib_has_rc_verbs "$UCT_LIBDIR"; then
        skip_suite "the library under test lists no rc_verbs on the device (built without verbs?)"
    fi
}

softrdma_setup() {
    export SOFTRDMA_BUILD=$T_WORK/softrdma
    if ! "$SR/run.sh" true > "$T_WORK/softrdma.log" 2>&1; then
        tail -5 "$T_WORK/softrdma.log"
        skip_suite "the soft RDMA device cannot run here (tests/softrdma/run.sh true failed)"
    fi
    # the scripts of tests/softrdma run ucx_perftest from PATH: the tools
    # of the installation under test (common.sh put UCX_PREFIX/bin first)
    if [ -n "$UCX_PREFIX" ]; then
        export LD_LIBRARY_PATH=$UCX_PREFIX/lib
    else
        unset LD_LIBRARY_PATH
    fi
}

softrdma_shm_dir() {
    SOFTRDMA_SHM_DIR=$(mktemp -d /dev/shm/softrdma-test.XXXXXX) || abort "registry directory"
    export SOFTRDMA_SHM_DIR
    T_SHM_DIRS="${T_SHM_DIRS:-} $SOFTRDMA_SHM_DIR"
    trap 'cleanup_workdir; for d in $T_SHM_DIRS; do rm -rf "$d"; done' EXIT
}

# shm_dir_empty: true when the private registry directory holds nothing
shm_dir_empty() {
    [ -z "$(ls -A "$SOFTRDMA_SHM_DIR" 2>/dev/null)" ]
}

softrdma_registry_empty() {
    if shm_dir_empty; then
        pass "$1"
    else
        fail "$1" "$(ls -A "$SOFTRDMA_SHM_DIR" | tr '\n' ' ')"
        return 1
    fi
}

# softrdma_registry_check: the users killed on a timeout (run_watch SIGKILLs
# run.sh too) reaped as the next run.sh would, then the private registry
# directory must be empty (a pass or a fail); it is removed
softrdma_registry_check() {
    "$SOFTRDMA_BUILD/softrdma-gc" "$SOFTRDMA_BUILD/libsoftrdma-rdmav34.so" >/dev/null 2>&1
    if shm_dir_empty; then
        pass "the device's registry directory is empty at the end"
    else
        fail "the device's registry directory is empty at the end" "left: $(ls -A "$SOFTRDMA_SHM_DIR" | tr '\n' ' ')"
    fi
    rm -rf "$SOFTRDMA_SHM_DIR"
}

lib_has_rc_verbs() {
    "$SR/run.sh" env $(lib_env "$1") "$(ucx_tool ucx_info)" -d > "$T_WORK/has-rc.txt" 2>&1
    grep -q '^#      Transport: rc_verbs$' "$T_WORK/has-rc.txt"
}

expected_status() { # MATRIX ROW
    awk -v m="## SOFTRDMA_MATRIX=$1 " -v row="$2" '
        index($0, m) == 1 { on = 1; next }
        /^## / { on = 0 }
        on {
            s = $1; $1 = ""; sub(/^ /, ""); sub(/ \|.*$/, "")
            if ($0 == row) { print s; exit }
        }' "$SR_EXPECTED"
}

# judge_matrix FILE MATRIX LABEL: every row the original passes must pass,
# every row it refuses must be refused (UNSUP) too: accepting a size or an
# operation beyond the original's limits is a difference.
judge_matrix() {
    local file=$1 matrix=$2 label=$3 st rest row want n=0
    while read -r st rest; do
        case $st in PASS|FAIL|UNSUP) ;; *) continue ;; esac
        row=${rest%% |*}
        row=${row%% (rc=*}
        case $row in "left in "*) fail "$label: registry" "$rest"; continue ;; esac
        n=$((n + 1))
        want=$(expected_status "$matrix" "$row")
        if [ -z "$want" ]; then
            fail "$label: $row" "no status of the original for this row"
        elif [ "$st" = PASS ] && [ "$want" = PASS ]; then
            pass "$label: $row: PASS${rest#"$row"}"
        elif [ "$st" = "$want" ]; then
            pass "$label: $row: $st, as the original"
        else
            fail "$label: $row" "$st, the original: $want${rest#"$row"}"
            [ "$st" = FAIL ] && awk -v r="FAIL $row" 'index($0, r) == 1 { on = 1; next }
                /^(PASS|FAIL|UNSUP) / { on = 0 } on' "$file"
        fi
    done < "$file"
    [ "$n" -gt 0 ] || fail "$label" "no rows ran"
}

flush_pending_case() {
    local sides=$1 envs=() side lib rc out
    shift
    while [ "$1" != -- ]; do envs+=("$1"); shift; done
    shift
    if [ ! -x "$T_WORK/flush_pending" ] &&
        ! build_c "$T_WORK/flush_pending" "$SR/../../c-tests/flush_pending.c" 2> "$T_WORK/fp-cc.txt"; then
        fail "build flush_pending" "$(tail -3 "$T_WORK/fp-cc.txt")"
        return
    fi
    for side in $sides; do
        lib=; [ "$side" = LIBDIR ] && lib=$OURS
        out=$T_WORK/fp-$side.txt
        timeout -k 5 120 "$SR/run.sh" env $(lib_env "$lib") "${envs[@]}" "$T_WORK/flush_pending" "$1" softrdma0:1 "$2" \
            > "$out" 2>&1
        rc=$?
        if [ $rc = 0 ] && grep -q '^# teardown done' "$out"; then
            pass "flush behind a pending send, $side: $(grep -c '^PASS' "$out") checks"
        else
            sed 's/^/      /' "$out" | tail -12
            fail "flush behind a pending send, $side" "exit $rc"
        fi
    done
}
