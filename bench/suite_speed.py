"""Benchmark: the README's test command, cold, and the inner loop without compiles.

Targets (issue 19): `python -m pytest -n auto` <= 4 min cold on a 2-core machine with
nothing else running; `python -m pytest -n auto -m "not slow"` <= 60 s. Cold: a fresh
compile cache (tests/conftest.py gives each session its own) and a fresh Triton cache;
Python's .pyc files stay (an installed package has them). Run it with nothing else on the
machine: it records the load average before each run.
Usage: python bench/suite_speed.py [--only full|inner] [--repeat N] [-o bench/results/suite_speed.json]
(--repeat: each run N times in turn; the record keeps every run, the median as wall_s and the slowest)
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
RUNS = {"full": [], "inner": ["-m", "not slow"]}
TARGET_S = {"full": 240, "inner": 60}


def _run(extra: list[str]) -> dict[str, object]:
    with tempfile.TemporaryDirectory(prefix="suite-speed-") as tmp:
        env = {k: v for k, v in os.environ.items() if k != "OCCUPANCY_CACHE_DIR"}
        env["TRITON_CACHE_DIR"] = str(Path(tmp) / "triton")
        load = os.getloadavg()[0]
        t0 = time.perf_counter()
        r = subprocess.run([sys.executable, "-m", "pytest", "-n", "auto", "-q",
                            "-p", "no:cacheprovider", *extra], cwd=ROOT, env=env,
                           capture_output=True, text=True)
        wall = time.perf_counter() - t0
    tail = r.stdout.strip().splitlines()[-1:] or [""]
    return {"wall_s": round(wall, 1), "exit": r.returncode, "summary": tail[0],
            "load_before": round(load, 2)}


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--only", choices=sorted(RUNS))
    ap.add_argument("--repeat", type=int, default=1)
    ap.add_argument("-o", "--output", default=str(ROOT / "bench" / "results" / "suite_speed.json"))
    args = ap.parse_args()
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT,
                            capture_output=True, text=True).stdout.strip()
    out: dict[str, object] = {"date": time.strftime("%Y-%m-%d"), "commit": commit,
                              "cpus": os.cpu_count(), "python": platform.python_version(),
                              "targets_s": TARGET_S}
    ok = True
    runs: dict[str, list[dict[str, object]]] = {}
    for _ in range(max(1, args.repeat)):
        for name, extra in RUNS.items():
            if args.only and name != args.only:
                continue
            res = _run(extra)
            runs.setdefault(name, []).append(res)
            ok &= res["exit"] == 0 and float(res["wall_s"]) <= TARGET_S[name]  # type: ignore[arg-type]
            print(f"{name}: {res['wall_s']} s ({res['summary']}; load before {res['load_before']})")
    for name, rs in runs.items():
        walls = sorted(float(r["wall_s"]) for r in rs)  # type: ignore[arg-type]
        out[name] = {"wall_s": walls[len(walls) // 2], "max_s": walls[-1],
                     "exit": max(int(str(r["exit"])) for r in rs), "runs": rs}
    Path(args.output).write_text(json.dumps(out, indent=2) + "\n")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
