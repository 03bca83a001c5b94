"""Benchmark: cold and warm `occupancy check` of a 20-kernel x 4-arch manifest over real
multi-file code (tests/fixtures/project), every entry a distinct build (80 compiles cold).

Target (DESIGN/issue 10): cold <= 60 s on the 2-core machine, warm (cached) <= 1 s.
Writes bench/results/check_realcode_speed.json. Run: python bench/check_realcode_speed.py
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
PROJECT = ROOT / "tests" / "fixtures" / "project"
KERNELS = [("demo::scale", 256), ("tiled_transpose<32, true>", 256), ("tiled_transpose<16, false>", 256),
           ("bounded", 128), ("staged", 256)]


def main() -> None:
    tmp = Path(tempfile.mkdtemp(prefix="occ-speed-"))
    proj = tmp / "project"
    shutil.copytree(PROJECT, proj)
    lines = ["devices: [gtx1080, v100, a100, h100]", "include_dirs: [include]", "flags: [-std=c++17]",
             "kernels:"]
    for i in range(20):
        fn, block = KERNELS[i % len(KERNELS)]
        lines += [f"  - name: k{i}", "    source: src/kernels.cu", f"    function: '{fn}'",
                  f"    defines: {{VARIANT: {i}}}", f"    block: {block}"]
    m = proj / "speed.yaml"
    m.write_text("\n".join(lines) + "\n")
    env = {**os.environ, "OCCUPANCY_CACHE_DIR": str(tmp / "cache")}

    def once() -> tuple[float, int]:
        t0 = time.perf_counter()
        r = subprocess.run([sys.executable, "-m", "occupancy", "check", str(m), "--format", "json"],
                           env=env, capture_output=True, text=True)
        wall = time.perf_counter() - t0
        data = json.loads(r.stdout)
        assert data["errors"] == 0, r.stdout[-2000:]
        return wall, len(data["results"])

    cold, n = once()
    warm = min(once()[0] for _ in range(5))
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True,
                            text=True).stdout.strip()
    out = {"date": time.strftime("%Y-%m-%d"), "commit": commit, "machine": platform.machine(),
           "cores": os.cpu_count(), "verdicts": n, "distinct_builds": 80, "cold_s": round(cold, 2),
           "warm_s_best_of_5": round(warm, 3), "cold_target_s": 60, "warm_target_s": 1,
           "warm_over_cold": round(warm / cold, 4)}
    (ROOT / "bench" / "results" / "check_realcode_speed.json").write_text(json.dumps(out, indent=2) + "\n")
    print(json.dumps(out, indent=2))
    shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
