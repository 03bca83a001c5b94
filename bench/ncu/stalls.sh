#!/usr/bin/env bash
# bench/ncu/stalls.sh: why llm.c's online softmax 8 (bench/corpus, validation part: looked at
# for a cause only) moves its bytes at ~3.0 TB/s where this project's row walk of the same
# shape (bench/dram/rowwalk.cu, MODE 1, U 4) reaches ~3.8: Nsight Compute's stall reasons,
# issue rate and DRAM throughput of its launches at 16384 x 4096 (the table: blocks of 256).
# Writes $OUT/stalls-online8.csv and prints the table.
set -u
cd "$(dirname "$0")"
R=smsp__average_warps_issue_stalled
M=gpu__time_duration.sum,dram__bytes_read.sum,dram__bytes_write.sum,smsp__inst_executed.sum
M=$M,smsp__issue_active.avg.per_cycle_active,smsp__warps_active.avg.per_cycle_active
M=$M,dram__throughput.avg.pct_of_peak_sustained_elapsed,sm__cycles_elapsed.avg
for s in long_scoreboard lg_throttle mio_throttle short_scoreboard wait math_pipe_throttle \
    no_instruction drain membar not_selected selected dispatch_stall branch_resolving tex_throttle \
    barrier misc; do M=$M,${R}_${s}_per_issue_active.ratio; done
PYTHONPATH=../.. ncu --csv --print-units base -k "regex:^softmax_forward_online_kernel8" --metrics "$M" \
  python3 -m occupancy measure ../corpus/llm.c/tune.yaml --kernel softmax_forward_online_kernel8 \
  --set N=16384 --set C=4096 --reps 3 -o $OUT/online8.json > $OUT/stalls-online8.csv 2> $OUT/stalls-online8.err
echo "online8: exit $?"
python3 - "$OUT" <<'PY'
import csv, io, statistics, sys
out = sys.argv[1]
def table(f, want):
    rows = list(csv.DictReader(io.StringIO("\n".join(x for x in open(f).read().splitlines() if x.startswith('"')))))
    vals = {}
    for r in rows:
        if want(r):
            vals.setdefault(r["Metric Name"], []).append(float(r["Metric Value"].replace(",", "")))
    return {m: statistics.median(v) for m, v in vals.items()}
a = table(f"{out}/stalls-online8.csv", lambda r: r["Block Size"].startswith("(256,"))
print(f"{'metric':70s} {'online8 b256':>14s}")
for m in a:
    print(f"{m.replace('smsp__average_warps_issue_stalled_', 'stall_'):70s} {a[m]:14.4g}")
PY
