#!/usr/bin/env bash
# bench/ncu/sgemm2d.sh: what SGEMM_CUDA's 2-D blocktiling points pay that the scheduler probe
# (bench/sched/tile_loop.py, docs/model.md item 34) does not see (validation part: looked at
# for a cause only). Nsight Compute's stall reasons, issue rate, warps, shared wavefronts and
# global requests of one launch (the second) of four points at 2048^3: a / b the probe's #1
# and #3 (measured 1.265x and 1.030x the fastest), c the measured fastest, d the model's #1
# (1.021x). Needs one-point manifests made from the local corpus's sgemm-2d entry
# (bench/CORPUS.md) under $CORPUS/sgemm-2d/ncu-{a,b,c,d}.yaml. Writes $OUT/ncu-2d-P.csv, ncu-2d.log, device.txt.
set -u
cd "$(dirname "$0")/../.."
R=smsp__average_warps_issue_stalled
M=gpu__time_duration.sum,smsp__inst_executed.sum,sm__cycles_elapsed.avg
M=$M,smsp__issue_active.avg.per_cycle_active,smsp__warps_active.avg.per_cycle_active
M=$M,l1tex__data_pipe_lsu_wavefronts_mem_shared.sum,l1tex__data_bank_conflicts_pipe_lsu_mem_shared.sum
M=$M,l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum,l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum
M=$M,lts__t_sector_hit_rate.pct,dram__bytes_read.sum,smsp__inst_executed_pipe_lsu.sum
for s in long_scoreboard lg_throttle mio_throttle short_scoreboard wait math_pipe_throttle \
    no_instruction drain membar not_selected selected dispatch_stall branch_resolving tex_throttle \
    barrier misc; do M=$M,${R}_${s}_per_issue_active.ratio; done
for p in a b c d; do
  PYTHONPATH=. ncu --csv --print-units base -k "regex:sgemm2DBlocktiling" --launch-skip 1 \
    --launch-count 1 --metrics "$M" python3 -m occupancy measure "$CORPUS/sgemm-2d/ncu-$p.yaml" \
    --kernel sgemm2DBlocktiling --reps 3 > "$OUT/ncu-2d-$p.csv" 2>> "$OUT/ncu-2d.log"
  echo "$p: exit $?" | tee -a "$OUT/ncu-2d.log"
done
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv > "$OUT/device.txt"
