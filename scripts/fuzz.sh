#!/usr/bin/env bash
# Coverage-guided fuzzing of the decoders of outside bytes (fuzz/, see
# tests/README.md "Fuzzing"), with the stable toolchain: plain cargo builds
# the targets against libfuzzer-sys with LLVM's sanitizer-coverage passes
# turned on through RUSTFLAGS (no cargo-fuzz, no nightly).
#
#   scripts/fuzz.sh [SECONDS] [TARGET...]   replay, build, fuzz each target
#   scripts/fuzz.sh --no-replay [SECONDS] [TARGET...]   the same, no replay
#   scripts/fuzz.sh --replay                only replay corpus + regressions
#   scripts/fuzz.sh --build                 only build the targets
#   scripts/fuzz.sh --list                  the targets
#
# SECONDS per target: the argument, else $FUZZ_SECONDS, else 60 (meson's
# `fuzz` test: 45). Targets:
# the arguments, else $FUZZ_TARGETS, else every [[bin]] of fuzz/Cargo.toml.
# New inputs found go to a temporary directory, never into the repository
# ($FUZZ_KEEP_CORPUS=DIR keeps them in DIR/NAME/ instead, to pick seeds
# from). A crash, hang (-timeout, default 10 s) or out-of-memory input is
# written to fuzz/artifacts/NAME/, its path and a hex dump printed, and the
# run fails. Other knobs: $FUZZ_ARGS (more libFuzzer options),
# $FUZZ_SANITIZER=address (AddressSanitizer through RUSTC_BOOTSTRAP; about
# ten times slower; for decoders with unsafe code), $FUZZ_TARGET_DIR
# (cargo's target directory, default fuzz/target).
# Ends with "N passed, M failed" (one case per target, plus the replay).
set -u
top=$(cd "$(dirname "$0")/.." && pwd)
fz=$top/fuzz
export CARGO_TARGET_DIR=${FUZZ_TARGET_DIR:-$fz/target}
# libucs (which the library links) patches mmap & co. at load time; the
# decoders need none of it and it fights AddressSanitizer's interceptors.
export UCX_MEM_MMAP_HOOK_MODE=${UCX_MEM_MMAP_HOOK_MODE:-none}
export UCX_MEM_MALLOC_HOOKS=${UCX_MEM_MALLOC_HOOKS:-no}

all_targets() {
    awk '/^\[\[bin\]\]/ { b = 1; next } b && $1 == "name" { gsub(/"/, "", $3); print $3; b = 0 }' \
        "$fz/Cargo.toml"
}

replay() {
    echo "== replay: every corpus and regression file through its target (cargo test in fuzz/)"
    if cargo test --manifest-path "$fz/Cargo.toml" 2>&1; then
        echo "PASS replay"; return 0
    fi
    echo "FAIL replay"; return 1
}

host=$(rustc -vV | sed -n 's/^host: //p')
# The instrumentation cargo-fuzz would add, minus the nightly-only parts:
# 8-bit edge counters and the PC table (libFuzzer's coverage), comparison
# tracing (so it solves magic numbers and lengths), `cfg(fuzzing)`.
flags="-Cpasses=sancov-module -Cllvm-args=-sanitizer-coverage-level=4"
flags+=" -Cllvm-args=-sanitizer-coverage-inline-8bit-counters"
flags+=" -Cllvm-args=-sanitizer-coverage-pc-table"
flags+=" -Cllvm-args=-sanitizer-coverage-trace-compares --cfg fuzzing"
sub=
if [ "${FUZZ_SANITIZER:-}" = address ]; then
    flags+=" -Zsanitizer=address"
    sub=asan
    export RUSTC_BOOTSTRAP=1
elif [ -n "${FUZZ_SANITIZER:-}" ] && [ "$FUZZ_SANITIZER" != none ]; then
    echo "fuzz.sh: FUZZ_SANITIZER is address or none" >&2; exit 2
fi
# --target keeps RUSTFLAGS off build scripts; a sanitizer build has its own
# directory so the two do not rebuild each other.
bindir=$CARGO_TARGET_DIR/${sub:+$sub/}$host/release

build() {
    echo "== build: the fuzz targets, coverage-instrumented (${FUZZ_SANITIZER:-no sanitizer})"
    local t0=$SECONDS
    RUSTFLAGS="$flags" cargo build --release --manifest-path "$fz/Cargo.toml" --bins \
        --target "$host" ${sub:+--target-dir "$CARGO_TARGET_DIR/$sub"} || return 1
    echo "built in $((SECONDS - t0)) s: $bindir"
}

case "${1:-}" in
    --list) all_targets; exit 0 ;;
    --replay)
        if replay; then echo "1 passed, 0 failed"; exit 0; fi
        echo "0 passed, 1 failed"; exit 1 ;;
    --build) build; exit $? ;;
    -h|--help) sed -n '2,/^set -u/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
esac

do_replay=1
if [ "${1:-}" = --no-replay ]; then do_replay=0; shift; fi
secs=${FUZZ_SECONDS:-${FUZZ_DEFAULT_SECONDS:-60}}
if [[ "${1:-}" =~ ^[0-9]+$ ]]; then secs=$1; shift; fi
if [ $# -gt 0 ]; then targets=("$@")
elif [ -n "${FUZZ_TARGETS:-}" ]; then read -ra targets <<<"$FUZZ_TARGETS"
else mapfile -t targets < <(all_targets)
fi

passed=0 failed=0
if [ $do_replay = 1 ]; then
    if replay; then passed=$((passed + 1)); else failed=$((failed + 1)); fi
fi
build || { echo "FAIL build"; echo "$passed passed, $((failed + 1)) failed"; exit 1; }

work=$(mktemp -d "${TMPDIR:-/tmp}/uct-fuzz.XXXXXX")
trap 'rm -rf "$work"' EXIT
for t in "${targets[@]}"; do
    bin=$bindir/$t
    if [ ! -x "$bin" ]; then
        echo "FAIL $t: no such target (scripts/fuzz.sh --list)"; failed=$((failed + 1)); continue
    fi
    corpus=${FUZZ_KEEP_CORPUS:+$FUZZ_KEEP_CORPUS/$t}
    corpus=${corpus:-$work/corpus/$t}
    art=$fz/artifacts/$t
    mkdir -p "$corpus" "$art"
    seeds=("$fz/corpus/$t")
    [ -d "$fz/regressions/$t" ] && seeds+=("$fz/regressions/$t")
    log=$work/$t.log
    echo "== fuzz $t for $secs s"
    # libFuzzer adds what it finds to the first directory only (ours, in
    # $work); the checked-in seeds and regressions are read, not written.
    # shellcheck disable=SC2086
    "$bin" -max_total_time="$secs" -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 \
        -artifact_prefix="$art/" ${FUZZ_ARGS:-} "$corpus" "${seeds[@]}" >"$log" 2>&1
    rc=$?
    done_line=$(grep -E '^#[0-9]+[[:space:]]+DONE' "$log" | tail -1)
    runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log")
    rate=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$log")
    cov=$(sed -nE 's/.* cov: ([0-9]+) ft: ([0-9]+) corp: ([0-9]+).*/cov \1, ft \2, corpus \3/p' <<<"$done_line")
    if [ $rc -eq 0 ]; then
        echo "PASS $t: ${runs:-?} runs, ${rate:-?}/s, ${cov:-no DONE line}"
        passed=$((passed + 1))
        continue
    fi
    failed=$((failed + 1))
    found=$(sed -nE 's/^.*(Test unit|artifact) written to (.*)$/\2/p' "$log" | tail -1)
    grep -E 'panicked at|ERROR: libFuzzer|ERROR: AddressSanitizer|==[0-9]+== ERROR' "$log" | head -5
    tail -n 40 "$log" | sed 's/^/  | /'
    if [ -n "$found" ] && [ -f "$found" ]; then
        echo "FAIL $t: crashing input: $found"
        od -A x -t x1z -v "$found" | head -32
        echo "  reproduce: $bin $found"
        echo "  keep it:   cp $found fuzz/regressions/$t/<what-it-tests>  (after the fix)"
    else
        echo "FAIL $t: libFuzzer exited $rc without writing an input (log above)"
    fi
done
echo "$passed passed, $failed failed"
[ $failed -eq 0 ]
