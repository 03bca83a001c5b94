"""Benchmark: the three what-if sweeps (threads, registers, shared memory) of one device.

Target (DESIGN.md): under 0.5 s together. Prints the median of N runs per device.
Usage: python bench/sweep_speed.py [-n 5] [--json]
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time

from occupancy import load_device
from occupancy.core.whatif import Config, sweeps


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("-n", type=int, default=5)
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    out = {}
    for name in ("gtx1080", "a100", "h200"):
        dev = load_device(name)
        runs = []
        for _ in range(args.n):
            t0 = time.perf_counter()
            curves = sweeps(dev, Config(256, 40, 8192))
            runs.append(time.perf_counter() - t0)
        out[name] = {"median_s": round(statistics.median(runs), 4),
                     "points": sum(len(c.points) for c in curves)}
    worst = max(v["median_s"] for v in out.values())
    result = {"date": time.strftime("%Y-%m-%d"), "devices": out, "worst_s": worst,
              "target_s": 0.5, "runs": args.n}
    if args.json:
        print(json.dumps(result, indent=2))
    else:
        for k, v in out.items():
            print(f"{k}: {v['points']} points in {v['median_s'] * 1000:.0f} ms")
        print(f"worst {worst * 1000:.0f} ms (target < 500 ms)")
    return 0 if worst < 0.5 else 1


if __name__ == "__main__":
    sys.exit(main())
