#!/usr/bin/env bash
# Everything that needs the GPU, in one call on the device machine:
#   detect the profile, run the GPU tests, measure every shipped kernel.
# Writes its records under $OUT (default: bench/results/gpu-<date>).
set -uo pipefail
cd "$(dirname "$0")/.."
OUT="${OUT:-bench/results/gpu-$(date +%F)}"
mkdir -p "$OUT"
export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}"
{
  echo "date: $(date -u '+%F %T UTC')"
  echo "commit: $(git rev-parse --short HEAD 2>/dev/null || echo unknown)"
  nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,memory.total --format=csv
  nvcc --version | tail -2
  python3 -c "import cupy; print('cupy', cupy.__version__)"
} > "$OUT/environment.txt" 2>&1
python3 -m occupancy devices detect -o "$OUT/detected.yaml" --force
python3 -m pytest -q -m gpu tests/test_gpu.py -p no:cacheprovider > "$OUT/gpu-tests.txt" 2>&1
echo "gpu tests rc=$?" >> "$OUT/gpu-tests.txt"
COLUMNS=110 python3 -m occupancy measure all -o "$OUT/measure.json" ${MEASURE_ARGS:-} > "$OUT/measure.txt" 2>&1
echo "measure rc=$?" >> "$OUT/measure.txt"
cat "$OUT/environment.txt" "$OUT/gpu-tests.txt" "$OUT/measure.txt"
