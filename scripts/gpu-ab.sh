#!/usr/bin/env bash
# proofline kernel builds side by side: two or more builds of the kernels (a baseline and the
# changes to decide on) timed in turn in one device call, so that the figures compare (the same
# binary varies by up to 8 % between calls, much less between processes of one call).
#
#   scripts/gpu-ab.sh build NAME     on a CPU machine: builds proofline-gpu-bench and
#                                    proofline-gpu's GPU test binaries (its unit tests and
#                                    tests/gpu.rs) from the working tree, for sm_90 only and
#                                    stripped, into .gpu-bin/ab-NAME.tar.xz (about 11 MB; the
#                                    commit, "+uncommitted" where cuda/ or crates/ differ from
#                                    it, in the archive). Check out or apply each variant, build
#                                    it under its own name, then put the tree back.
#   scripts/gpu-ab.sh device NAME... on the GPU machine: each section runs the builds in turn
#                                    and then in reverse (A B B A: a drift over the call falls on
#                                    both alike), one process a run; then the GPU tests of every
#                                    build after the first (the first is the baseline). Prints one
#                                    line a run, and writes the logs as one archive, ab.tar.xz,
#                                    under $OUT (default ./gpu-out).
#
# Sections (AB_SECTIONS, default "dense partition"):
#   dense      `proofline-gpu-bench --variants` with AB_DENSE_ARGS (default: the radix sort and
#              the precomputed copies, dense G1 2^24..2^26): one figure a size and variant,
#              ~17 s a run on an H100
#   partition  the 32 GiB-shape partition as the pipeline runs it (`--only pipeline --reps 3`,
#              AB_PARTITION_ARGS): its kernels and each step's time, ~30 s a run
# AB_TESTS=0 skips the tests (unit ~15 s, the MSMs' GPU tests up to 2^PROOFLINE_GPU_TEST_MAX_LOG,
# default 20, ~30 s). A section or test over its limit is cut and reported; the others go on.
#
# A device-tool call (the builds travel in .gpu-bin; `scripts/gpu-suite.sh` build empties it):
#   run carry=[".gpu-bin"] command="bash scripts/gpu-ab.sh device base staged"
set -uo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BIN="$ROOT/.gpu-bin"
# shellcheck source=scripts/gpu-build-env.sh
source "$ROOT/scripts/gpu-build-env.sh"

build() {
    local name=${1:-}
    [[ $name =~ ^[A-Za-z0-9_.-]+$ ]] || { echo "usage: $0 build NAME (letters, digits, . _ -)" >&2; exit 2; }
    set -e
    cd "$ROOT"
    gpu_build_env "$ROOT"
    local stage
    stage="$(mktemp -d)"
    mkdir -p "$stage/ab-$name"
    cargo build --release -p proofline-gpu --features testkit --bin proofline-gpu-bench
    cp "$CARGO_TARGET_DIR/release/proofline-gpu-bench" "$stage/ab-$name/"
    # proofline-gpu's unit tests and tests/gpu.rs (the GPU-equals-CPU tests)
    cargo test -p proofline-gpu --features testkit --release --no-run --message-format=json | list_tests \
        | while read -r _ target exe; do
            case "$target" in proofline_gpu | gpu) cp "$exe" "$stage/ab-$name/test-$target" ;; esac
        done
    [[ -x "$stage/ab-$name/test-proofline_gpu" && -x "$stage/ab-$name/test-gpu" ]] \
        || { echo "error: the GPU test binaries were not found" >&2; exit 1; }
    strip "$stage/ab-$name"/*
    local commit
    commit="$(git rev-parse --short HEAD 2>/dev/null || echo unknown)"
    [[ -z "$(git status --porcelain -- cuda crates 2>/dev/null)" ]] || commit="$commit+uncommitted"
    echo "$commit" > "$stage/ab-$name/commit.txt"
    mkdir -p "$BIN"
    tar -C "$stage" -cJf "$BIN/ab-$name.tar.xz" "ab-$name"
    rm -rf "$stage"
    echo "$BIN/ab-$name.tar.xz: $(du -m "$BIN/ab-$name.tar.xz" | cut -f1) MB, commit $commit"
    local size
    size=$(du -sm "$BIN" | cut -f1)
    if ((size >= 64)); then
        echo "warning: .gpu-bin holds $size MiB, over the 64 MiB the device tool carries: remove builds no longer compared" >&2
    fi
}

# The rows a section's run prints, on one line: "2^24 sort=radix 96.62 ms; ..." for dense, the
# pipeline group's kernels and steps for the partition (the benchmark's rows are
# "name | size | variant | time | notes").
summarise() { # section log
    case "$1" in
        dense)
            awk -F' *[|] *' '/^MSM G1 dense / && $1 !~ /upload/ {printf "%s %s %s; ", $2, $3, $4} END {print ""}' "$2" ;;
        partition)
            awk -F' *[|] *' '/^(PARTITION kernels|partition: )/ && $3 ~ /^pipeline/ {
                split($1, w, " "); printf "%s %s; ", (w[1] == "PARTITION") ? "kernels" : w[2], $4
            } END {print ""}' "$2" ;;
    esac
}

device() {
    (($# >= 2)) || { echo "usage: $0 device NAME NAME... (at least two builds)" >&2; exit 2; }
    local out="${OUT:-$ROOT/gpu-out}" work name
    for name in "$@"; do
        [[ -f "$BIN/ab-$name.tar.xz" ]] || { echo "error: no $BIN/ab-$name.tar.xz (scripts/gpu-ab.sh build $name)" >&2; exit 2; }
    done
    mkdir -p "$out"
    work="$(mktemp -d)"
    mkdir -p "$work/ab"
    for name in "$@"; do
        tar -C "$work" -xJf "$BIN/ab-$name.tar.xz"
        echo "build $name: commit $(cat "$work/ab-$name/commit.txt")"
    done
    nvidia-smi --query-gpu=name,memory.total,driver_version,clocks.max.sm --format=csv,noheader 2>/dev/null
    local logs="$work/ab" status=0 order=("$@") rev=() i sec limit args rc s
    for ((i = $# - 1; i >= 0; i--)); do rev+=("${order[i]}"); done
    for sec in ${AB_SECTIONS:-dense partition}; do
        # the arguments' defaults split into words on purpose
        # shellcheck disable=SC2206
        case "$sec" in
            dense) limit=90; args=(--variants ${AB_DENSE_ARGS:---only sort=radix,pre --sections msm --msm-min 24 --msm-max 26}) ;;
            partition) limit=100; args=(--variants --sections partition ${AB_PARTITION_ARGS:---partition-mix 8mib --only pipeline --reps 3}) ;;
            *) echo "unknown section $sec (dense, partition)" >&2; status=2; continue ;;
        esac
        i=0
        for name in "${order[@]}" "${rev[@]}"; do
            i=$((i + 1))
            s=$SECONDS
            timeout "$limit" "$work/ab-$name/proofline-gpu-bench" "${args[@]}" \
                > "$logs/$sec-$i-$name.log" 2> "$logs/$sec-$i-$name.err"
            rc=$?
            ((rc == 0)) || status=1
            echo "$sec $name (run $i, rc=$rc, $((SECONDS - s)) s): $(summarise "$sec" "$logs/$sec-$i-$name.err")"
        done
    done
    if [[ "${AB_TESTS:-1}" != 0 ]]; then
        export PROOFLINE_GPU_TEST_MAX_LOG="${PROOFLINE_GPU_TEST_MAX_LOG:-20}"
        for name in "${order[@]:1}"; do
            timeout 60 "$work/ab-$name/test-proofline_gpu" --skip emu:: > "$logs/unit-$name.log" 2>&1
            rc=$?
            ((rc == 0)) || status=1
            echo "tests $name unit: rc=$rc, $(grep -E '^test result' "$logs/unit-$name.log" | tail -n1)"
            timeout 120 "$work/ab-$name/test-gpu" msm precomputed held_tail split_windows sparse g2 \
                > "$logs/gpu-$name.log" 2>&1
            rc=$?
            ((rc == 0)) || status=1
            echo "tests $name GPU (MSMs and G2 up to 2^$PROOFLINE_GPU_TEST_MAX_LOG): rc=$rc, $(grep -E '^test result' "$logs/gpu-$name.log" | tail -n1)"
            grep -E "panicked|FAILED" "$logs/gpu-$name.log" | head -n 3
        done
    fi
    tar -C "$work" -cJf "$out/ab.tar.xz" ab
    rm -rf "$work"
    return $status
}

case "${1:-}" in
    build) shift; build "$@" ;;
    device) shift; device "$@" ;;
    *) echo "usage: $0 build NAME | device NAME NAME..." >&2; exit 2 ;;
esac
