#!/usr/bin/env bash
# One device run, an out-of-sample check of docs/model.md item 33 (the L2 merges of a store's
# partial sectors): llm.c's softmax kernels 2, 3 and online 2 (examples/llmc/tune.yaml; never
# measured or used before, and not in the corpus), every block size, at 8,192 x 50,257 (rows
# off their lines) and 16,384 x 4,096 (on them), each point verified against kernel 1.
# `measure --reps 10` times them (records in measure.tar.gz); then Nsight Compute counts the
# DRAM bytes and time of each launch at 8,192 x 50,257 (`measure --reps 3` under ncu, caches
# flushed before each launch; ncu.tar.gz, table.txt the medians). carry: [".llmc"].
set -u
. "$(dirname "$0")/gpu_setup.sh"
J=$OUT/measure; R=$OUT/raw; mkdir -p $J $R
M=gpu__time_duration.sum,dram__bytes_read.sum,dram__bytes_write.sum
for k in softmax_forward_kernel2 softmax_forward_kernel3 softmax_forward_online_kernel2; do
  for size in "8192 50257" "16384 4096"; do
    set -- $size
    python -m occupancy measure examples/llmc/tune.yaml --kernel $k --set N=$1 --set C=$2 \
      --reps 10 --json -o $J/$k-$1-$2.json >> "$LOG" 2>&1
    echo "exit $? for measure $k $1 $2" >> "$LOG"
  done
  ncu --csv --print-units base -k "regex:^$k" --metrics "$M" python -m occupancy measure \
    examples/llmc/tune.yaml --kernel $k --set N=8192 --set C=50257 --reps 3 \
    > $R/ncu-$k.csv 2> $R/err
  echo "exit $? for ncu $k" >> "$LOG"; tail -2 $R/err >> "$LOG"
done
python3 - "$OUT" <<'PY' | tee $OUT/table.txt
import csv, glob, io, statistics, sys
out = sys.argv[1]
print("kernel block ms read_GB write_GB")
for f in sorted(glob.glob(f"{out}/raw/ncu-*.csv")):
    k = f.split("/ncu-")[1][:-4]
    rows = list(csv.DictReader(io.StringIO("\n".join(x for x in open(f).read().splitlines() if x.startswith('"')))))
    vals = {}
    for r in rows:
        bs = int(r["Block Size"].strip("()").split(",")[0])
        vals.setdefault(bs, {}).setdefault(r["Metric Name"], []).append(float(r["Metric Value"].replace(",", "")))
    for bs in sorted(vals):
        v = {m: statistics.median(x) for m, x in vals[bs].items()}
        print(f"{k} {bs} {v['gpu__time_duration.sum'] * 1e-6:.4f} "
              f"{v['dram__bytes_read.sum'] / 1e9:.4f} {v['dram__bytes_write.sum'] / 1e9:.4f}")
PY
rm -f $R/err; tar czf $OUT/ncu.tar.gz -C $OUT raw && rm -rf $R
tar czf $OUT/measure.tar.gz -C $OUT measure && rm -rf $J
grep -E "exit" "$LOG"
