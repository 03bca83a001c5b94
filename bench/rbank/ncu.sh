#!/usr/bin/env bash
# bench/rbank/ncu.sh: which instructions of a register-blocked FFMA loop wait at dispatch, from
# Nsight Compute's PC sampling (the source page, per SASS instruction): bench/icache/unroll.cu's
# k loop (8x4, 8x8, 4x4 outer products, unrolled 32 times) and three of bench/tilexp's `noload`
# points (scalar- and float4-load tiles), one launch each.
# The per-instruction samples test whether a register-bank rule explains the waits (docs/model.md
# item 41). Writes $OUT/rbank.tgz (a folder of NAME-src.csv: the source page; NAME-raw.csv:
# the launch's metrics; ncu.log) and $OUT/device.txt.
# Usage: OUT=DIR bash bench/rbank/ncu.sh
#        CONFIGS="128:70000 256:110000" OUT=DIR bash bench/rbank/ncu.sh  (unroll.cu alone, at
#        those block:shared-bytes launches; bench/results/h200-rbank's run2)
#        TILES=1 CONFIGS=none POINTS="BM=64 BN=128 ...;..." OUT=DIR bash bench/rbank/ncu.sh
#        (these `noload` points alone, `;` between them; run3)
set -u
: "${OUT:?Error: set OUT to the folder the results go to}"
cd "$(dirname "$0")/../.."
W=$OUT/rbank; mkdir -p "$W"; B=/tmp/rbank-build; mkdir -p $B
R=smsp__average_warps_issue_stalled
M=gpu__time_duration.sum,smsp__inst_executed.sum,sm__cycles_elapsed.avg,smsp__cycles_active.avg
M=$M,smsp__issue_active.avg.per_cycle_active,smsp__warps_active.avg.per_cycle_active
M=$M,sm__inst_executed_pipe_fma.avg.pct_of_peak_sustained_active
for s in dispatch_stall short_scoreboard wait not_selected barrier mio_throttle math_pipe_throttle; do
  M=$M,${R}_${s}_per_issue_active.ratio; done
S="--section SourceCounters --section WarpStateStats"
prof() {  # NAME KERNEL-REGEX SKIP COMMAND...
  local name=$1 k=$2 skip=$3; shift 3
  echo "== $name: $*" >> "$W/ncu.log"
  ncu $S --metrics "$M" -k "regex:$k" --launch-skip "$skip" --launch-count 1 -f -o "$B/$name" "$@" \
    >> "$W/ncu.log" 2>&1
  echo "$name: exit $?" >> "$W/ncu.log"
  ncu -i "$B/$name.ncu-rep" --page source --csv --print-source sass > "$W/$name-src.csv" 2>> "$W/ncu.log"
  ncu -i "$B/$name.ncu-rep" --page raw --csv > "$W/$name-raw.csv" 2>> "$W/ncu.log"
}
# CONFIGS: unroll.cu's block:shared-bytes launches (default 128:110000, one block of 4 warps
# an SM: one warp a scheduler); each is profiled on its own
for t in "8 4" "8 8" "4 4"; do set -- $t
  nvcc -O3 -arch=sm_90 -DTM=$1 -DTN=$2 -DUNROLL=32 -o $B/u$1$2 bench/icache/unroll.cu >> "$W/ncu.log" 2>&1
  for c in ${CONFIGS:-128:110000}; do
    [ "$c" = none ] && continue
    prof "unroll32-$1x$2-${c/:/-}" outer 3 $B/u$1$2 "$c"
  done
done
i=0
[ -n "${CONFIGS:-}" ] && TILES=${TILES:-0}
DEFAULT_POINTS="BM=128 BN=128 BK=16 TM=16 TN=4 VEC=0 PAD=0;BM=128 BN=128 BK=16 TM=8 TN=8 VEC=0 PAD=0"
DEFAULT_POINTS="$DEFAULT_POINTS;BM=128 BN=128 BK=16 TM=8 TN=8 VEC=1 PAD=0"
IFS=';' read -r -a POINT_LIST <<< "${POINTS:-$DEFAULT_POINTS}"
[ "${TILES:-1}" = 1 ] && for t in "${POINT_LIST[@]}"; do
  i=$((i + 1))
  PYTHONPATH=. prof "$([ -n "${POINTS:-}" ] && echo point || echo tilexp)-$i" tilexp 1 python3 -m occupancy measure bench/tilexp/tune.yaml \
    --kernel noload --tiles "$t" --reps 3
done
ncu --version >> "$W/ncu.log" 2>&1
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv > "$OUT/device.txt"
tar -czf "$OUT/rbank.tgz" -C "$OUT" rbank && rm -rf "$W"
