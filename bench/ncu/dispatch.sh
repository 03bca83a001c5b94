#!/usr/bin/env bash
# bench/ncu/dispatch.sh: is Nsight Compute's "dispatch stall" a warp's own wait or the price
# of sharing a scheduler? (issue 18, docs/model.md item 37.) The corpus's GEMMs stall
# 0.3-1.0 cycles an issued instruction at dispatch (bench/results/h200-sass-stalls), and no
# static feature of their SASS holds it. This project's own loops (nothing public):
# bench/lsu/lds_ffma.cu (an outer product fed by LDS.128, rolled and unrolled, 8x8 and 4x4)
# at 1 to 6 warps a scheduler, and bench/pipemix/pipemix.cu's FFMA, FFMA + LDS,
# FFMA + FMNMX and FFMA + IMAD loops at 2 to ~6.5. One launch each under Nsight (after the program's warm-ups);
# the stall reasons a warp's cycle per issued instruction splits into, the issue rate and
# warps a scheduler. Writes $OUT/dispatch.txt (the table), $OUT/device.txt, $OUT/raw.tar.gz.
set -u
cd "$(dirname "$0")"
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader > "$OUT/device.txt"
ncu --version | tail -n 1 >> "$OUT/device.txt"
B=$(mktemp -d)
R=smsp__average_warps_issue_stalled
M=smsp__issue_active.avg.per_cycle_active,smsp__warps_active.avg.per_cycle_active
M=$M,smsp__average_warp_latency_per_inst_issued.ratio
for s in dispatch_stall wait short_scoreboard not_selected selected mio_throttle \
    math_pipe_throttle long_scoreboard barrier branch_resolving no_instruction misc; do
  M=$M,${R}_${s}_per_issue_active.ratio
done
for r in 0 1; do for t in "8 8" "4 4"; do set -- $t
  f=$([ "$r" = 1 ] && echo -DROLLED)
  nvcc -O3 -arch=sm_90 -DTM="$1" -DTN="$2" $f -o "$B/l_${r}_$1$2" ../lsu/lds_ffma.cu &
done; done
nvcc -O3 -arch=sm_90 -o "$B/pipemix" ../pipemix/pipemix.cu &
wait
mkdir -p "$B/raw"
# lds_ffma: block:dynamic shared bytes, the blocks an SM the shared memory leaves (1-3 of 4
# warps, 2-3 of 8: the table's warps column)
for bin in l_0_88 l_1_88 l_0_44 l_1_44; do
  for cfg in 128:190000 128:110000 128:70000 128:50000 256:50000; do
    tag="${bin}_${cfg/:/_}"
    ncu --csv --print-units base --launch-skip 3 --launch-count 1 --metrics "$M" \
      --log-file "$B/raw/$tag.csv" "$B/$bin" "$cfg" > "$B/raw/$tag.out" 2>&1
  done
done
# pipemix: variant (FFMA, FMNMX, IMAD, LDS an iteration) at 1, 2, 4 blocks of 8 warps an SM
for v in 80 73 72 13 12 15; do
  for per_sm in 1 2 4; do
    tag="pipemix_${v}_${per_sm}"
    ncu --csv --print-units base --launch-skip 3 --launch-count 1 --metrics "$M" \
      --log-file "$B/raw/$tag.csv" "$B/pipemix" "$v" 2048 "$per_sm" > "$B/raw/$tag.out" 2>&1
  done
done
python3 - "$B/raw" > "$OUT/dispatch.txt" <<'PY'
import csv, glob, io, os, sys
short = {"dispatch_stall": "dispatch", "wait": "wait", "short_scoreboard": "short_sb",
         "not_selected": "not_sel", "selected": "selected", "mio_throttle": "mio",
         "math_pipe_throttle": "math", "long_scoreboard": "long_sb", "barrier": "barrier"}
print(f"{'run':28} {'warps':>5} {'IPC':>5} {'cyc/iss':>7} " + " ".join(f"{v:>8}" for v in short.values())
      + "  program")
for f in sorted(glob.glob(os.path.join(sys.argv[1], "*.csv"))):
    lines = [x for x in open(f).read().splitlines() if x.startswith('"')]
    vals = {r["Metric Name"]: float(r["Metric Value"].replace(",", ""))
            for r in csv.DictReader(io.StringIO("\n".join(lines)))}
    if not vals:
        print(f"{os.path.basename(f)[:-4]:28} no metrics"); continue
    g = lambda k: vals.get(f"smsp__average_warps_issue_stalled_{k}_per_issue_active.ratio", float("nan"))
    prog = open(f[:-4] + ".out").read().strip().splitlines()
    print(f"{os.path.basename(f)[:-4]:28} {vals['smsp__warps_active.avg.per_cycle_active']:5.2f} "
          f"{vals['smsp__issue_active.avg.per_cycle_active']:5.2f} "
          f"{vals.get('smsp__average_warp_latency_per_inst_issued.ratio', float('nan')):7.2f} "
          + " ".join(f"{g(k):8.2f}" for k in short) + "  " + (prog[-1][:90] if prog else ""))
PY
tar czf "$OUT/raw.tar.gz" -C "$B" raw
cat "$OUT/dispatch.txt"
