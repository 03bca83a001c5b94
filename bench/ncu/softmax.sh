#!/usr/bin/env bash
# bench/ncu/softmax.sh: Nsight Compute's DRAM and L2 view of llm.c's softmax kernels 4
# (calibration), 7 and online 8 (validation) at both corpus sizes (bench/corpus, carried to
# the GPU machine): the bytes DRAM read and wrote per launch against the bytes the model
# counts (each input byte read once, each output byte written once, plus the re-reads L2
# no longer holds: tune/model.reread_miss_bytes), and the bandwidth reached. `measure`
# launches every block size (verified against kernel 1); ncu profiles each launch of the
# three kernels, with its caches flushed before each (its default). Writes
# $OUT/ncu-KERNEL-N-C.csv, $OUT/measure-KERNEL-N-C.json (their times were taken under the
# profiler) and $OUT/table.txt, the medians over each point's launches.
set -u
cd "$(dirname "$0")"
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader > $OUT/device.txt
M=gpu__time_duration.sum,dram__bytes_read.sum,dram__bytes_write.sum,lts__t_sector_hit_rate.pct
M=$M,lts__t_sectors_srcunit_tex_op_read.sum,lts__t_sectors_srcunit_tex_op_write.sum
M=$M,dram__throughput.avg.pct_of_peak_sustained_elapsed,sm__warps_active.avg.pct_of_peak_sustained_active
M=$M,lts__t_sectors_srcunit_tex_op_read_lookup_miss.sum
for k in softmax_forward_kernel4 softmax_forward_kernel7 softmax_forward_online_kernel8; do
  for size in "16384 4096" "8192 50257"; do
    set -- $size
    PYTHONPATH=../.. ncu --csv --print-units base -k "regex:^$k" --metrics "$M" \
      python3 -m occupancy measure ../corpus/llm.c/tune.yaml --kernel $k --set N=$1 --set C=$2 \
      --reps 3 -o $OUT/measure-$k-$1-$2.json > $OUT/ncu-$k-$1-$2.csv 2> $OUT/ncu-$k-$1-$2.err
    echo "$k $1 $2 exit $?"; tail -2 $OUT/ncu-$k-$1-$2.err
  done
done
python3 - "$OUT" <<'PY' | tee $OUT/table.txt
import csv, glob, io, statistics, sys
out = sys.argv[1]
print(f"{'kernel':34s} {'N':>5s} {'C':>6s} {'block':>5s} {'ms':>7s} {'read GB':>8s} {'write GB':>8s} {'x N*C*4':>7s} {'TB/s':>5s} {'L2 hit':>6s} {'dram%':>5s}")
for f in sorted(glob.glob(f"{out}/ncu-*.csv")):
    k, n, c = f.split("/ncu-")[1][:-4].rsplit("-", 2)
    rows = list(csv.DictReader(io.StringIO("\n".join(x for x in open(f).read().splitlines() if x.startswith('"')))))
    vals = {}  # per block size (ncu's "(256, 1, 1)"), each metric over the point's launches
    for r in rows:
        b = int(r["Block Size"].strip("()").split(",")[0])
        vals.setdefault(b, {}).setdefault(r["Metric Name"], []).append(float(r["Metric Value"].replace(",", "")))
    base = int(n) * int(c) * 4
    for b in sorted(vals):
        v = {m: statistics.median(x) for m, x in vals[b].items()}
        rd, wr, t = v["dram__bytes_read.sum"], v["dram__bytes_write.sum"], v["gpu__time_duration.sum"]
        print(f"{k:34s} {n:>5s} {c:>6s} {b:5d} {t*1e-6:7.3f} {rd/1e9:8.3f} {wr/1e9:8.3f} {(rd+wr)/base:7.2f} {(rd+wr)/t/1e3:5.2f} "
              f"{v['lts__t_sector_hit_rate.pct']:6.1f} {v['dram__throughput.avg.pct_of_peak_sustained_elapsed']:5.1f}")
PY
