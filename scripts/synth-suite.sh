#!/usr/bin/env bash
# proofline synthesis suite: synthesis alone (no GPU needed) on the measurement machine.
#
#   scripts/synth-suite.sh build     on the build machine: builds proofline-synth and fil-r1cs
#                                    (release, stripped) into .synth-bin/synth.tar.xz
#   scripts/synth-suite.sh device [PHASE...]
#                                    on the measurement machine (no toolchain, no network): runs
#                                    the phases (default: 2kib 8mib 32gib), writes logs and JSON
#                                    under $OUT (default ./synth-out), prints the tables last.
#
# Phases (each seals or records what it needs; times measured on 2 cores in docs/benchmarks.md):
#   2kib   proofline-synth --shape 2kib: a fresh 2 KiB sector, its constraints recorded from the
#          blank circuit, then SYNTH_2KIB_PARTITIONS partitions per worker count
#          (SYNTH_2KIB_WORKERS, default 1,2,4,8,16), plain and pre-compiled
#   8mib   the same for a fresh 8 MiB sector (SYNTH_8MIB_WORKERS, default 1,2,4,8)
#   32gib  proofline-synth --shape 32gib: the 32 GiB shape recorded from its blank circuit (about
#          130 s of one core and 6.1 GB), the sparse products A·w, B·w, C·w on it with a random
#          assignment (3 runs), and the witness projected from a fresh 8 MiB sector's
#          per-challenge profile; about 25 GB peak
#
# Device-tool calls (this workplace), one or two phases per call to stay within 10 minutes:
#   run carry=[".synth-bin"] command="bash scripts/synth-suite.sh device 2kib 8mib"
#   run carry=[".synth-bin"] command="bash scripts/synth-suite.sh device 32gib"
# Environment: OUT, SYNTH_TIMEOUT (seconds per phase, default 540), SYNTH_BIN_DIR (use the
#   proofline-synth found there instead of unpacking .synth-bin).
set -uo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BIN="$ROOT/.synth-bin"

build() {
    set -e
    cd "$ROOT"
    export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$ROOT/target}"
    cargo build --release -p proofline-integration --bin proofline-synth
    cargo build --release -p proofline-filecoin --bin fil-r1cs
    local stage
    stage="$(mktemp -d)"
    mkdir -p "$stage/bin"
    cp "$CARGO_TARGET_DIR/release/proofline-synth" "$CARGO_TARGET_DIR/release/fil-r1cs" "$stage/bin/"
    strip "$stage"/bin/* 2>/dev/null || true
    local commit
    commit="$(git -C "$ROOT" rev-parse --short HEAD 2>/dev/null || echo unknown)"
    if [[ -n "$(git -C "$ROOT" status --porcelain -- crates actors integration 2>/dev/null)" ]]; then
        commit="$commit+uncommitted"
    fi
    echo "$commit" > "$stage/commit.txt"
    rm -rf "$BIN" && mkdir -p "$BIN"
    tar -C "$stage" -cJf "$BIN/synth.tar.xz" bin commit.txt
    cp "$stage/commit.txt" "$BIN/"
    rm -rf "$stage"
    echo ".synth-bin: $(du -sm "$BIN" | cut -f1) MiB (commit $(cat "$BIN/commit.txt"))"
}

WORK=""
SUMMARY=""

note() { echo "$*" | tee -a "$SUMMARY"; }

# One proofline-synth run: NAME ARGS...; the table (after the JSON line) goes to NAME-table.txt.
synth() {
    local name=$1 start rc
    shift
    start=$(date +%s)
    timeout "${SYNTH_TIMEOUT:-540}" "$WORK/bin/proofline-synth" --cache "$WORK/cache" \
        --json "$OUT/synth-$name.json" "$@" > "$OUT/synth-$name.log" 2> "$OUT/synth-$name.err"
    rc=$?
    note "synth $name: rc=$rc ($(( $(date +%s) - start )) s)"
    [[ $rc == 0 ]] || tail -n 5 "$OUT/synth-$name.err" | tee -a "$SUMMARY"
    awk 'NR > 1' "$OUT/synth-$name.log" > "$OUT/synth-$name-table.txt"
    return $rc
}

device() {
    OUT="${OUT:-$ROOT/synth-out}"
    mkdir -p "$OUT"
    SUMMARY="$OUT/synth-summary.txt"
    : > "$SUMMARY"
    WORK="$(mktemp -d /tmp/proofline-synth.XXXXXX)"
    if [[ -n "${SYNTH_BIN_DIR:-}" ]]; then
        # binaries already unpacked (scripts/gpu-suite.sh's synth phase)
        ln -s "$SYNTH_BIN_DIR" "$WORK/bin"
        cp "$SYNTH_BIN_DIR/../commit.txt" "$WORK/" 2>/dev/null || echo unknown > "$WORK/commit.txt"
    else
        tar -C "$WORK" -xJf "$BIN/synth.tar.xz"
    fi
    mkdir -p "$WORK/cache"
    note "date: $(date -u +%Y-%m-%dT%H:%MZ), commit: $(cat "$WORK/commit.txt"), cpus: $(nproc), memory: $(free -g | awk '/^Mem:/{print $2}') GiB"
    local status=0 phases=("$@")
    [[ ${#phases[@]} -gt 0 ]] || phases=(2kib 8mib 32gib)
    for p in "${phases[@]}"; do
        case "$p" in
            2kib) synth 2kib --shape 2kib --workers "${SYNTH_2KIB_WORKERS:-1,2,4,8,16}" \
                    --partitions "${SYNTH_2KIB_PARTITIONS:-32}" --mode both \
                    --constraints "$WORK/cache/2kib.r1cs" || status=1 ;;
            8mib) synth 8mib --shape 8mib --workers "${SYNTH_8MIB_WORKERS:-1,2,4,8}" \
                    --partitions "${SYNTH_8MIB_PARTITIONS:-16}" --mode both \
                    --constraints "$WORK/cache/8mib.r1cs" || status=1 ;;
            32gib) synth 32gib --shape 32gib --repeat 3 || status=1 ;;
            *) echo "unknown phase $p (2kib, 8mib, 32gib)" >&2; status=2 ;;
        esac
    done
    rm -rf "$WORK"
    echo
    echo "==== proofline synthesis suite ===="
    cat "$SUMMARY"
    for p in "${phases[@]}"; do
        [[ -s "$OUT/synth-$p-table.txt" ]] && { echo; cat "$OUT/synth-$p-table.txt"; }
    done
    return $status
}

case "${1:-build}" in
    device) shift; device "$@" ;;
    build) build ;;
    *) echo "usage: $0 [build | device [2kib|8mib|32gib]...]" >&2; exit 2 ;;
esac
