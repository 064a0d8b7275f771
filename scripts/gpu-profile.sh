#!/usr/bin/env bash
# proofline GPU profile: every kernel of the 32 GiB-shape partition benchmark under Nsight Compute,
# summed by section (h_poly, H MSM, L, A, B_G1, B_G2) and by kind of kernel.
#
# On the GPU machine, from the archive `scripts/gpu-suite.sh` (build) packed in .gpu-bin/: runs
# `proofline-gpu-bench --sections partition --partition-mix 8mib --reps 1` (production defaults)
# under ncu with one metric, gpu__time_duration (application replay: one pass, no memory saved
# and restored; caches and clocks left alone, as in the benchmark), then
# scripts/ncu-breakdown.py over the timed run. About 60 s on an H200 (~4000 kernels).
# Writes ncu-part.csv, ncu-bench.log and ncu-breakdown.txt as one archive, ncu.tar.xz, under $OUT.
#
# Device-tool call: run carry=[".gpu-bin"] command="bash scripts/gpu-profile.sh"
set -uo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
OUT="${OUT:-$ROOT/gpu-out}"
WORK="$(mktemp -d)"
mkdir -p "$OUT"
tar -C "$WORK" -xJf "$ROOT/.gpu-bin/suite.tar.xz" bin/proofline-gpu-bench
timeout "${PROFILE_TIMEOUT:-240}" ncu --clock-control none --cache-control none \
    --replay-mode application --metrics gpu__time_duration.sum --csv --page raw \
    --print-units base --log-file "$WORK/ncu-part.csv" \
    "$WORK/bin/proofline-gpu-bench" --sections partition --partition-mix 8mib --reps 1 \
    > "$WORK/ncu-bench.log" 2>&1
rc=$?
echo "ncu rc=$rc, $(wc -l < "$WORK/ncu-part.csv") lines"
python3 "$ROOT/scripts/ncu-breakdown.py" "$WORK/ncu-part.csv" | tee "$WORK/ncu-breakdown.txt"
tar -C "$WORK" -cJf "$OUT/ncu.tar.xz" ncu-part.csv ncu-bench.log ncu-breakdown.txt
exit $rc
