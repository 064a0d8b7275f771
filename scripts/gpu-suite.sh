#!/usr/bin/env bash
# proofline GPU suite (issue 4). Owner: GPU kernels.
#
#   scripts/gpu-suite.sh            on a CPU machine: builds the release test and
#                                   bench binaries of proofline-gpu and copies them,
#                                   with the kernel cubins, into .gpu-bin/
#   scripts/gpu-suite.sh device     on the GPU machine: runs every GPU test and
#                                   benchmark from .gpu-bin/ in one go, writes JSON
#                                   and logs under $OUT (default ./gpu-out), and
#                                   prints a short table last.
#
# Device-tool call (this workplace):  run carry=[".gpu-bin"] command="bash scripts/gpu-suite.sh device"
# Environment: PROOFLINE_GPU_TEST_MAX_LOG (default 24), PROOFLINE_GPU_TEST_MIX ("0.6,0.3"),
#   BENCH_ARGS (extra proofline-gpu-bench arguments), SKIP_TESTS=1, SKIP_BENCH=1,
#   TEST_TIMEOUT / BENCH_TIMEOUT (seconds, default 400 each).
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
    # the embedded cubins, for SASS checks on the device
    find "$CARGO_TARGET_DIR/release/build" -path '*proofline-gpu-*/out/*' -name '*.cubin' -newer "$BIN/tests.txt" -exec cp {} "$BIN/cubins/" \; 2>/dev/null || true
    if [[ -z "$(ls "$BIN/cubins")" ]]; then
        find "$CARGO_TARGET_DIR/release/build" -path '*proofline-gpu-*/out/*' -name '*.cubin' -exec cp {} "$BIN/cubins/" \;
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
    local summary="$OUT/summary.txt"
    : > "$summary"
    {
        echo "date: $(date -u +%Y-%m-%dT%H:%MZ)"
        echo "commit: $(cat "$BIN/commit.txt" 2>/dev/null || echo unknown)"
        nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.sm,clocks.max.sm --format=csv,noheader 2>/dev/null | sed 's/^/gpu: /'
    } | tee -a "$summary"
    # SASS check: the wide multiply-add with carry (one chain for lo and hi)
    if command -v cuobjdump >/dev/null; then
        for f in "$BIN"/cubins/*.sm_90.cubin; do
            [[ -f "$f" ]] || continue
            n=$(cuobjdump -sass "$f" | grep -c 'IMAD.WIDE.U32.X')
            echo "sass $(basename "$f"): IMAD.WIDE.U32.X x $n" | tee -a "$summary"
        done > /dev/null
        cat "$summary" | grep '^sass' || true
    else
        echo "sass: cuobjdump not on PATH" | tee -a "$summary"
    fi
    local status=0
    if [[ "${SKIP_TESTS:-0}" != 1 ]]; then
        export PROOFLINE_GPU_TEST_MAX_LOG="${PROOFLINE_GPU_TEST_MAX_LOG:-24}"
        for t in "$BIN"/test-*; do
            [[ -x "$t" ]] || continue
            name=$(basename "$t")
            start=$(date +%s)
            timeout "${TEST_TIMEOUT:-400}" "$t" --test-threads="${TEST_THREADS:-2}" > "$OUT/$name.log" 2>&1
            rc=$?
            [[ $rc == 0 ]] || status=1
            passed=$(grep -o '[0-9]* passed' "$OUT/$name.log" | tail -n1)
            failed=$(grep -o '[0-9]* failed' "$OUT/$name.log" | tail -n1)
            echo "test $name: rc=$rc $passed, $failed ($(( $(date +%s) - start )) s)" | tee -a "$summary"
            grep -E "panicked|assert|FAILED" "$OUT/$name.log" | head -n 8 | tee -a "$summary"
        done
    fi
    if [[ "${SKIP_BENCH:-0}" != 1 ]]; then
        # shellcheck disable=SC2086
        timeout "${BENCH_TIMEOUT:-400}" "$BIN/proofline-gpu-bench" --json "$OUT/bench.json" ${BENCH_ARGS:-} > "$OUT/bench.log" 2> "$OUT/bench.err"
        rc=$?
        [[ $rc == 0 ]] || status=1
        echo "bench rc=$rc" | tee -a "$summary"
        tail -n 5 "$OUT/bench.err" | tee -a "$summary"
        # the table is the tail of bench.log, after the JSON
        awk '/^benchmark /{p=1} p' "$OUT/bench.log" > "$OUT/bench-table.txt"
    fi
    echo
    echo "==== proofline GPU suite summary ===="
    cat "$summary"
    [[ -f "$OUT/bench-table.txt" ]] && cat "$OUT/bench-table.txt"
    return $status
}

case "${1:-build}" in
    device) device ;;
    build) build ;;
    *) echo "usage: $0 [build|device]" >&2; exit 2 ;;
esac
