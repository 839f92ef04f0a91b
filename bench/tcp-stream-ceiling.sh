#!/usr/bin/env bash
# Where UCP streams of 32 and 64 KiB over tcp stop: libucp's stream_bw over
# LIBDIR's libuct.so.0 and over the original (bench/ucp-compare.sh, BENCH_ITERS
# iterations per run, default 20000: long enough that what the socket buffers
# hold at the end does not count), then, in the same run, the same traffic
# without UCX (bench/raw_ceiling.c), taking apart the two costs that decide
# it:
#   - the sender: one write per message, or messages copied into a 256 KiB
#     buffer and written together (coalescing by copy);
#   - the receiver: every byte copied once more after recv() (into the
#     user's buffer), or twice (libucp's path for data that arrives before
#     the receive is posted: its own descriptor, then the user's buffer);
#     receiving 64 KiB per call, or one message per call (what a receiver
#     that hands libucp every message in a buffer of its own, with libucp's
#     headroom before it, does at best without copying).
#
# Usage: bench/tcp-stream-ceiling.sh LIBDIR [ROUNDS]      (ROUNDS default 7)
set -u
here=$(cd "$(dirname "$0")" && pwd)
export PERF_PIN=${PERF_PIN:-1}
libdir=${1:?usage: bench/tcp-stream-ceiling.sh LIBDIR [ROUNDS]}
rounds=${2:-7}
iters=${BENCH_ITERS:-20000}
sizes=${CEILING_SIZES:-"32768 65536"}

rows=
for s in $sizes; do rows="$rows tcp:stream_bw:$s"; done
BENCH_ITERS=$iters BENCH_ROWS=$rows "$here/ucp-compare.sh" "$libdir" "$rounds"
. "$here/lib.sh"
make_workdir
raw_build
[ -n "$RAW_BIN" ] || { echo "raw_ceiling did not build: $(head -n 1 "$T_WORK/raw_ceiling.err")"; exit 1; }

echo
echo "# raw ceilings (bench/raw_ceiling.c), median of $rounds; bytes per run as in the UCP rows"
printf '%-8s %-66s | %10s\n' size pattern "MB/s"
for s in $sizes; do
    bytes=$((s * iters))
    while IFS='|' read -r label batch rxbuf mode; do
        # "msg": one receive per message (header and body), as a receiver
        # that gives every message a buffer of its own must receive
        [ "$rxbuf" = msg ] && rxbuf=$((s + 8))
        RAW_TX_BATCH=$batch RAW_RX_BUF=$rxbuf raw_cell "$rounds" "$mode" "$s" "$bytes"
        printf '%-8s %-66s | %10s\n' "$s" "$label" "$rawb"
    done <<'ROWS'
one write per message, 64 KiB receives, receiver copies 1x||65536|tcp-stream-copy
one write per message, 64 KiB receives, receiver copies 2x||65536|tcp-stream-copy2
256 KiB writes (copied), 64 KiB receives, receiver copies 2x|262144|65536|tcp-stream-copy2
256 KiB writes (copied), 64 KiB receives, receiver copies 1x|262144|65536|tcp-stream-copy
one write per message, one receive per message, receiver copies 1x||msg|tcp-stream-copy
256 KiB writes (copied), one receive per message, receiver copies 1x|262144|msg|tcp-stream-copy
ROWS
done
