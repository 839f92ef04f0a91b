#!/usr/bin/env python3
"""Turn the rounds bench/report.sh recorded into one Markdown report and,
with gnuplot installed, PNG curves.

    report.py ROUNDS_CSV RAW_CSV OUTDIR TITLE

ROUNDS_CSV: "ROW,ours|ucx,ROUND,LAT_US,BW_MBPS" lines (bench/lib.sh and
bench/compare.sh write them under BENCH_ROUNDS_CSV). ROW is
"uct:TL:DEV:TEST:LAYOUT:SIZE" or "ucp:TLS:TEST:SIZE" (commas of TLS written as "+").
RAW_CSV: "LABEL,KIND,VALUE" (KIND lat or bw), the machine's ceiling
measured in the same run (bench/raw_ceiling.c), with the ROW it belongs to
after a '=' in LABEL when there is one ("tcp-stream 4096=uct:tcp:lo:...").

For each row: the median of each side, its spread (the interquartile range
over the median, in %: the run-to-run noise), the ratio ours/original of
the medians and the range of the per-round ratios (rounds alternate, so
round k of ours and of the original ran side by side). Latency: lower is
better; bandwidth: higher is better.
"""
import collections
import os
import shutil
import subprocess
import sys


def quantile(v, q):
    v = sorted(v)
    if not v:
        return None
    k = (len(v) - 1) * q
    lo = int(k)
    hi = min(lo + 1, len(v) - 1)
    return v[lo] + (v[hi] - v[lo]) * (k - lo)


def num(x):
    try:
        f = float(x)
        return f if f > 0 else None
    except ValueError:
        return None


def load_rounds(path):
    rows = collections.OrderedDict()
    with open(path) as f:
        for line in f:
            parts = line.strip().split(',')
            if len(parts) != 5:
                continue
            row, side, rnd, lat, bw = parts
            r = rows.setdefault(row, {'ours': {}, 'ucx': {}})
            r[side][int(rnd)] = (num(lat), num(bw))
    return rows


def load_raw(path):
    raw = {}
    if not os.path.exists(path):
        return raw
    with open(path) as f:
        for line in f:
            parts = line.strip().split(',')
            if len(parts) == 3:
                raw[parts[0]] = (parts[1], num(parts[2]))
    return raw


def stats(rounds, idx):
    vals = [v[idx] for v in rounds.values() if v[idx] is not None]
    if not vals:
        return None, None
    med = quantile(vals, 0.5)
    iqr = quantile(vals, 0.75) - quantile(vals, 0.25)
    return med, 100.0 * iqr / med


def paired_ratios(r, idx):
    out = []
    for k, v in r['ours'].items():
        u = r['ucx'].get(k)
        if u and v[idx] and u[idx]:
            out.append(v[idx] / u[idx])
    return out


def fmt(x, nd=3):
    if x is None:
        return 'n/a'
    if x >= 100:
        return '%.0f' % x
    if x >= 10:
        return '%.1f' % x
    return ('%.' + str(nd) + 'f') % x


def label(row):
    kind, rest = row.split(':', 1)
    rest = rest.replace('+', ',')
    return '`%s`' % rest if kind == 'uct' else '%s `%s`' % ({'mpi': 'Open MPI'}.get(kind, 'UCP'), rest)


def is_latency_row(row):
    return '_lat:' in row or ':am_lat' in row or row.endswith('lat')


def section(out, title, rows, data, raw):
    out.append('## %s\n' % title)
    out.append('| case | metric | ours | original | ratio | per-round ratios | noise ours / original '
               '| best ours / original | raw ceiling |')
    out.append('|---|---|---|---|---|---|---|---|---|')
    for row in rows:
        r = data[row]
        lat = is_latency_row(row)
        idx = 0 if lat else 1
        metric = 'latency (us)' if lat else 'bandwidth (MB/s)'
        mo, no = stats(r['ours'], idx)
        mu, nu = stats(r['ucx'], idx)
        ratio = (mo / mu) if mo and mu else None
        pr = paired_ratios(r, idx)
        band = ('%.2f-%.2f' % (min(pr), max(pr))) if pr else 'n/a'
        ceil = [v for k, v in raw.items() if k.split('=', 1)[-1] == row and '=' in k]
        ceil_s = ' '.join('%s %s' % (fmt(c[1]), '(us)' if c[0] == 'lat' else '(MB/s)') for c in ceil) or ''
        if lat and mu:
            # the least ratio any library could reach: the floor over the original
            ceil_s += ''.join(' = %s of the original' % fmt(c[1] / mu, 2) for c in ceil if c[0] == 'lat' and c[1])
        # the best round of each side: what the machine gives when nothing
        # else runs (latency: the lowest, bandwidth: the highest)
        pick = min if lat else max
        bo = [v[idx] for v in r['ours'].values() if v[idx] is not None]
        bu = [v[idx] for v in r['ucx'].values() if v[idx] is not None]
        best = ('%s / %s (%s)' % (fmt(pick(bo)), fmt(pick(bu)), fmt(pick(bo) / pick(bu), 2))) if bo and bu else 'n/a'
        out.append('| %s | %s | %s | %s | %s | %s | %s%% / %s%% | %s | %s |' % (
            label(row), metric, fmt(mo), fmt(mu), fmt(ratio, 2), band,
            fmt(no, 1), fmt(nu, 1), best, ceil_s))
    out.append('')


def curve(outdir, name, title, rows, data, gnuplot):
    """Bandwidth (or latency) against size, one line per case family and side."""
    fams = collections.OrderedDict()
    for row in rows:
        size = int(row.rsplit(':', 1)[1])
        fam = row.rsplit(':', 1)[0]
        fams.setdefault(fam, []).append((size, row))
    dat = os.path.join(outdir, name + '.dat')
    plots = []
    with open(dat, 'w') as f:
        block = 0
        for fam, pts in fams.items():
            lat = is_latency_row(pts[0][1])
            idx = 0 if lat else 1
            for side in ('ours', 'ucx'):
                f.write('# %s %s\n' % (fam, side))
                for size, row in sorted(pts):
                    m, _ = stats(data[row][side], idx)
                    if m:
                        f.write('%d %g\n' % (size, m))
                f.write('\n\n')
                plots.append((block, '%s %s' % (fam.split(':', 1)[1].replace('+', ','), 'ours' if side == 'ours' else 'UCX ' + os.environ.get('UCX_RELEASE', '1.13.1')),
                              'y1' if not lat else 'y2'))
                block += 1
    if not gnuplot:
        return None
    png = os.path.join(outdir, name + '.png')
    gp = ['set terminal png noenhanced size 1000,600', "set output '%s'" % png, "set title '%s'" % title,
          'set logscale x 2', "set format x '%.0f'", "set xlabel 'message size (bytes)'", 'set key left top',
          'set grid']
    if any(a == 'y1' for _, _, a in plots):
        gp.append("set ylabel 'bandwidth (MB/s)'")
    if any(a == 'y2' for _, _, a in plots):
        gp += ["set y2label 'latency (us)'", 'set y2tics']
    parts = []
    for block, lbl, axis in plots:
        parts.append("'%s' index %d using 1:2 with linespoints axes x1%s title '%s'" % (dat, block, axis, lbl))
    gp.append('plot ' + ', '.join(parts))
    subprocess.run([gnuplot], input='\n'.join(gp).encode(), check=False)
    return os.path.basename(png) if os.path.exists(png) else None


def main():
    rounds_csv, raw_csv, outdir, title = sys.argv[1:5]
    data = load_rounds(rounds_csv)
    raw = load_raw(raw_csv)
    gnuplot = shutil.which('gnuplot')
    groups = collections.OrderedDict([('shm', []), ('tcp', []), ('ucp', []), ('rdma', [])])
    for row in data:
        if 'softrdma' in row or row.startswith('mpi:') or 'rc_verbs' in row or 'ud_verbs' in row:
            groups['rdma'].append(row)
        elif row.startswith('ucp:'):
            groups['ucp'].append(row)
        elif row.startswith('uct:tcp:'):
            groups['tcp'].append(row)
        else:
            groups['shm'].append(row)
    out = ['# %s\n' % title]
    out.append('Ours against the C original (UCX %s), the same client binary, only `LD_LIBRARY_PATH` '
               % os.environ.get('UCX_RELEASE', '1.13.1') +
               'differs; rounds alternate (ours, original, ours, ...). Medians; ratio = ours / original '
               '(latency: below 1 is better; bandwidth: above 1 is better). "Per-round ratios": the range '
               'of ours/original within each round. "Noise": the interquartile range of the rounds over '
               'their median. "Best": the best round of each side (the lowest latency, the highest bandwidth: what the '
               'machine gives when no other job disturbs the run) and their ratio. "Raw ceiling": the same traffic pattern without UCX (bench/raw_ceiling.c), '
               'measured in the same run; for tcp streams it is one `sendmsg` per message, as the original '
               'sends, which coalescing (several messages per call) can pass; the 256 KiB stream is the '
               'loopback\'s large-write ceiling. On the soft RDMA device it is the device\'s own figure '
               '(tests/softrdma/xproc-bench): for latency the least an active-message ping-pong can take '
               'on it (receives posted ahead, inline sends, one in 64 signaled), measured in each round just '
               'before that round\'s rows, and what that floor is as a fraction of the original\'s figure.\n')
    titles = {'shm': 'Shared memory (UCT, ucx_perftest)', 'tcp': 'tcp over lo (UCT, ucx_perftest)',
              'ucp': 'libucp over our libuct (ucx_perftest UCP tests)',
              'rdma': 'RDMA on the soft device (UCT rc_verbs/ud_verbs, UCP and Open MPI over them)'}
    for g, rows in groups.items():
        if rows:
            section(out, titles[g], rows, data, raw)
    others = [(k, v) for k, v in raw.items() if '=' not in k]
    if others:
        out.append('## Raw ceilings of this machine\n')
        out.append('| pattern | value |')
        out.append('|---|---|')
        for k, (kind, v) in others:
            out.append('| %s | %s %s |' % (k, fmt(v), 'us' if kind == 'lat' else 'MB/s'))
        out.append('')
    out.append('## Curves\n')
    for g, rows in groups.items():
        sized = [r for r in rows if r.rsplit(':', 1)[1].isdigit()]
        fams = collections.Counter(r.rsplit(':', 1)[0] for r in sized)
        multi = [r for r in sized if fams[r.rsplit(':', 1)[0]] > 1]
        if not multi:
            continue
        png = curve(outdir, g, titles[g], multi, data, gnuplot)
        if png:
            out.append('![%s](%s)\n' % (titles[g], png))
        else:
            out.append('%s: no gnuplot, the points are in `%s.dat`.\n' % (titles[g], g))
    with open(os.path.join(outdir, 'report.md'), 'w') as f:
        f.write('\n'.join(out) + '\n')


if __name__ == '__main__':
    main()
