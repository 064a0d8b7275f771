#!/usr/bin/env bash
# proofline GPU profile: every kernel of a GPU benchmark under Nsight Compute, summed by kind.
#
#   scripts/gpu-profile.sh            the 32 GiB-shape partition benchmark, by section (h_poly,
#                                     H MSM, L, A, B_G1, B_G2) and by kind of kernel
#   scripts/gpu-profile.sh msm L      dense G1 MSMs of 2^L points, plain and over precomputed
#                                     copies (`--variants --only pre`): each MSM run's kernels
#                                     by kind
#   scripts/gpu-profile.sh stalls [KERNEL]
#                                     where one kernel's warps wait (default msm_affine_bwd): its
#                                     first launch in a dense 2^24 MSM benchmark under ncu's
#                                     warp-state sampling by SASS instruction, summed by
#                                     scripts/ncu-stalls.py (stall reasons, opcodes, the
#                                     instructions that wait most on loads)
#
# On the GPU machine, from the archive `scripts/gpu-suite.sh` (build) packed in .gpu-bin/: runs
# `proofline-gpu-bench --sections partition --partition-mix 8mib --reps 1` (production defaults),
# or `--variants --only pre --sections msm --msm-min L --msm-max L --reps 1`, under ncu with one
# metric, gpu__time_duration (application replay: one pass, no memory saved and restored; caches
# and clocks left alone, as in the benchmark), then scripts/ncu-breakdown.py over the timed runs.
# About 60 s on an H200 for the partition (~4000 kernels), 15-30 s for dense MSMs of 2^24-2^26,
# ~20 s for the stalls of the backward pass on an H100.
# Writes the CSV, the benchmark's log and the breakdown as one archive, ncu.tar.xz, under $OUT
# (for `stalls`: the details and source pages and the summary).
#
# Device-tool calls: run carry=[".gpu-bin"] command="bash scripts/gpu-profile.sh"
#                    run carry=[".gpu-bin"] command="bash scripts/gpu-profile.sh msm 24"
#                    run carry=[".gpu-bin"] command="bash scripts/gpu-profile.sh stalls"
set -uo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
OUT="${OUT:-$ROOT/gpu-out}"
WORK="$(mktemp -d)"
mkdir -p "$OUT"
tar -C "$WORK" -xJf "$ROOT/.gpu-bin/suite.tar.xz" bin/proofline-gpu-bench
MODE="${1:-partition}"
case "$MODE" in
    partition)
        BENCH=(--sections partition --partition-mix 8mib --reps 1)
        BREAKDOWN=()
        NAME=ncu-part
        ;;
    msm)
        LOG="${2:?usage: gpu-profile.sh msm L, L the log2 of the MSM size}"
        BENCH=(--variants --only pre --sections msm --msm-min "$LOG" --msm-max "$LOG" --reps 1)
        BREAKDOWN=(--msm)
        NAME="ncu-msm-$LOG"
        ;;
    stalls)
        KERNEL="${2:-msm_affine_bwd}"
        timeout "${PROFILE_TIMEOUT:-240}" ncu --kernel-name "$KERNEL" --launch-count 1 \
            --section SourceCounters --section WarpStateStats --section SchedulerStats \
            --section Occupancy -o "$WORK/stalls" "$WORK/bin/proofline-gpu-bench" --variants \
            --only pre --sections msm --msm-min 24 --msm-max 24 --reps 1 \
            > "$WORK/ncu-bench.log" 2>&1
        rc=$?
        echo "ncu rc=$rc"
        ncu -i "$WORK/stalls.ncu-rep" --page details --csv > "$WORK/stalls-details.csv" 2>&1
        ncu -i "$WORK/stalls.ncu-rep" --page source --csv --print-source sass \
            > "$WORK/stalls-source.csv" 2>&1
        python3 "$ROOT/scripts/ncu-stalls.py" "$WORK/stalls-source.csv" | tee "$WORK/ncu-stalls.txt"
        tar -C "$WORK" -cJf "$OUT/ncu.tar.xz" stalls-details.csv stalls-source.csv \
            ncu-bench.log ncu-stalls.txt
        exit $rc
        ;;
    *)
        echo "gpu-profile.sh: unknown mode '$MODE' (partition, msm L, or stalls [KERNEL])" >&2
        exit 2
        ;;
esac
timeout "${PROFILE_TIMEOUT:-240}" ncu --clock-control none --cache-control none \
    --replay-mode application --metrics gpu__time_duration.sum --csv --page raw \
    --print-units base --log-file "$WORK/$NAME.csv" \
    "$WORK/bin/proofline-gpu-bench" "${BENCH[@]}" > "$WORK/ncu-bench.log" 2>&1
rc=$?
echo "ncu rc=$rc, $(wc -l < "$WORK/$NAME.csv") lines"
python3 "$ROOT/scripts/ncu-breakdown.py" "${BREAKDOWN[@]}" "$WORK/$NAME.csv" | tee "$WORK/ncu-breakdown.txt"
tar -C "$WORK" -cJf "$OUT/ncu.tar.xz" "$NAME.csv" ncu-bench.log ncu-breakdown.txt
exit $rc
