#!/usr/bin/env bash
# proofline GPU kernel variants (issue 4). Owner: GPU kernels.
#
# On the GPU machine, after `scripts/gpu-suite.sh` (build) has filled .gpu-bin/: times the
# kernel variants that the benchmark knobs select, in one go, so that one device call decides
# between them. Writes variants-*.json / .log under $OUT and prints a table last.
#
#   NTT: forward NTT 2^24..2^27 (the baseline of the call)
#   MSM: PROOFLINE_GPU_ACC_WAVES, dense MSM 2^24, then the per-step profile
#        (PROOFLINE_GPU_PROFILE=1) of a 2^24 run
#
# Device-tool call: run carry=[".gpu-bin"] command="bash scripts/gpu-variants.sh"
# Environment: ACC_WAVES (space-separated list), REPS (default 7).
set -uo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BIN="$ROOT/.gpu-bin/proofline-gpu-bench"
OUT="${OUT:-$ROOT/gpu-out}"
mkdir -p "$OUT"
REPS="${REPS:-7}"
table="$OUT/variants-table.txt"
: > "$table"

row() { # name json
    python3 - "$1" "$2" >> "$table" <<'EOF'
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
EOF
}

j="$OUT/variants-ntt.json"
timeout 300 "$BIN" --ntt-min 24 --ntt-max 27 --msm-min 10 --msm-max 10 \
    --no-partition --reps "$REPS" --json "$j" > "$OUT/variants-ntt.log" 2>&1
row "ntt" "$j"
for w in ${ACC_WAVES:-2 4}; do
    j="$OUT/variants-msm-w$w.json"
    PROOFLINE_GPU_ACC_WAVES="$w" timeout 300 "$BIN" --ntt-min 10 --ntt-max 10 --msm-min 24 --msm-max 24 \
        --no-partition --reps "$REPS" --json "$j" > "$OUT/variants-msm-w$w.log" 2>&1
    row "msm acc waves $w" "$j"
done
PROOFLINE_GPU_PROFILE=1 timeout 300 "$BIN" --ntt-min 10 --ntt-max 10 --msm-min 24 --msm-max 24 \
    --no-partition --reps 3 > "$OUT/variants-profile.log" 2>&1
grep -h "msm profile" "$OUT/variants-profile.log" | grep "c=20" | tail -n 2 >> "$table"
# one archive of the logs and JSON (the device tool returns at most 8 files)
tar -C "$OUT" -czf "$OUT/variants.tgz" $(cd "$OUT" && ls variants-* | grep -v '\.tgz$')
rm -f "$OUT"/variants-*.json "$OUT"/variants-*.log
echo "==== variants ===="
cat "$table"
