#!/usr/bin/env bash
# proofline GPU kernel timings for tuning, in one device call: the NTT at 2^24..2^27 and the
# dense MSM at 2^24, repeated REPS times (default 7), from the benchmark built by
# `scripts/gpu-suite.sh` (in .gpu-bin/). Writes variants-*.json / .log under $OUT and prints a
# table last. Variants of a kernel are compared by building the suite once per variant (the
# production context has no tuning knobs).
#
# Device-tool call: run carry=[".gpu-bin"] command="bash scripts/gpu-variants.sh"
set -uo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
OUT="${OUT:-$ROOT/gpu-out}"
mkdir -p "$OUT"
REPS="${REPS:-7}"
WORK="$(mktemp -d)"
tar -C "$WORK" -xJf "$ROOT/.gpu-bin/suite.tar.xz"
BIN="$WORK/bin/proofline-gpu-bench"
table="$OUT/variants-table.txt"
: > "$table"

row() { # name json
    python3 - "$1" "$2" >> "$table" <<'PY'
import json, sys
name, path = sys.argv[1], sys.argv[2]
try:
    doc = json.load(open(path))
except Exception as e:
    print(f"{name:<28} failed: {e}")
    sys.exit(0)
for r in doc["results"]:
    b = r.get("bench")
    lg = r.get("log_n")
    if b in ("ntt_forward", "ntt_coset_inverse", "h_poly", "msm_dense") and lg and lg > 10:
        print(f"{name:<20} {b:<18} 2^{lg:<3} {r.get('ms_median', 0):9.2f} ms")
PY
}

j="$OUT/variants-ntt.json"
timeout 300 "$BIN" --ntt-min 24 --ntt-max 27 --msm-min 10 --msm-max 10 \
    --no-partition --reps "$REPS" --json "$j" > "$OUT/variants-ntt.log" 2>&1
row "ntt" "$j"
j="$OUT/variants-msm.json"
timeout 300 "$BIN" --ntt-min 10 --ntt-max 10 --msm-min 24 --msm-max 24 \
    --no-partition --reps "$REPS" --json "$j" > "$OUT/variants-msm.log" 2>&1
row "msm" "$j"
rm -rf "$WORK"
echo "==== variants ===="
cat "$table"
