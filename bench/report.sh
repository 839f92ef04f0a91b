#!/usr/bin/env bash
# One side-by-side run of the figures issue reports are read against, as a
# Markdown report with PNG curves (with gnuplot installed: apt-get install
# gnuplot-nox; without it, the tables and the curves' data points):
#
#   shm   posix and sysv am_lat short 8 B; posix am_lat and am_bw bcopy over
#         sizes (curves)
#   tcp   am_lat short 8 B, am_bw short 8 B, am_bw bcopy 1-8 KiB, am_bw
#         zcopy 16 and 64 KiB (unpinned, as users run it)
#   ucp   tag_lat 8 B (posix,self and tcp), tag_bw and stream_bw 4-64 KiB
#         over tcp, tag_bw 64 KiB and 1 MiB over posix,self and
#         posix,cma,self (pinned to the two CPUs)
#   rdma  the soft RDMA device (tests/softrdma, pinned to the two CPUs):
#         rc_verbs and ud_verbs am_lat short 8 B, rc_verbs put_lat; am_bw
#         short 8 B and bcopy 4000 B, rc_verbs put_bw and get zcopy 64 KiB;
#         UCP tag_lat 8 B and tag_bw 64 KiB / 1 MiB over rc_verbs,ud_verbs;
#         an Open MPI ping-pong over them (8 B latency, 1 MiB bandwidth);
#         beside them the device's own figures in the same rounds
#         (tests/softrdma/xproc-bench: the least an active-message
#         ping-pong can take on it, RDMA WRITE bandwidth)
#   raw   the machine's ceilings in the same run (bench/raw_ceiling.c): tcp
#         ping-pong and one-sendmsg streams, memcpy and process_vm_readv of
#         1 MiB, the split read, and a two-process shared-memory pipe (the
#         two copies of an active-message path) with 8 and 64 KiB pieces
#
# Every row runs ROUNDS alternating rounds (ours, the original, ours, ...);
# the report gives medians, ratios, the range of the per-round ratios and
# the noise (interquartile range over median) of each side.
#
# Usage: bench/report.sh LIBDIR [ROUNDS] [OUTDIR]
#        (ROUNDS 7; OUTDIR bench/results/report-DATE)
# Env: REPORT_GROUPS="shm tcp ucp rdma raw" (a subset; rdma is left out
# by default: it needs the soft device's build, libibverbs-dev and Open
# MPI), REPORT_TITLE.
set -u
here=$(cd "$(dirname "$0")" && pwd)
libdir=${1:?usage: bench/report.sh LIBDIR [ROUNDS] [OUTDIR]}
libdir=$(cd "$libdir" && pwd -P) || exit 2
rounds=${2:-7}
out=${3:-$here/results/report-$(date +%F)}
groups=${REPORT_GROUPS:-shm tcp ucp raw}
mkdir -p "$out" || exit 2
out=$(cd "$out" && pwd -P)
rcsv=$out/rounds.csv raw=$out/raw.csv
: >"$rcsv"
: >"$raw"
export BENCH_ROUNDS_CSV=$rcsv
log=$out/runs.txt
: >"$log"

has() { case " $groups " in *" $1 "*) return 0 ;; esac; return 1; }

if has shm; then
    echo "== shm" | tee -a "$log"
    "$here/compare.sh" "$libdir" "$rounds" 200000 posix:memory:am_lat:short:8 sysv:memory:am_lat:short:8 \
        posix:memory:am_lat:bcopy:64 posix:memory:am_lat:bcopy:1024 posix:memory:am_lat:bcopy:4096 \
        posix:memory:am_lat:bcopy:8192 >>"$log" 2>&1
    "$here/compare.sh" "$libdir" "$rounds" 50000 posix:memory:am_bw:bcopy:64 posix:memory:am_bw:bcopy:1024 \
        posix:memory:am_bw:bcopy:4096 posix:memory:am_bw:bcopy:8192 >>"$log" 2>&1
fi
if has tcp; then
    echo "== tcp" | tee -a "$log"
    "$here/compare.sh" "$libdir" "$rounds" 20000 tcp:lo:am_lat:short:8 tcp:lo:am_bw:short:8 \
        tcp:lo:am_bw:bcopy:1024 tcp:lo:am_bw:bcopy:4096 tcp:lo:am_bw:bcopy:8192 \
        tcp:lo:am_bw:zcopy:16384 tcp:lo:am_bw:zcopy:65536 >>"$log" 2>&1
fi
if has ucp; then
    echo "== ucp" | tee -a "$log"
    BENCH_ROWS="posix,self:tag_lat:8 tcp:tag_lat:8 tcp:tag_bw:4096 tcp:tag_bw:16384 tcp:tag_bw:32768 tcp:tag_bw:65536 \
tcp:stream_bw:4096 tcp:stream_bw:16384 tcp:stream_bw:32768 tcp:stream_bw:65536 posix,self:tag_bw:65536 \
posix,self:tag_bw:1048576 posix,cma,self:tag_bw:65536 posix,cma,self:tag_bw:262144 posix,cma,self:tag_bw:1048576" \
        "$here/ucp-compare.sh" "$libdir" "$rounds" >>"$log" 2>&1
fi
if has rdma; then
    echo "== rdma" | tee -a "$log"
    sr=$here/../tests/softrdma
    "$sr/build.sh" >>"$log" 2>&1 || echo "the soft RDMA device does not build: see $log"
    lat_rows="rc_verbs:softrdma0:1:am_lat:short:8 ud_verbs:softrdma0:1:am_lat:short:8 rc_verbs:softrdma0:1:put_lat:short:8"
    floor_rc=() floor_ud=()
    # the device's floor in each round, just before that round's rows
    for ((r = 0; r < rounds; r++)); do
        f=$(XPROC_PIN=0,1 timeout 120 "$sr/run.sh" "$sr/build/xproc-bench" --floor 50000 2>>"$log")
        echo "$f" >>"$log"
        floor_rc+=("$(awk '$1 == "rc" && /floor/ {print $(NF-4)}' <<<"$f")")
        floor_ud+=("$(awk '$1 == "ud" && /floor/ {print $(NF-4)}' <<<"$f")")
        # shellcheck disable=SC2086 # a list of rows
        BENCH_ROUND_BASE=$r BENCH_PIN=1 BENCH_WRAP="$sr/run.sh" BENCH_LATENCY=median \
            "$here/compare.sh" "$libdir" 1 50000 $lat_rows >>"$log" 2>&1
    done
    med() { printf '%s\n' "$@" | grep -v '^$' | sort -g | awk '{a[NR]=$1} END {if (NR) print a[int((NR+1)/2)]}'; }
    low() { printf '%s\n' "$@" | grep -v '^$' | sort -g | head -n 1; }
    echo "device floor rc one way=uct:rc_verbs:softrdma0:1:am_lat:short:8,lat,$(med "${floor_rc[@]}")" >>"$raw"
    echo "device floor ud one way=uct:ud_verbs:softrdma0:1:am_lat:short:8,lat,$(med "${floor_ud[@]}")" >>"$raw"
    echo "device floor rc one way: best round,lat,$(low "${floor_rc[@]}")" >>"$raw"
    echo "device floor ud one way: best round,lat,$(low "${floor_ud[@]}")" >>"$raw"
    BENCH_PIN=1 BENCH_WRAP="$sr/run.sh" BENCH_LATENCY=median "$here/compare.sh" "$libdir" "$rounds" 50000 \
        rc_verbs:softrdma0:1:am_bw:short:8 ud_verbs:softrdma0:1:am_bw:short:8 \
        rc_verbs:softrdma0:1:am_bw:bcopy:4000 ud_verbs:softrdma0:1:am_bw:bcopy:4000 >>"$log" 2>&1
    BENCH_PIN=1 BENCH_WRAP="$sr/run.sh" "$here/compare.sh" "$libdir" "$rounds" 20000 \
        rc_verbs:softrdma0:1:put_bw:zcopy:65536 rc_verbs:softrdma0:1:get:zcopy:65536 >>"$log" 2>&1
    w=$(for _ in 1 2 3; do XPROC_PIN=0,1 timeout 120 "$sr/run.sh" "$sr/build/xproc-bench" 20000 2>>"$log"; done)
    wbw() { awk -v s="$1" '$0 ~ "rdma write " s " KiB, window 16" {print $7}' <<<"$w" | sort -g | sed -n 2p; }
    echo "RDMA WRITE 64 KiB with 16 in flight=uct:rc_verbs:softrdma0:1:put_bw:zcopy:65536,bw,$(wbw 64)" >>"$raw"
    echo "RDMA WRITE 1 MiB with 16 in flight=ucp:rc_verbs+ud_verbs:tag_bw:1048576,bw,$(wbw 1024)" >>"$raw"
    BENCH_WRAP="$sr/run.sh" BENCH_LATENCY=median \
        BENCH_ROWS="rc_verbs,ud_verbs:tag_lat:8 rc_verbs,ud_verbs:tag_bw:65536 rc_verbs,ud_verbs:tag_bw:1048576" \
        "$here/ucp-compare.sh" "$libdir" "$rounds" >>"$log" 2>&1
    # one row of lat and bw per run: split into a latency and a bandwidth row
    mcsv=$out/mpi-rounds.csv
    BENCH_ROUNDS_CSV=$mcsv BENCH_LAT_ITERS=100000 "$here/mpi-verbs.sh" "$libdir" "$rounds" >>"$log" 2>&1
    [ -f "$mcsv" ] && awk -F, -v OFS=, '{ print $1 "_lat:8", $2, $3, $4, ""; print $1 "_bw:1048576", $2, $3, "", $5 }' \
        "$mcsv" >>"$rcsv"
    rm -f "$mcsv"
fi
if has raw; then
    echo "== raw" | tee -a "$log"
    bin=$out/raw_ceiling
    if gcc -O2 -o "$bin" "$here/raw_ceiling.c"; then
        # raw_row LABEL KIND ROW MODE SIZE COUNT: the median of 3 runs
        raw_row() {
            local v
            v=$(for _ in 1 2 3; do timeout 120 "$bin" "$4" "$5" "$6"; done |
                awk -v k="$2" '{ print (k == "lat" ? $1 : $2) }' | sort -g | sed -n 2p)
            echo "$1${3:+=$3},$2,${v:-0}" >>"$raw"
        }
        raw_row "tcp ping-pong 8 B" lat uct:tcp:lo:am_lat:short:8 tcp-pingpong 8 200000
        # the other ways a side can wait for the next message: the busy
        # recv() above is the fastest of them on the machines measured
        RAW_PP_WAIT=poll raw_row "tcp ping-pong 8 B with poll() before each recv()" lat "" tcp-pingpong 8 200000
        RAW_PP_WAIT=epoll raw_row "tcp ping-pong 8 B with epoll_wait() before each recv()" lat "" tcp-pingpong 8 200000
        RAW_PP_WAIT=block raw_row "tcp ping-pong 8 B with a blocking recv()" lat "" tcp-pingpong 8 100000
        raw_row "tcp stream 1 KiB" bw uct:tcp:lo:am_bw:bcopy:1024 tcp-stream 1024 1073741824
        raw_row "tcp stream 4 KiB" bw uct:tcp:lo:am_bw:bcopy:4096 tcp-stream 4096 2147483648
        raw_row "tcp stream 8 KiB" bw uct:tcp:lo:am_bw:bcopy:8192 tcp-stream 8192 2147483648
        raw_row "tcp stream 16 KiB" bw uct:tcp:lo:am_bw:zcopy:16384 tcp-stream 16384 2147483648
        raw_row "tcp stream 64 KiB" bw uct:tcp:lo:am_bw:zcopy:65536 tcp-stream 65536 2147483648
        raw_row "tcp stream 4 KiB" bw ucp:tcp:stream_bw:4096 tcp-stream 4096 2147483648
        raw_row "tcp stream 16 KiB" bw ucp:tcp:stream_bw:16384 tcp-stream 16384 2147483648
        raw_row "tcp stream 64 KiB" bw ucp:tcp:stream_bw:65536 tcp-stream 65536 2147483648
        # libucp 1.13.1's rendezvous of 64 KiB over tcp on loopback: RTS,
        # RTR, three puts over its two tcp lanes (the sizes strace shows),
        # one acknowledgement per put, ATP; 32 messages in flight
        RAW_RNDV_PARTS=32768@0,31009@1,1759@0 raw_row "tcp rendezvous 64 KiB (puts of 32768 + 31009 + 1759 B over 2 connections)" \
            bw ucp:tcp:tag_bw:65536 tcp-rndv 65536 2147483648
        # libucp's eager path copies each byte once more on the receiver
        # (transport buffer to the user's): the ceiling of that pattern
        raw_row "tcp stream 64 KiB, the receiver copying each byte once more" bw "" tcp-stream-copy 65536 2147483648
        raw_row "tcp stream 32 KiB, the receiver copying each byte once more" bw "" tcp-stream-copy 32768 2147483648
        raw_row "tcp stream 256 KiB" bw "" tcp-stream 262144 2147483648
        RAW_TCP_CC="" raw_row "tcp stream 64 KiB with the system congestion control ($(cat /proc/sys/net/ipv4/tcp_congestion_control 2>/dev/null))" bw "" tcp-stream 65536 2147483648
        # posix,self: between two of ours the rendezvous is one copy
        # (posix_get), so memcpy is its ceiling; the pipe is the two-copy
        # FIFO path (the original's, and ours with a C peer)
        raw_row "shm pipe of 1 MiB in 8 KiB pieces (two copies)" bw "" shm-pipe 8192 4294967296
        raw_row "shm pipe of 1 MiB in 64 KiB pieces (two copies)" bw "" shm-pipe 65536 4294967296
        raw_row "memcpy 1 MiB" bw ucp:posix+self:tag_bw:1048576 memcpy 1048576 4294967296
        raw_row "process_vm_readv 1 MiB" bw ucp:posix+cma+self:tag_bw:1048576 cma-get 1048576 4294967296
        raw_row "process_vm_readv + _writev split 1 MiB" bw "" cma-split 1048576 4294967296
        raw_row "memcpy 64 KiB" bw ucp:posix+self:tag_bw:65536 memcpy 65536 4294967296
    fi
    rm -f "$bin"
fi
UCX_RELEASE=${UCX_RELEASE:-1.13.1} python3 "$here/report.py" "$rcsv" "$raw" "$out" \
    "${REPORT_TITLE:-Benchmark report $(date +%F) ($(git -C "$here" rev-parse --short HEAD 2>/dev/null))}"
echo "report: $out/report.md"
