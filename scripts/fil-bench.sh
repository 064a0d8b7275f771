#!/usr/bin/env bash
# 2KiB PoRep C2 through proofline (CPU backend) vs filecoin-proofs' seal_commit_phase2,
# same machine, sector and parameters (owner: Filecoin, crates/proofline-filecoin).
# Prints one JSON line (stdout) and a table with the stage split and the zero/one/other
# proportions of the A, B, L and aux scalars (stderr). Generates the fixture if missing.
#
#   scripts/fil-bench.sh [--no-reference] [--cache DIR]
#
# Record results in docs/filecoin.md (and docs/benchmarks.md) with date, machine and commit.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
echo "# $(date -u +%FT%TZ) commit $(git rev-parse --short HEAD 2>/dev/null || echo '?') $(nproc) CPUs: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | xargs)" >&2
exec cargo run --quiet --release -p proofline-filecoin --bin fil-bench -- "$@"
