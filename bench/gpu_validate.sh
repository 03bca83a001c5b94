#!/usr/bin/env bash
# One device run for issue 13's out-of-sample check (the H200): Nsight Compute's wavefront
# counts for shared and global load patterns (bench/lds_wavefronts.py), the GPU tests, and
# `measure` at sizes the model was not calibrated on: the three user-style kernels and the
# shipped matmul. Records land in $OUT/records.tar.gz (the device returns 8 files at most);
# unpack them under bench/results/h200-validate.
set -u
. "$(dirname "$0")/gpu_setup.sh"
R=$OUT/records; mkdir -p "$R"
OUT=$R python bench/lds_wavefronts.py >> "$LOG" 2>&1; echo "exit $? for lds_wavefronts" >> "$LOG"
python -m pytest -q -m gpu tests/test_gpu.py -p no:cacheprovider >> "$LOG" 2>&1
m() { local out=$1; shift; python -m occupancy measure "$@" --json -o "$R/$out" > /dev/null 2>> "$LOG"
      echo "exit $? for $out: $*" >> "$LOG"; }
m sgemm-3072.json examples/sgemm/tune.yaml --kernel sgemm2d --set M=3072 --set N=3072 --set K=3072
m sgemm-6144.json examples/sgemm/tune.yaml --kernel sgemm2d --set M=6144 --set N=6144 --set K=6144 --reps 10
m transpose-6144.json examples/transpose/tune.yaml --kernel transpose --set N=6144
m transpose-5000.json examples/transpose/tune.yaml --kernel transpose --set N=5000
m llmc-4096-1024-1024.json examples/llmc/tune.yaml --kernel matmul_forward_kernel1 --set BT=4096 --set C=1024 --set OC=1024
m matmul-2048.json matmul -n 2048
m matmul-3000.json matmul -n 3000
m matmul-8192.json matmul -n 8192 --reps 5
(cd "$OUT" && tar czf records.tar.gz records && rm -rf records)
grep -E "passed|failed|exit|ncu|banks" "$LOG" | tail -60
