#!/usr/bin/env bash
# Dumps the SASS of the embedded kernel cubins and counts IMAD.WIDE.U32.X (the
# wide multiply-add with carry that shows both halves of each product in one
# carry chain, see cuda/mont.cuh). Works on a CPU machine: cuobjdump and
# nvdisasm come from PyPI (13.2 wheels; 13.0 ones are not published) into the
# same cache as scripts/install-nvcc.sh.
#
#   scripts/gpu-sass.sh [DIR_WITH_CUBINS]     (default: .gpu-bin/cubins)
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
DIR="${1:-$ROOT/.gpu-bin/cubins}"
CACHE="${PROOFLINE_CUDA_HOME:-$HOME/.cache/proofline/cuda-13.0}/tools"
if ! command -v cuobjdump >/dev/null; then
    if [[ ! -x "$CACHE/nvidia/cu13/bin/cuobjdump" ]]; then
        python3 -m pip install --quiet --disable-pip-version-check --target "$CACHE" \
            "nvidia-cuda-cuobjdump==13.2.51" "nvidia-cuda-nvdisasm==13.2.51" >&2
        chmod +x "$CACHE"/nvidia/cu13/bin/* || true
    fi
    export PATH="$CACHE/nvidia/cu13/bin:$PATH"
fi
for f in "$DIR"/*.cubin; do
    echo "$(basename "$f"): IMAD.WIDE.U32.X x $(cuobjdump -sass "$f" | grep -c 'IMAD.WIDE.U32.X')"
done
