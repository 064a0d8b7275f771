#!/usr/bin/env python3
"""proofline ncu breakdown: the kernels of the GPU benchmark's runs by section and kind.

Reads the CSV that scripts/gpu-profile.sh has ncu write (`--csv --page raw --print-units base`,
metric gpu__time_duration.sum; plain or .xz). By default, for the last partition run in it (the
benchmark's timed run; the first is its warm-up), prints the kernels' time summed by section
(h_poly, H MSM, L, A, B_G1, B_G2: a section of the sparse queries starts at its ones' count
kernel) and, in each, by kind (the rounds' backward and forward passes, the sort, the XYZZ
accumulation, ...). With --msm, the file holds dense MSMs (`--sections msm`): each MSM run's
kernels by kind, a run ending at its window combination; the kernels outside the MSMs (the
multiply benchmarks, the points' tiling, the precomputed copies) are summed apart.

Usage: scripts/ncu-breakdown.py [--msm] ncu.csv[.xz]
"""
import csv, sys, lzma, collections

args = sys.argv[1:]
msm_mode = '--msm' in args
paths = [a for a in args if a != '--msm']
if len(paths) != 1:
    sys.exit('usage: scripts/ncu-breakdown.py [--msm] ncu.csv[.xz]')
path = paths[0]
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


def msm_breakdown(ks):
    """Dense MSM runs: a run ends with its window combination's last kernel (xyzz_reduce);
    kernels that belong to no MSM are summed apart."""
    outside = ('mul_bench', 'tile_points', 'precompute')
    runs, cur, apart = [], [], collections.Counter()
    for n, t in ks:
        name = n.split('(')[0]
        if any(o in name for o in outside):
            apart[name] += t / 1e6
            continue
        cur.append((name, t))
        if 'xyzz_reduce' in name:
            runs.append(cur); cur = []
    if cur:
        runs.append(cur)
    for i, run in enumerate(runs):
        by = collections.Counter()
        for n, t in run:
            by[kind(n)] += t / 1e6
        print(f"MSM run {i}: {sum(by.values()):9.2f} ms over {len(run)} kernels")
        for k, v in sorted(by.items(), key=lambda kv: -kv[1]):
            print(f"    {k:28} {v:9.2f}")
    if apart:
        print(f"outside the MSMs: {sum(apart.values()):9.2f} ms")
        for k, v in sorted(apart.items(), key=lambda kv: -kv[1]):
            print(f"    {k:28} {v:9.2f}")

if msm_mode:
    msm_breakdown(ks)
    sys.exit(0)

# a run starts where an NTT kernel follows another kind; the partition runs are those with ones
runs, cur, prev_ntt = [], [], False
for n, t in ks:
    if is_ntt(n) and not prev_ntt and cur:
        runs.append(cur); cur = []
    cur.append((n, t)); prev_ntt = is_ntt(n)
runs.append(cur)
runs = [r for r in runs if any('ones_count' in n for n, _ in r)]
run = runs[-1]

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
