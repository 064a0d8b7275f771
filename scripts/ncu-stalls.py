#!/usr/bin/env python3
"""proofline ncu stalls: where one kernel's warps wait, by stall reason and by SASS instruction.

Reads the source page that scripts/gpu-profile.sh (mode `stalls`) has ncu export
(`ncu -i REPORT --page source --csv --print-source sass`: one row per SASS instruction with its
warp-state samples by reason). Prints the share of the samples each stall reason takes, each
opcode's share with its main reasons, and the instructions that take the most samples of one
reason (default: stall_long_sb, the waits on a load's result), with their offsets in the kernel.

Usage: scripts/ncu-stalls.py source.csv[.xz] [REASON] [TOP]
"""
import collections
import csv
import lzma
import re
import sys

args = sys.argv[1:]
if not 1 <= len(args) <= 3:
    sys.exit('usage: scripts/ncu-stalls.py source.csv[.xz] [REASON] [TOP]')
path = args[0]
reason = args[1] if len(args) > 1 else 'stall_long_sb'
top = int(args[2]) if len(args) > 2 else 20
op = lzma.open if path.endswith('.xz') else open
with op(path, 'rt', errors='replace') as f:
    rows = list(csv.reader(f))
hi = next((i for i, r in enumerate(rows) if 'Address' in r and 'Source' in r), None)
if hi is None:
    sys.exit(f'{path}: no source page (no header with Address and Source)')
h = {name: i for i, name in enumerate(rows[hi])}
data = [r for r in rows[hi + 1:] if len(r) == len(rows[hi])]
if not data:
    sys.exit(f'{path}: no instructions')
samples_col = h.get('Warp Stall Sampling (All Samples)')
if samples_col is None or reason not in h:
    sys.exit(f'{path}: no warp-state samples or no column {reason}')
reasons = [n for n in h if n.startswith('stall_') and 'Not Issued' not in n]


def num(x):
    try:
        return float(x.replace(',', ''))
    except ValueError:
        return 0.0


total = sum(num(r[samples_col]) for r in data)
if total == 0:
    sys.exit(f'{path}: no samples')
base = int(data[0][h['Address']], 16)
print(f'{len(data)} instructions, {total:.0f} samples')
print('\nby reason:')
by_reason = collections.Counter({n: sum(num(r[h[n]]) for r in data) for n in reasons})
for n, v in by_reason.most_common():
    if v / total >= 0.001:
        print(f'  {n:28s} {100 * v / total:5.1f} %')
print('\nby opcode (share; main reasons):')
by_op = collections.defaultdict(collections.Counter)
for r in data:
    opcode = re.sub(r'^@!?U?P[0-9T] ', '', r[h['Source']].strip()).split(' ')[0] or '(no text)'
    c = by_op[opcode]
    c['*'] += num(r[samples_col])
    for n in reasons:
        c[n] += num(r[h[n]])
for opcode, c in sorted(by_op.items(), key=lambda kv: -kv[1]['*'])[:15]:
    main = sorted(((c[n], n) for n in reasons), reverse=True)[:3]
    print(f"  {opcode:18s} {100 * c['*'] / total:5.1f} %   "
          + ', '.join(f'{n[6:]} {100 * v / total:.1f}' for v, n in main if v))
print(f'\nthe {top} instructions with the most {reason} samples (offset, share, instruction):')
ranked = sorted(data, key=lambda r: -num(r[h[reason]]))[:top]
for r in sorted(ranked, key=lambda r: int(r[h['Address']], 16)):
    off = int(r[h['Address']], 16) - base
    print(f"  {off:#7x} {100 * num(r[h[reason]]) / total:5.2f} %  {r[h['Source']].strip()}")
