#!/usr/bin/env bash
# bench/ncu/run.sh: Nsight Compute's view of five SGEMM_CUDA warptiling points at 2048^3
# (bench/ncu/warptiling.yaml; the kernel from bench/corpus, carried to the GPU machine):
# where the warps stall and how many shared-memory bank conflicts the stores and loads
# have, as BK grows from 8 to 32. `measure` launches them (verified against A @ B); ncu
# profiles the 5th launch of each point. Writes $OUT/ncu.csv and $OUT/measure.json.
set -u
cd "$(dirname "$0")"
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader > $OUT/device.txt
R=smsp__average_warps_issue_stalled
M=gpu__time_duration.sum,sm__cycles_elapsed.avg,smsp__inst_executed.sum,smsp__issue_active.avg.per_cycle_active
M=$M,smsp__warps_active.avg.per_cycle_active,sm__pipe_fma_cycles_active.avg.pct_of_peak_sustained_active
M=$M,l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_st.sum,l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum
M=$M,l1tex__data_pipe_lsu_wavefronts_mem_shared_op_st.sum,l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld.sum
M=$M,smsp__inst_executed_op_shared_st.sum,smsp__inst_executed_op_shared_ld.sum,smsp__inst_executed_op_global_ld.sum
for s in barrier short_scoreboard long_scoreboard mio_throttle no_instruction math_pipe_throttle wait \
    not_selected selected dispatch_stall lg_throttle branch_resolving drain membar imc_miss misc \
    tex_throttle sleeping; do M=$M,${R}_${s}_per_issue_active.ratio; done
PYTHONPATH=../.. ncu --csv --print-units base -k "regex:sgemmWarptiling" --metrics "$M" \
  python3 -m occupancy measure warptiling.yaml --kernel sgemmWarptiling --reps 5 \
  -o $OUT/measure.json > $OUT/ncu.csv 2> $OUT/ncu.err
echo "exit $?"; tail -3 $OUT/ncu.err
python3 - "$OUT/ncu.csv" <<'PY'
import csv, io, sys
lines = [x for x in open(sys.argv[1]).read().splitlines() if x.startswith('"')]
rows = list(csv.DictReader(io.StringIO("\n".join(lines))))
import statistics
vals = {}
for r in rows:
    name = r["Kernel Name"].split("sgemmWarptiling<")[-1].split(">")[0].replace(" ", "")
    vals.setdefault(r["Metric Name"], {}).setdefault(name, []).append(float(r["Metric Value"].replace(",", "")))
table = {m: {n: f"{statistics.median(x):.4g}" for n, x in v.items()} for m, v in vals.items()}
print("launches per point:", {n: len(x) for n, x in next(iter(vals.values())).items()})
names = sorted({n for v in table.values() for n in v})
print("points:", *names, sep="\n  ")
for m, v in table.items():
    print(f"{m.replace('smsp__average_warps_issue_stalled_', 'stall_'):70s}", "  ".join(f"{v.get(n, '-'):>10s}" for n in names))
PY
