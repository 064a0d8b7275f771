#!/usr/bin/env bash
# proofline GPU suite. Owner: GPU kernels.
#
#   scripts/gpu-suite.sh            on a CPU machine: builds the release test and bench binaries
#                                   of proofline-gpu (sm_90 cubins only, stripped) and copies them,
#                                   with the kernel cubins, into .gpu-bin/
#   scripts/gpu-suite.sh device     on the GPU machine, in one call: the SASS check, every GPU
#                                   correctness test (GPU == CPU for every kernel and variant, G2
#                                   included, the PoRep mixes, whole proofs), then the benchmark
#                                   sections with every variant side by side, each step under a
#                                   time limit and all of them under one budget; writes logs and
#                                   JSON under $OUT (default ./gpu-out), one archive of them, and
#                                   prints a compact table last.
#
# Device-tool call (this workplace):  run carry=[".gpu-bin"] command="bash scripts/gpu-suite.sh device"
#
# Steps of the device half and what they should take on an H200 (the limit in brackets; the
# whole run stops starting steps SUITE_BUDGET seconds (default 540) after it began):
#   sass           cuobjdump counts of IMAD.WIDE.U32.X per cubin                  ~5 s   [60]
#   test-lib       unit tests (the host emulation's are skipped: no compiler)     ~10 s  [60]
#   test-gpu       GPU == CPU up to 2^24 (G2 to 2^20), every variant             ~150 s [200]
#   test-proof     whole Groth16 proofs through the slot's stages                 ~60 s  [120]
#   bench-ntt      NTT 2^24..2^27, coset inverse, H sequence per variant          ~20 s  [90]
#   bench-msm      dense G1 MSM 2^24..2^26 per variant                           ~25 s  [90]
#   bench-sparse   sparse G1 MSM 2^24 / 2^26 (60/30/10 mix) per variant           ~20 s  [90]
#   bench-g2       G2 MSM dense 2^20 and the B mix over 2^24 per variant          ~20 s  [90]
#   bench-partition the 32 GiB-shape partition with B in G2 (default variants)    ~60 s  [150]
# Environment: PROOFLINE_GPU_TEST_MAX_LOG (default 24), PROOFLINE_GPU_TEST_MIX ("0.6,0.3"),
#   SUITE_BUDGET (seconds), SKIP_TESTS=1, SKIP_BENCH=1, BENCH_ARGS (extra arguments of every
#   benchmark step).
set -uo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BIN="$ROOT/.gpu-bin"

build() {
    set -e
    cd "$ROOT"
    export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$ROOT/target}"
    if [[ -z "${PROOFLINE_NVCC:-}" ]]; then
        PROOFLINE_NVCC="$("$ROOT/scripts/install-nvcc.sh" | tail -n1)"
        export PROOFLINE_NVCC
    fi
    export PROOFLINE_REQUIRE_KERNELS=1
    # the device is an H200 (sm_90): build only its cubin and no PTX, so the
    # carried binaries stay small (the shipped default is sm_80/86/89/90 + PTX)
    export PROOFLINE_CUDA_ARCHS="${PROOFLINE_CUDA_ARCHS:-90}" PROOFLINE_CUDA_PTX="${PROOFLINE_CUDA_PTX:-0}"
    rm -rf "$BIN" && mkdir -p "$BIN/cubins"
    cargo test -p proofline-gpu --features testkit --release --no-run --message-format=json \
        | python3 -c '
import json, sys
for line in sys.stdin:
    try: m = json.loads(line)
    except Exception: continue
    if m.get("reason") == "compiler-artifact" and m.get("executable") and m.get("profile", {}).get("test"):
        print(m["target"]["kind"][0], m["target"]["name"], m["executable"])
' > "$BIN/tests.txt"
    while read -r kind name exe; do
        cp "$exe" "$BIN/test-$kind-$name"
    done < "$BIN/tests.txt"
    cargo build -p proofline-gpu --features testkit --release --bin proofline-gpu-bench
    cp "$CARGO_TARGET_DIR/release/proofline-gpu-bench" "$BIN/"
    # symbols are not needed on the device
    strip --strip-debug "$BIN"/test-* "$BIN/proofline-gpu-bench" 2>/dev/null || true
    # the embedded cubins, for SASS checks on the device
    find "$CARGO_TARGET_DIR/release/build" -path '*proofline-gpu-*/out/*' -name '*.sm_90.cubin' -newer "$BIN/tests.txt" -exec cp {} "$BIN/cubins/" \; 2>/dev/null || true
    if [[ -z "$(ls "$BIN/cubins")" ]]; then
        find "$CARGO_TARGET_DIR/release/build" -path '*proofline-gpu-*/out/*' -name '*.sm_90.cubin' -exec cp {} "$BIN/cubins/" \;
    fi
    git -C "$ROOT" rev-parse --short HEAD > "$BIN/commit.txt" 2>/dev/null || echo uncommitted > "$BIN/commit.txt"
    if ! git -C "$ROOT" diff --quiet HEAD -- cuda crates/proofline-gpu 2>/dev/null || [[ -n "$(git -C "$ROOT" status --porcelain -- cuda crates/proofline-gpu 2>/dev/null)" ]]; then
        echo "$(cat "$BIN/commit.txt")+uncommitted" > "$BIN/commit.txt"
    fi
    ls -la "$BIN" "$BIN/cubins"
    du -sh "$BIN"
}

device() {
    OUT="${OUT:-$ROOT/gpu-out}"
    mkdir -p "$OUT"
    cd "$ROOT"
    local summary="$OUT/summary.txt" tables="$OUT/tables.txt" logs="$OUT/logs"
    mkdir -p "$logs"
    : > "$summary"
    : > "$tables"
    local t0 budget status=0
    t0=$(date +%s)
    budget="${SUITE_BUDGET:-540}"
    {
        echo "date: $(date -u +%Y-%m-%dT%H:%MZ)"
        echo "commit: $(cat "$BIN/commit.txt" 2>/dev/null || echo unknown)"
        nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.sm,clocks.max.sm --format=csv,noheader 2>/dev/null | sed 's/^/gpu: /'
    } | tee -a "$summary"

    # step NAME LIMIT COMMAND...: runs COMMAND under min(LIMIT, what is left of the budget),
    # output to logs/NAME.log; notes its exit status and seconds in the summary
    step() {
        local name=$1 limit=$2
        shift 2
        local left=$((budget - ($(date +%s) - t0)))
        if ((left < 15)); then
            echo "step $name: SKIPPED (budget spent)" | tee -a "$summary"
            status=1
            return
        fi
        ((limit > left)) && limit=$left
        local s rc
        s=$(date +%s)
        timeout "$limit" "$@" > "$logs/$name.log" 2>&1
        rc=$?
        ((rc == 0)) || status=1
        local note=""
        ((rc == 124)) && note=" TIMEOUT after ${limit}s"
        echo "step $name: rc=$rc $(($(date +%s) - s)) s$note" | tee -a "$summary"
    }

    # SASS check: the wide multiply-add with carry (one chain for lo and hi)
    sass() {
        command -v cuobjdump > /dev/null || { echo "cuobjdump not on PATH"; return 0; }
        for f in "$BIN"/cubins/*.sm_90.cubin; do
            [[ -f "$f" ]] || continue
            echo "sass $(basename "$f"): IMAD.WIDE.U32.X x $(cuobjdump -sass "$f" | grep -c 'IMAD.WIDE.U32.X')"
        done
    }
    step sass 60 bash -c "$(declare -f sass); BIN=$BIN sass"
    grep '^sass' "$logs/sass.log" >> "$summary" || true

    if [[ "${SKIP_TESTS:-0}" != 1 ]]; then
        export PROOFLINE_GPU_TEST_MAX_LOG="${PROOFLINE_GPU_TEST_MAX_LOG:-24}"
        for t in "$BIN"/test-*; do
            [[ -x "$t" ]] || continue
            local name limit=200 args=(--test-threads="${TEST_THREADS:-2}")
            name=$(basename "$t")
            case "$name" in
                # the host emulation's tests compile the kernels with a C++ compiler: CI's job
                test-lib-*) limit=60; args+=(--skip emu::) ;;
                *proof*) limit=120 ;;
            esac
            step "$name" "$limit" "$t" "${args[@]}"
            {
                echo "  $(grep -o '[0-9]* passed' "$logs/$name.log" | tail -n1), $(grep -o '[0-9]* failed' "$logs/$name.log" | tail -n1)"
                grep -E "panicked|assert|FAILED|seed =" "$logs/$name.log" | head -n 8
            } | tee -a "$summary"
        done
    fi

    if [[ "${SKIP_BENCH:-0}" != 1 ]]; then
        local b="$BIN/proofline-gpu-bench"
        # shellcheck disable=SC2086
        {
            step bench-ntt 90 "$b" --variants --sections ntt --ntt-min 24 --ntt-max 27 --json "$OUT/bench-ntt.json" ${BENCH_ARGS:-}
            step bench-msm 90 "$b" --variants --sections msm --msm-min 24 --msm-max 26 --json "$OUT/bench-msm.json" ${BENCH_ARGS:-}
            step bench-sparse 90 "$b" --variants --sections sparse --msm-max 26 --json "$OUT/bench-sparse.json" ${BENCH_ARGS:-}
            step bench-g2 90 "$b" --variants --sections g2 --json "$OUT/bench-g2.json" ${BENCH_ARGS:-}
            step bench-partition 150 "$b" --sections partition --json "$OUT/bench-partition.json" ${BENCH_ARGS:-}
        }
        for s in ntt msm sparse g2 partition; do
            # the table is the tail of the log, after the JSON
            # (the header and the multiply throughput once)
            awk '/^benchmark /{p=1} p' "$logs/bench-$s.log" \
                | { if [[ $s == ntt ]]; then cat; else tail -n +2 | grep -v '^F[rp] mul '; fi; } >> "$tables"
            grep -h "failed" "$logs/bench-$s.log" | head -n 3 >> "$summary"
        done
    fi
    echo "total: $(($(date +%s) - t0)) s" | tee -a "$summary"
    # one archive of the logs (the device tool returns few files)
    tar -C "$OUT" -czf "$OUT/logs.tgz" logs && rm -rf "$logs"
    echo
    echo "==== proofline GPU suite summary ===="
    cat "$summary"
    echo
    cat "$tables"
    return $status
}

case "${1:-build}" in
    device) device ;;
    build) build ;;
    *) echo "usage: $0 [build|device]" >&2; exit 2 ;;
esac
