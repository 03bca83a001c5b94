#!/usr/bin/env bash
# The final device run of a session: the GPU tests and `measure` through every record path
# (shipped families, a tuning space with --store), to check the code that only runs on a
# GPU after it changed. Records land in $OUT; tests/test_schema.py validates them.
set -u
. "$(dirname "$0")/gpu_setup.sh"
python -m pytest -q -m gpu tests/test_gpu.py -p no:cacheprovider >> "$LOG" 2>&1
m() { python -m occupancy measure "$@" >> "$LOG" 2>&1; echo "exit $? for $*" >> "$LOG"; }
m matmul -n 2048 --reps 5 -o "$OUT/matmul-2048.json"
m transpose -n 8192 --reps 5 -o "$OUT/transpose-8192.json"
m examples/transpose/tune.yaml --kernel transpose --set N=4096 --top 4 --reps 5 \
  -o "$OUT/tune-transpose-4096.json" --store "$OUT/store.json"
if [ -f ../shared/realcode/llm.c/dev/cuda/layernorm_forward.cu ]; then  # carry: [".llmc"]
  m examples/llmc/tune.yaml --kernel layernorm_forward_kernel5 --top 2 --reps 5 \
    -o "$OUT/tune-layernorm5.json"
fi
grep -E "passed|failed|exit|Error|Traceback" "$LOG" | tail -20
