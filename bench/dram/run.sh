#!/usr/bin/env bash
# bench/dram/run.sh: rowwalk.py timed, then once more under Nsight Compute for the bytes DRAM
# read and wrote per launch. Writes $OUT/rowwalk.txt, $OUT/rowwalk-ncu.csv (and its table,
# $OUT/ncu-table.txt), $OUT/device.txt.
set -u
cd "$(dirname "$0")"
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader > $OUT/device.txt
python3 rowwalk.py > $OUT/rowwalk.txt 2> $OUT/rowwalk.err; echo "timed: exit $?"
ncu --csv --print-units base --metrics dram__bytes_read.sum,dram__bytes_write.sum,gpu__time_duration.sum \
  python3 rowwalk.py --once > $OUT/rowwalk-ncu.csv 2> $OUT/rowwalk-ncu.err; echo "ncu: exit $?"
python3 rowwalk.py --table $OUT/rowwalk-ncu.csv > $OUT/ncu-table.txt
tail -n 3 $OUT/rowwalk.err; tail -n 3 $OUT/rowwalk-ncu.err
cat $OUT/rowwalk.txt
