#!/usr/bin/env python3
"""Side-by-side markdown table of attack-suite runs.

Usage: ab_table.py LABEL=ROWS.tsv [LABEL=ROWS.tsv ...]

Each ROWS.tsv is what `attack.py --tsv` writes (tests/attack.sh keeps it
when ATTACK_TSV=FILE is set). One row per case, one column per run: PASS,
or FAIL with what failed (alive / served / write / proto / fds / rss).
"""
import sys


def cell(row):
    name, alive, served, write, proto, fds, rss, verdict = row
    if verdict == 'PASS':
        return 'PASS'
    if alive != 'ok':
        return 'FAIL: ' + alive
    why = []
    if served != 'ok':
        why.append('not served (%s)' % served[3:])
    if write != 'ok':
        why.append('wrote ' + write.replace('region written@', 'region@'))
    if proto != 'ok':
        why.append(proto)
    if fds != 'ok':
        why.append('fds ' + fds)
    if rss != 'ok':
        why.append('rss ' + rss)
    return 'FAIL: ' + '; '.join(why)


def main():
    runs = []
    for a in sys.argv[1:]:
        label, path = a.split('=', 1)
        with open(path) as f:
            runs.append((label, {r[0]: r for r in (line.rstrip('\n').split('\t') for line in f) if len(r) == 8},
                         [line.split('\t', 1)[0] for line in open(path)]))
    order = []
    for _, _, names in runs:
        for n in names:
            if n not in order:
                order.append(n)
    print('| case | ' + ' | '.join(label for label, _, _ in runs) + ' |')
    print('|---|' + '---|' * len(runs))
    for n in order:
        print('| %s | %s |' % (n, ' | '.join(cell(rows[n]) if n in rows else '-' for _, rows, _ in runs)))
    totals = []
    for _, rows, _ in runs:
        p = sum(1 for r in rows.values() if r[7] == 'PASS')
        c = sum(1 for r in rows.values() if r[1].startswith('crash'))
        w = sum(1 for r in rows.values() if r[3] not in ('ok', '-'))
        totals.append('%d/%d pass, %d crash, %d bad write' % (p, len(rows), c, w))
    print('| **total** | ' + ' | '.join(totals) + ' |')


if __name__ == '__main__':
    main()
