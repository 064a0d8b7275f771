#!/usr/bin/env python3
"""proofline ncu breakdown: the kernels of one run of the partition benchmark by section and kind.

Reads the CSV that scripts/gpu-profile.sh has ncu write (`--csv --page raw --print-units base`,
metric gpu__time_duration.sum; plain or .xz) and prints, for the last partition run in it (the
benchmark's timed run; the first is its warm-up), the kernels' time summed by section (h_poly, H
MSM, L, A, B_G1, B_G2: a section of the sparse queries starts at its ones' count kernel) and, in
each, by kind (the rounds' backward and forward passes, the sort, the XYZZ accumulation, ...).

Usage: scripts/ncu-breakdown.py ncu-part.csv[.xz]
"""
import csv, sys, lzma, collections

path = sys.argv[1]
op = lzma.open if path.endswith('.xz') else open
with op(path, 'rt') as f:
    lines = [l for l in f if not l.startswith('==')]
rows = list(csv.reader(lines))
hdr = next(i for i, r in enumerate(rows) if 'Kernel Name' in r)
h = rows[hdr]
ki, ti = h.index('Kernel Name'), h.index('gpu__time_duration.sum')
ks = []
for r in rows[hdr + 1:]:
    if len(r) <= ti:
        continue
    try:
        ks.append((r[ki], float(r[ti].replace(',', ''))))
    except ValueError:
        continue

def is_ntt(n):
    return n.startswith('ntt') or n.startswith('fr_')

# a run starts where an NTT kernel follows another kind; the partition runs are those with ones
runs, cur, prev_ntt = [], [], False
for n, t in ks:
    if is_ntt(n) and not prev_ntt and cur:
        runs.append(cur); cur = []
    cur.append((n, t)); prev_ntt = is_ntt(n)
runs.append(cur)
runs = [r for r in runs if any('ones_count' in n for n, _ in r)]
run = runs[-1]

def kind(n):
    for key, k in [('affine_bwd', 'rounds: backward'), ('affine_fwd', 'rounds: forward'),
                   ('batch_inv', 'rounds: batched inversion'), ('affine_halve', 'rounds: halve + scans'),
                   ('scan_', 'rounds: halve + scans'), ('radix', 'sort'), ('digits', 'sort'), ('sort_', 'sort'),
                   ('bucket_acc', 'XYZZ accumulation'), ('fixup', 'XYZZ accumulation'), ('big', 'XYZZ accumulation'),
                   ('bucket_reduce', 'bucket reduction'), ('window_combine', 'window combination'),
                   ('xyzz_reduce', 'window combination'), ('ones_', 'ones list'), ('sum_ones', 'ones: XYZZ sum'),
                   ('gather', 'tail gather')]:
        if key in n:
            return k
    return 'NTT' if is_ntt(n) else n

sections = ['h_poly', 'H MSM', 'L', 'A', 'B_G1', 'B_G2']
sec, ones_seen, out = 0, 0, collections.OrderedDict()
for n, t in run:
    if sec == 0 and not is_ntt(n):
        sec = 1
    if 'ones_count' in n:
        ones_seen += 1
        sec = 1 + ones_seen
    s = sections[min(sec, 5)]
    out.setdefault(s, collections.Counter())[kind(n)] += t / 1e6
    out[s]['#kernels'] += 1
total = 0.0
for s, c in out.items():
    st = sum(v for k, v in c.items() if k != '#kernels')
    total += st
    print(f"{s:6} {st:9.2f} ms  ({int(c['#kernels'])} kernels)")
    for k, v in sorted(c.items(), key=lambda kv: -kv[1]):
        if k != '#kernels':
            print(f"    {k:28} {v:9.2f}")
print(f"total  {total:9.2f} ms over {len(run)} kernels (partition runs in the file: {len(runs)})")
