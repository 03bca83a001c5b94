#!/usr/bin/env bash
# bench/l2reuse/run.sh: l2reuse.py timed, then once more under Nsight Compute for the bytes DRAM
# read and wrote per launch. Writes $OUT/l2reuse.txt, $OUT/l2reuse-ncu.csv (ncu's output with
# the --once lines), its table $OUT/ncu-table.txt, and $OUT/device.txt.
set -u
cd "$(dirname "$0")"
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader > $OUT/device.txt
python3 l2reuse.py > $OUT/l2reuse.txt 2> $OUT/l2reuse.err; echo "timed: exit $?"
ncu --csv --print-units base --metrics dram__bytes_read.sum,dram__bytes_write.sum,gpu__time_duration.sum \
  python3 l2reuse.py --once > $OUT/l2reuse-ncu.csv 2> $OUT/l2reuse-ncu.err; echo "ncu: exit $?"
python3 l2reuse.py --table $OUT/l2reuse-ncu.csv > $OUT/ncu-table.txt; echo "table: exit $?"
tail -n 3 $OUT/l2reuse.err $OUT/l2reuse-ncu.err
cat $OUT/ncu-table.txt
