#!/usr/bin/env bash
# Installs nvcc (CUDA 13.0) from PyPI into a per-user cache directory, so that
# crates/proofline-gpu/build.rs can compile the kernels in cuda/ ahead of time.
#
# Prints the nvcc path on its last line.
#
#   scripts/install-nvcc.sh            # installs into ${PROOFLINE_CUDA_HOME:-$HOME/.cache/proofline/cuda-13.0}
#   PROOFLINE_CUDA_HOME=/opt/cuda13 scripts/install-nvcc.sh
#
# build.rs looks for nvcc in: $PROOFLINE_NVCC, then this cache dir, then PATH.
set -euo pipefail

CUDA_HOME_DIR="${PROOFLINE_CUDA_HOME:-$HOME/.cache/proofline/cuda-13.0}"
PY="${PYTHON:-python3}"

find_nvcc() {
    find "$CUDA_HOME_DIR" -type f -name nvcc -path '*/bin/nvcc' 2>/dev/null | head -n1
}

existing="$(find_nvcc || true)"
if [[ -n "$existing" && -x "$existing" ]]; then
    echo "nvcc already installed" >&2
    echo "$existing"
    exit 0
fi

mkdir -p "$CUDA_HOME_DIR"
"$PY" -m pip install --quiet --disable-pip-version-check --no-warn-script-location \
    --target "$CUDA_HOME_DIR" \
    "nvidia-cuda-nvcc==13.0.88" \
    "nvidia-cuda-runtime==13.0.*" \
    "nvidia-cuda-cccl==13.0.*" \
    "nvidia-cuda-crt==13.0.*" \
    "nvidia-nvvm==13.0.*" >&2

nvcc="$(find_nvcc || true)"
if [[ -z "$nvcc" ]]; then
    echo "install-nvcc.sh: nvcc not found under $CUDA_HOME_DIR after install" >&2
    exit 1
fi
chmod +x "$nvcc" || true
# ptxas / cicc / fatbinary also need the executable bit in some wheel layouts.
find "$CUDA_HOME_DIR" -path '*/bin/*' -type f -exec chmod +x {} + 2>/dev/null || true
find "$CUDA_HOME_DIR" -path '*/nvvm/bin/*' -type f -exec chmod +x {} + 2>/dev/null || true
echo "$nvcc"
