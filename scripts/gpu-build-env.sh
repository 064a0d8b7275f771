#!/usr/bin/env bash
# proofline: what every build for the GPU machine shares, sourced by scripts/gpu-suite.sh and
# scripts/gpu-ab.sh (not run on its own).
#
#   gpu_build_env ROOT   exports the build's environment: the target directory (ROOT/target unless
#                        CARGO_TARGET_DIR is set), nvcc (PROOFLINE_NVCC, else CUDA 13.0's from PyPI
#                        through scripts/install-nvcc.sh), the kernels required, and sm_90 only
#                        without PTX unless PROOFLINE_CUDA_ARCHS / PROOFLINE_CUDA_PTX say otherwise
#                        (the device is an H100 or H200; the shipped default is sm_80/86/89/90 +
#                        PTX), so that the carried binaries stay small
#   list_tests           reads `cargo test --no-run --message-format=json` on stdin and prints
#                        "KIND NAME EXECUTABLE" for each test binary built

gpu_build_env() {
    local root=$1
    export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$root/target}"
    if [[ -z "${PROOFLINE_NVCC:-}" ]]; then
        PROOFLINE_NVCC="$("$root/scripts/install-nvcc.sh" | tail -n1)"
        export PROOFLINE_NVCC
    fi
    export PROOFLINE_REQUIRE_KERNELS=1
    export PROOFLINE_CUDA_ARCHS="${PROOFLINE_CUDA_ARCHS:-90}" PROOFLINE_CUDA_PTX="${PROOFLINE_CUDA_PTX:-0}"
}

list_tests() {
    python3 -c '
import json, sys
for line in sys.stdin:
    try: m = json.loads(line)
    except Exception: continue
    kind = m.get("target", {}).get("kind", [""])[0]
    if m.get("reason") == "compiler-artifact" and m.get("executable") and m.get("profile", {}).get("test") and kind != "bin":
        print(kind, m["target"]["name"], m["executable"])
'
}
