#!/usr/bin/env bash
# proofline GPU kernel variants, benchmarks only (no tests).
#
# On the GPU machine, from the archive `scripts/gpu-suite.sh` (build) packed in .gpu-bin/: times every
# kernel variant (MsmConfig::variants, NttConfig::variants) side by side at more sizes than the
# suite does, and the 32 GiB-shape partition under each variant, for a second device call that
# re-measures without the tests. Writes variants-*.json and the logs under $OUT (one archive) and
# prints the tables last.
#
#   NTT / H sequence 2^20..2^27                     ~30 s  [120]
#   dense G1 MSM 2^20..2^26                         ~40 s  [150]
#   sparse G1 2^24 / 2^26, G2 dense and B mix       ~40 s  [150]
#   partition, one run per variant                  ~90 s  [200]
#
# Device-tool call: run carry=[".gpu-bin"] command="bash scripts/gpu-variants.sh"
# Environment: REPS (default 5), BENCH_ARGS (extra benchmark arguments).
set -uo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
OUT="${OUT:-$ROOT/gpu-out}"
WORK="$(mktemp -d)"
tar -C "$WORK" -xJf "$ROOT/.gpu-bin/suite.tar.xz" bin/proofline-gpu-bench
BIN="$WORK/bin/proofline-gpu-bench"
mkdir -p "$OUT/variants"
REPS="${REPS:-5}"
table="$OUT/variants-table.txt"
: > "$table"
run() { # name limit args...
    local name=$1 limit=$2
    shift 2
    local s=$(date +%s)
    # shellcheck disable=SC2086
    timeout "$limit" "$BIN" --variants --reps "$REPS" --json "$OUT/variants/$name.json" "$@" ${BENCH_ARGS:-} \
        > "$OUT/variants/$name.log" 2>&1
    echo "$name: rc=$? $(($(date +%s) - s)) s" >> "$table"
}
run ntt 120 --sections ntt --ntt-min 20 --ntt-max 27
run msm 150 --sections msm --msm-min 20 --msm-max 26
run sparse-g2 150 --sections sparse,g2 --msm-max 26
run partition 200 --sections partition
for n in ntt msm sparse-g2 partition; do
    awk '/^benchmark /{p=1} p' "$OUT/variants/$n.log" | grep -v '^F[rp] mul ' >> "$table"
done
tar -C "$OUT" -czf "$OUT/variants.tgz" variants && rm -rf "$OUT/variants"
rm -rf "$WORK"
echo "==== variants ===="
cat "$table"
