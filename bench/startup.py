"""Benchmark: `occupancy calc` as a whole process against the floor its dependencies set.

Target (DESIGN.md): at most 1.5x `python -c "import click, yaml, rich.console, rich.table"`.
Runs both commands alternately, N times each, and prints medians and the ratio.
Usage: python bench/startup.py [-n 30] [--json]
"""

from __future__ import annotations

import argparse
import json
import platform
import shutil
import statistics
import subprocess
import sys
import time


def _time(cmd: list[str]) -> float:
    t0 = time.perf_counter()
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return time.perf_counter() - t0


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("-n", type=int, default=30)
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    exe = shutil.which("occupancy")
    calc = ([exe] if exe else [sys.executable, "-m", "occupancy"]) + [
        "calc", "-d", "v100", "-t", "256", "-r", "32"]
    floor = [sys.executable, "-c", "import click, yaml, rich.console, rich.table"]
    for cmd in (calc, floor):  # warm the page cache and .pyc files
        _time(cmd)
    a, b = [], []
    for _ in range(args.n):
        a.append(_time(calc))
        b.append(_time(floor))
    ca, cb = statistics.median(a), statistics.median(b)
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True,
                            text=True).stdout.strip()
    result = {"date": time.strftime("%Y-%m-%d"), "commit": commit, "calc_s": round(ca, 4), "floor_s": round(cb, 4), "ratio": round(ca / cb, 3),
              "runs": args.n, "target_ratio": 1.5, "python": platform.python_version(),
              "machine": platform.machine(), "command": " ".join(calc[-7:])}
    if args.json:
        print(json.dumps(result, indent=2))
    else:
        print(f"occupancy calc: {ca * 1000:.1f} ms   imports floor: {cb * 1000:.1f} ms   "
              f"ratio {ca / cb:.2f} (target <= 1.5, median of {args.n})")
    return 0 if ca / cb <= 1.5 else 1


if __name__ == "__main__":
    sys.exit(main())
