#!/usr/bin/env bash
# One device run for issues 11 and 13 (the H200): the GPU tests (driver occupancy and
# cluster occupancy against the solver) and `measure` over the tuning spaces of three
# user-style kernels at several sizes. Results land in $OUT; commit them under bench/results.
set -u
. "$(dirname "$0")/gpu_setup.sh"
python -m pytest -q -m gpu tests/test_gpu.py -p no:cacheprovider >> "$LOG" 2>&1
m() { python -m occupancy measure "$@" >> "$LOG" 2>&1; echo "exit $? for $*" >> "$LOG"; }
m examples/sgemm/tune.yaml --kernel sgemm2d --json -o "$OUT/sgemm-4096.json" --store "$OUT/store.json"
m examples/sgemm/tune.yaml --kernel sgemm2d --set M=2048 --set N=2048 --set K=2048 --json -o "$OUT/sgemm-2048.json" --store "$OUT/store.json"
m examples/sgemm/tune.yaml --kernel sgemm2d --set M=8192 --set N=8192 --set K=8192 --reps 10 --json -o "$OUT/sgemm-8192.json"
m examples/transpose/tune.yaml --kernel transpose --json -o "$OUT/transpose-8192.json"
m examples/transpose/tune.yaml --kernel transpose --set N=4096 --json -o "$OUT/transpose-4096.json"
m examples/llmc/tune.yaml --kernel matmul_forward_kernel1 --reps 10 --json -o "$OUT/llmc-matmul-forward.json"
grep -E "passed|failed|exit" "$LOG" | tail -12
