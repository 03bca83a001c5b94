#!/usr/bin/env bash
# bench/tilexp/ncu_load.sh: Nsight Compute on the `load` twins of ncu.sh's six points and on
# three `load1d` points (one launch each, the second): what the tile loads cost the
# load/store unit (its data-stage wavefronts in all, shared among them; the global load
# requests and sectors), the time, cycles, issue rate and the stalls on the loads and the
# barrier. Writes $OUT/ncu-load.csv (each point's CSV after a `## N ENTRY LABEL` line),
# ncu-load.log, device.txt.
set -u
: "${OUT:?Error: set OUT to the folder the results go to}"
cd "$(dirname "$0")/../.."
R=smsp__average_warps_issue_stalled
M=gpu__time_duration.sum,sm__cycles_elapsed.avg,smsp__inst_executed.sum
M=$M,smsp__issue_active.avg.per_cycle_active,smsp__warps_active.avg.per_cycle_active
M=$M,l1tex__data_pipe_lsu_wavefronts.sum,l1tex__data_pipe_lsu_wavefronts_mem_shared.sum
M=$M,l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum,l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum
M=$M,l1tex__data_pipe_lsu_wavefronts.avg.pct_of_peak_sustained_elapsed
for s in long_scoreboard barrier short_scoreboard mio_throttle lg_throttle dispatch_stall; do
  M=$M,${R}_${s}_per_issue_active.ratio
done
i=0
while read -r entry t; do
  i=$((i + 1))
  echo "$i: $entry $t" >> "$OUT/ncu-load.log"
  echo "## $i $entry $t" >> "$OUT/ncu-load.csv"
  PYTHONPATH=. ncu --csv --print-units base -k "regex:tilexp" --launch-skip 1 --launch-count 1 \
    --metrics "$M" python3 -m occupancy measure bench/tilexp/tune.yaml --kernel "$entry" \
    --tiles "$t" --reps 3 2>> "$OUT/ncu-load.log" | grep '^"' >> "$OUT/ncu-load.csv"
  echo "$i: exit ${PIPESTATUS[0]}" >> "$OUT/ncu-load.log"
done <<'POINTS'
load BM=128 BN=128 BK=16 TM=16 TN=4 VEC=0 PAD=0
load BM=128 BN=128 BK=16 TM=16 TN=4 VEC=1 PAD=0
load BM=128 BN=128 BK=16 TM=8 TN=8 VEC=0 PAD=0
load BM=128 BN=128 BK=16 TM=8 TN=8 VEC=1 PAD=0
load BM=64 BN=128 BK=16 TM=4 TN=8 VEC=1 PAD=0
load BM=64 BN=128 BK=16 TM=8 TN=4 VEC=0 PAD=0
load1d BM=32 BN=32 BK=8 TM=4 PAD=0
load1d BM=64 BN=64 BK=8 TM=8 PAD=0
load1d BM=32 BN=32 BK=4 TM=8 PAD=0
POINTS
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv > "$OUT/device.txt"
