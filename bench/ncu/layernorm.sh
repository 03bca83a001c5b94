#!/usr/bin/env bash
# bench/ncu/layernorm.sh: Nsight Compute's DRAM bytes for llm.c's layernorm kernels 3, 4 and 5
# (examples/llmc/tune.yaml; this project's own records bench/results/h200-layernorm and
# -check time them) at the records' shapes, every block size: an out-of-sample check of the
# model's DRAM bytes (docs/model.md item 32 was written on the softmaxes and l2reuse), read
# on the CPU by `python bench/ncu/bytes_check.py --layernorm TABLE`. `measure --reps 3`
# launches every point (verified against kernel 1); ncu profiles the kernel's launches with
# its caches flushed before each. carry: [".llmc"]. Writes $OUT/ncu-csv.tar.gz (ncu-K-B-T-C.csv
# each), $OUT/errors.txt (the runs' stderr tails) and $OUT/table.txt (medians over a point's
# launches).
set -u
cd "$(dirname "$0")/../.."
. bench/gpu_setup.sh
M=gpu__time_duration.sum,dram__bytes_read.sum,dram__bytes_write.sum
RAW=$OUT/raw
mkdir -p $RAW
run() { k=$1 b=$2 c=$3
  ncu --csv --print-units base -k "regex:^layernorm_forward_kernel$k" --metrics "$M" \
    python3 -m occupancy measure examples/llmc/tune.yaml --kernel layernorm_forward_kernel$k \
    --set B=$b --set C=$c --reps 3 > $RAW/ncu-$k-$b-1024-$c.csv 2> $RAW/err
  echo "kernel $k B=$b C=$c exit $?" | tee -a $OUT/errors.txt; tail -2 $RAW/err >> $OUT/errors.txt; }
for shape in "8 768" "4 1600" "32 768" "16 1024" "2 4096"; do run 3 $shape; done
for k in 4 5; do for shape in "8 768" "4 1600"; do run $k $shape; done; done
python3 - "$OUT" <<'PY' | tee $OUT/table.txt
import csv, glob, io, statistics, sys
out = sys.argv[1]
print("kernel B T C block ms read_GB write_GB")
for f in sorted(glob.glob(f"{out}/raw/ncu-*.csv")):
    k, b, t, c = f.split("/ncu-")[1][:-4].split("-")
    rows = list(csv.DictReader(io.StringIO("\n".join(x for x in open(f).read().splitlines() if x.startswith('"')))))
    vals = {}
    for r in rows:
        bs = int(r["Block Size"].strip("()").split(",")[0])
        vals.setdefault(bs, {}).setdefault(r["Metric Name"], []).append(float(r["Metric Value"].replace(",", "")))
    for bs in sorted(vals):
        v = {m: statistics.median(x) for m, x in vals[bs].items()}
        print(f"layernorm_forward_kernel{k} {b} {t} {c} {bs} {v['gpu__time_duration.sum'] * 1e-6:.4f} "
              f"{v['dram__bytes_read.sum'] / 1e9:.4f} {v['dram__bytes_write.sum'] / 1e9:.4f}")
PY
rm -f $RAW/err; tar czf $OUT/ncu-csv.tar.gz -C $OUT raw && rm -rf $RAW
