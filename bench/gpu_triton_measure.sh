#!/usr/bin/env bash
# Issue 22's `measure` for Triton entries on the H200 (triton 3.6, torch, CuPy there; no
# internet): the examples' Triton entries (tutorial matmul at M=16 and 4096, fused softmax,
# vLLM-style fused MoE at M=1, 64, 256) measured whole, the GPU tests, then three
# autotuning spaces (examples/triton/spaces.yaml: matmul 48 configs, fused MoE 64, softmax
# 20) measured whole and with --budget 4 and 8. Each record is checked by
# bench/triton_measure_summary.py: every config verified against its reference, driver
# programs per SM = predicted, launched shared/registers/spills = offline compile, no
# launch failure, and each budget's best against the whole space's best.
# Run from the repository root:  OUT=/some/dir bash bench/gpu_triton_measure.sh
# (about 5-7 minutes; LIMIT=450 s for everything, a measure at most 150 s, what is left
# after the limit is skipped and logged as such). Results: $OUT/*.json,
# $OUT/summary.json, $OUT/gpu-log.txt; commit them under bench/results/h200-triton-measure.
set -u
OUT=${OUT:?set OUT to the results folder}
mkdir -p "$OUT"
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
export OCCUPANCY_CACHE_DIR=$(mktemp -d)   # compile for real: no cache from an earlier run
LOG=$OUT/gpu-log.txt
{ date -u; nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv
  echo "commit: ${COMMIT:-$(git rev-parse --short HEAD 2>/dev/null || echo unknown)}"
  python3 -c "import triton, torch, cupy; print('triton', triton.__version__, 'torch', torch.__version__, 'cupy', cupy.__version__)"
} > "$LOG" 2>&1
T0=$SECONDS
LIMIT=${LIMIT:-450}  # seconds for everything; a run gets what is left (at most 150 s)
m() {  # m NAME ARGS...: one measure, its record in $OUT/NAME.json, its exit and time in the log
  local name=$1; shift
  local t=$SECONDS left=$((LIMIT - (SECONDS - T0)))
  if [ "$left" -lt 20 ]; then echo "skipped $name: the ${LIMIT} s are spent" >> "$LOG"; return; fi
  [ "$left" -gt 150 ] && left=150
  timeout "$left" python3 -m occupancy measure "$@" --reps 10 -o "$OUT/$name.json" >> "$LOG" 2>&1
  echo "exit $? in $((SECONDS - t)) s for $name: $*" >> "$LOG"
}
E=examples/triton
m matmul-M16 $E/manifest.yaml --kernel matmul --set M=16 --store "$OUT/store.json"
m matmul-M4096 $E/manifest.yaml --kernel matmul --set M=4096 --store "$OUT/store.json"
m softmax $E/manifest.yaml --kernel softmax --store "$OUT/store.json"
for M in 1 64 256; do
  m fused_moe-M$M $E/manifest.yaml --kernel fused_moe --set M=$M --store "$OUT/store.json"
done
t=$SECONDS
timeout 150 python3 -m pytest -q -m gpu tests/test_gpu.py -p no:cacheprovider >> "$LOG" 2>&1
echo "exit $? in $((SECONDS - t)) s for the GPU tests" >> "$LOG"
for s in matmul_space moe_space softmax_space; do
  m $s-full $E/spaces.yaml --kernel $s
  m $s-budget4 $E/spaces.yaml --kernel $s --budget 4
  m $s-budget8 $E/spaces.yaml --kernel $s --budget 8
done
echo "measure runs: $((SECONDS - T0)) s" >> "$LOG"
echo "total: $((SECONDS - T0)) s" >> "$LOG"
grep -E "^exit|^skipped|passed|failed|Error|Traceback|total" "$LOG" | tail -30
python3 bench/triton_measure_summary.py "$OUT" 2>&1 | tee -a "$LOG"
