#!/bin/sh
# One-process loopback rows of ucx_perftest on the soft device (UCT rc_verbs,
# ud_verbs; UCP tag). Prints one line per row: PASS/FAIL, the row, and the
# "Final:" line. Exit status: number of failed rows (0 = all passed).
# Uses whatever ucx_perftest/libuct is found first (Debian's by default).
here=$(cd "$(dirname "$0")" && pwd)
dev=${SOFTRDMA_DEV:-softrdma0:1}
n=${SOFTRDMA_ITERS:-20000}
fails=0
row() {
    out=$(timeout 120 "$here/run.sh" ucx_perftest -l -n "$n" "$@" 2>&1)
    rc=$?
    final=$(printf '%s\n' "$out" | grep '^Final:' | tr -s ' ')
    if [ $rc -eq 0 ] && [ -n "$final" ]; then
        echo "PASS $* | $final"
    else
        echo "FAIL $* (rc=$rc)"
        printf '%s\n' "$out" | grep -iE 'error|fail|assert' | head -5 | sed 's/^/    /'
        fails=$((fails + 1))
    fi
}
for x in rc_verbs; do
    row -t am_lat -x $x -d $dev
    row -t am_lat -x $x -d $dev -D bcopy
    row -t am_lat -x $x -d $dev -D zcopy
    row -t am_bw -x $x -d $dev
    row -t am_bw -x $x -d $dev -D bcopy -s 4096
    row -t am_bw -x $x -d $dev -D zcopy -s 4096
    row -t put_lat -x $x -d $dev
    row -t put_bw -x $x -d $dev
    row -t put_bw -x $x -d $dev -D bcopy -s 4096
    row -t put_bw -x $x -d $dev -D zcopy -s 65536
    row -t get -x $x -d $dev -D bcopy -s 4096
    row -t get -x $x -d $dev -D zcopy -s 65536
    row -t add_lat -x $x -d $dev
    row -t add_mr -x $x -d $dev
    row -t fadd -x $x -d $dev
    row -t cswap -x $x -d $dev
done
row -t am_lat -x ud_verbs -d $dev
row -t am_bw -x ud_verbs -d $dev
row -t am_bw -x ud_verbs -d $dev -D bcopy -s 2048
UCX_TLS=rc_verbs,ud_verbs UCX_NET_DEVICES=$dev row -t tag_lat
UCX_TLS=rc_verbs,ud_verbs UCX_NET_DEVICES=$dev row -t tag_bw -s 65536
UCX_TLS=rc_verbs,ud_verbs UCX_NET_DEVICES=$dev row -t tag_bw -s 1048576
exit $fails
