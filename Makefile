# proofline — the commands a newcomer and CI need. See README.md.

CARGO ?= cargo
SHELL := /bin/bash

.PHONY: run test lint fmt bench harness crash-load build gpu-suite

## Build, then run the demo: daemon on a free local port, demo parameters generated if missing,
## one job proved over HTTP, proof verified and printed with its stage timings, daemon stopped.
run:
	$(CARGO) run --release -p proofline -- demo

## The whole test suite (release: the proofs are real and slow in debug). Ends with one line
## totalling every test binary: "N passed, M failed".
test:
	set -o pipefail; $(CARGO) test --release --workspace 2>&1 \
	  | awk '{ print; fflush() } /^test result:/ { p += $$4; f += $$6 } END { print p " passed, " f " failed" }'

build:
	$(CARGO) build --release --workspace

lint:
	$(CARGO) fmt --all -- --check
	$(CARGO) clippy --release --workspace --all-targets -- -D warnings

fmt:
	$(CARGO) fmt --all

## Prover benchmark against bellperson (JSON + table); see docs/benchmarks.md.
bench:
	$(CARGO) run --release -p proofline-integration --bin proofline-bench

## HTTP load harness against an in-process daemon.
harness:
	$(CARGO) run --release -p proofline-integration --bin proofline-harness -- --jobs 8 --concurrency 2

## kill -9 of a loaded daemon and a restart: every accepted job completes once (docs/benchmarks.md).
crash-load:
	$(CARGO) build --release -p proofline -p proofline-integration --bins
	$${CARGO_TARGET_DIR:-target}/release/proofline-crash-load --jobs 40 --concurrency 2
