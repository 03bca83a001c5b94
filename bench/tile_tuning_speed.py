"""Benchmark: cold and warm `occupancy tile` over the 32-point SGEMM space of
examples/sgemm (every point compiled for sm_90, its SASS read, two warps of its PTX run).

Target (issue 13): cold <= 60 s on the 2-core machine (parallel compiles), warm <= 1 s.
Writes bench/results/tile_tuning_speed.json. Run: python bench/tile_tuning_speed.py
"""

from __future__ import annotations

import json
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
MANIFEST = ROOT / "examples" / "sgemm" / "tune.yaml"


def main() -> None:
    tmp = Path(tempfile.mkdtemp(prefix="occ-tile-speed-"))
    env = {**os.environ, "OCCUPANCY_CACHE_DIR": str(tmp / "cache")}

    def once() -> tuple[float, int]:
        t0 = time.perf_counter()
        r = subprocess.run([sys.executable, "-m", "occupancy", "tile", str(MANIFEST), "--kernel",
                            "sgemm2d", "-d", "h200", "--json"], env=env, capture_output=True,
                           text=True)
        wall = time.perf_counter() - t0
        data = json.loads(r.stdout)
        return wall, len(data["candidates"])

    cold, n = once()
    warm = min(once()[0] for _ in range(5))
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True,
                            text=True).stdout.strip()
    out = {"date": time.strftime("%Y-%m-%d"), "commit": commit, "machine": platform.machine(),
           "cores": os.cpu_count(), "points": n, "cold_s": round(cold, 2),
           "warm_s_best_of_5": round(warm, 3), "cold_target_s": 60, "warm_target_s": 1,
           "cold_over_target": round(cold / 60, 3), "warm_over_target": round(warm / 1, 3)}
    (ROOT / "bench" / "results" / "tile_tuning_speed.json").write_text(json.dumps(out, indent=2) + "\n")
    print(json.dumps(out, indent=2))
    shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
