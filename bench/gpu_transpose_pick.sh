#!/usr/bin/env bash
# Issue 18's shipped-transpose bar after the pick rule at a bandwidth roof (tune/model.py
# RESOLUTION): `measure transpose` at the sizes where tall 16x16 was picked and measured
# 11-12% behind (7000, 11000, 18000), and at 3584 and 8192, with `tile`'s pick at each.
# Results land in $OUT (records.tar: measure-N.json, tile-N.json; gpu-log.txt with the
# summary); commit them under bench/results/h200-transpose-pick.
set -u
. "$(dirname "$0")/gpu_setup.sh"
mkdir -p "$OUT/rec"
for n in 3584 7000 8192 11000 18000; do
  python -m occupancy measure transpose -n $n --reps 20 --json -o "$OUT/rec/measure-$n.json" >> "$LOG" 2>&1
  echo "exit $? for measure n=$n" >> "$LOG"
  python -m occupancy tile transpose -d h200 -n $n --json > "$OUT/rec/tile-$n.json" 2>> "$LOG"
done
python - "$OUT/rec" >> "$LOG" 2>&1 <<'PY'
import json, sys
for n in (3584, 7000, 8192, 11000, 18000):
    d = json.load(open(f"{sys.argv[1]}/measure-{n}.json"))
    pick = json.load(open(f"{sys.argv[1]}/tile-{n}.json"))["recommended"]["label"]
    ms = {r["label"]: r["measured"]["median_ms"] for r in d["results"]
          if r.get("kernel") == "transpose" and r.get("measured") and r.get("verified")}
    best = min(ms, key=ms.get)
    print(f"n={n} fastest {best} {ms[best]:.4f} ms; pick {pick} {ms[pick]:.4f} ms: "
          f"{ms[pick] / ms[best] - 1:+.1%}")
PY
tar -C "$OUT" -cf "$OUT/records.tar" rec && rm -rf "$OUT/rec"
grep -E "exit|fastest" "$LOG"
