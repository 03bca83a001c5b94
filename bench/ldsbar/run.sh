#!/usr/bin/env bash
# bench/ldsbar/run.sh: lds_bar.cu's loops (issue 18, docs/model.md item 39), every switch,
# three shapes, at 1-4 warps a scheduler; Nsight Compute's stall reasons for the shapes at
# 2 blocks of 8 warps an SM (the vectorized SGEMM's occupancy). Writes under $OUT:
# lds.txt (one line a build and configuration), ncu.txt (the stall table), device.txt.
set -u
cd "$(dirname "$0")"
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader > "$OUT/device.txt"
ncu --version | tail -n 1 >> "$OUT/device.txt"
B=$(mktemp -d)
builds=()
for s in "16 4" "8 8" "8 4"; do set -- $s
  for bc in 0 1; do for sy in 0 1 2; do for r in 0 1; do
    tag=t$1x$2_b${bc}_s${sy}_r${r}
    f="-DTM=$1 -DTN=$2 -DSYNC=$sy"
    [ "$bc" = 1 ] && f="$f -DBCAST"; [ "$r" = 1 ] && f="$f -DROLLED"
    nvcc -O3 -arch=sm_90 $f -o "$B/$tag" lds_bar.cu &
    builds+=("$tag")
  done; done; done
done
wait
# dynamic shared bytes that leave 1-4 blocks of 128 threads, 1-2 of 256 (the registers
# allow no more): 1 to 4 warps a scheduler
for tag in "${builds[@]}"; do
  "$B/$tag" 128:120000 128:80000 128:50000 128:30000 256:120000 256:80000 | sed "s/^/build=$tag /" >> "$OUT/lds.txt"
done
echo "rows: $(grep -c 'check=ok' "$OUT/lds.txt") ok, $(grep -vc 'check=ok' "$OUT/lds.txt") not"
R=smsp__average_warps_issue_stalled
M=smsp__issue_active.avg.per_cycle_active,smsp__warps_active.avg.per_cycle_active
M=$M,smsp__average_warp_latency_per_inst_issued.ratio,l1tex__data_pipe_lsu_wavefronts_mem_shared.sum
M=$M,smsp__inst_executed.sum,sm__cycles_elapsed.avg
for s in dispatch_stall wait short_scoreboard not_selected selected mio_throttle \
    math_pipe_throttle long_scoreboard barrier lg_throttle; do
  M=$M,${R}_${s}_per_issue_active.ratio
done
mkdir -p "$B/raw"
for tag in "${builds[@]}"; do
  ncu --csv --print-units base --clock-control none --launch-skip 3 --launch-count 1 --metrics "$M" \
    --log-file "$B/raw/$tag.csv" "$B/$tag" 256:80000 > "$B/raw/$tag.out" 2>&1
done
python3 - "$B/raw" > "$OUT/ncu.txt" <<'PY'
import csv, glob, io, os, sys
short = {"dispatch_stall": "dispatch", "wait": "wait", "short_scoreboard": "short_sb",
         "not_selected": "not_sel", "mio_throttle": "mio", "math_pipe_throttle": "math",
         "long_scoreboard": "long_sb", "barrier": "barrier", "lg_throttle": "lg"}
print(f"{'build':18} {'warps':>5} {'IPC':>5} {'cyc/iss':>7} {'wavefr/inst':>11} "
      + " ".join(f"{v:>8}" for v in short.values()))
for f in sorted(glob.glob(os.path.join(sys.argv[1], "*.csv"))):
    lines = [x for x in open(f).read().splitlines() if x.startswith('"')]
    vals = {r["Metric Name"]: float(r["Metric Value"].replace(",", ""))
            for r in csv.DictReader(io.StringIO("\n".join(lines)))}
    if not vals:
        print(f"{os.path.basename(f)[:-4]:18} no metrics"); continue
    g = lambda k: vals.get(f"smsp__average_warps_issue_stalled_{k}_per_issue_active.ratio", float("nan"))
    wf = vals.get("l1tex__data_pipe_lsu_wavefronts_mem_shared.sum", float("nan")) / vals.get("smsp__inst_executed.sum", float("nan"))
    print(f"{os.path.basename(f)[:-4]:18} {vals['smsp__warps_active.avg.per_cycle_active']:5.2f} "
          f"{vals['smsp__issue_active.avg.per_cycle_active']:5.2f} "
          f"{vals.get('smsp__average_warp_latency_per_inst_issued.ratio', float('nan')):7.2f} {wf:11.3f} "
          + " ".join(f"{g(k):8.2f}" for k in short))
PY
cat "$OUT/ncu.txt"
awk '{for(i=1;i<=NF;i++){split($i,a,"=");v[a[1]]=a[2]} printf "%-18s b%-4s w=%-2s %8s %s\n", v["build"], v["block"], v["warps_per_sm"], v["ns_per_warp_iter_per_sm"], v["check"]}' "$OUT/lds.txt" | head -80
