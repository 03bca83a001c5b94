#!/usr/bin/env bash
# One device run: the GPU tests (with `reference:` naming another kernel), and llm.c's
# layernorm kernel 3 tuned over its block size, verified against its kernel 1, at
# GPT-2 small's shape (B 8, T 1024, C 768) and two more. carry: [".llmc"] (llm.c's
# common.h and layernorm_forward.cu). Results land in $OUT; commit them under
# bench/results/h200-layernorm.
set -u
. "$(dirname "$0")/gpu_setup.sh"
python -m pytest -q -m gpu tests/test_gpu.py -p no:cacheprovider >> "$LOG" 2>&1
m() { python -m occupancy measure examples/llmc/tune.yaml --kernel layernorm_forward_kernel3 "$@" >> "$LOG" 2>&1
      echo "exit $? for $*" >> "$LOG"; }
m --json -o "$OUT/layernorm-8-1024-768.json"
m --set B=4 --set T=1024 --set C=1600 --json -o "$OUT/layernorm-4-1024-1600.json"
m --set B=32 --set T=1024 --set C=768 --json -o "$OUT/layernorm-32-1024-768.json"
grep -E "passed|failed|exit" "$LOG" | tail -6
