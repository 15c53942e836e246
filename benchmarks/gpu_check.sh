#!/usr/bin/env bash
# GPU readiness check, a few minutes on one GPU: bf16 tokens/s and MFU, which fused SDPA kernels
# take the encoder's mask, the seed-parallel speed-up for K = 8 and 32, and the torch.compile cost.
# Usage: benchmarks/gpu_check.sh [--ks 8,32] [--steps 300] [--out gpu_check.json]
set -euo pipefail
cd "$(dirname "$0")/.."
if [ -x .venv/bin/python ]; then PY=.venv/bin/python; else PY=${PYTHON:-python3}; fi
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader || true
exec timeout 290 "$PY" -m ablate.benchmarks.gpu_check "$@"
