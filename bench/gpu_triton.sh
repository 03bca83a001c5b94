#!/usr/bin/env bash
# Issue 22 on the H200 (triton 3.6, torch, CuPy there): offline Triton compiles of >= 300
# configs of examples/triton (matmul, softmax, fused MoE) against the kernels Triton
# launches (shared, n_regs, n_spills, programs per SM vs the driver, OutOfResources), the
# hook inside triton.autotune, and pruning a 1,152-config fused-MoE space with the table.
# ~5-8 minutes with 16 CPUs (compiles run in parallel). Arguments go to the script:
# --quick (a 1/8 run), --only=A / --only=CB (parts A, C, B; two runs stay under 10 min).
# Results land in $OUT (triton-*.json, gpu-log.txt); commit them under
# bench/results/h200-triton.
set -u
. "$(dirname "$0")/gpu_setup.sh"
export OCCUPANCY_CACHE_DIR=$(mktemp -d)   # compile for real: no cache from an earlier run
export TRITON_CACHE_DIR=$(mktemp -d)
python -c "import triton, torch; print('triton', triton.__version__, 'torch', torch.__version__)" >> "$LOG" 2>&1
python bench/gpu_triton.py "$OUT" "$@" >> "$LOG" 2>&1
echo "exit $?" >> "$LOG"
tail -80 "$LOG"
