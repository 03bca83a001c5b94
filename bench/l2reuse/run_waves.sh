#!/usr/bin/env bash
# bench/l2reuse/run_waves.sh: l2reuse.py --waves timed, then under Nsight Compute (as run.sh):
# the read-twice kernel on grids of 1, 2 and 4 rounds of resident warps. Writes
# $OUT/waves.txt, $OUT/waves-ncu.csv, $OUT/waves-table.txt, $OUT/device.txt.
set -u
cd "$(dirname "$0")"
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader > $OUT/device.txt
python3 l2reuse.py --waves > $OUT/waves.txt 2> $OUT/waves.err; echo "timed: exit $?"
ncu --csv --print-units base --metrics dram__bytes_read.sum,dram__bytes_write.sum,gpu__time_duration.sum \
  python3 l2reuse.py --once --waves > $OUT/waves-ncu.csv 2> $OUT/waves-ncu.err; echo "ncu: exit $?"
python3 l2reuse.py --table $OUT/waves-ncu.csv > $OUT/waves-table.txt; echo "table: exit $?"
tail -n 3 $OUT/waves.err $OUT/waves-ncu.err
cat $OUT/waves-table.txt
