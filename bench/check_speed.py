"""Benchmark: `occupancy check` of a 100-kernel manifest over 5 devices, resources given.

Target (DESIGN.md): under 1 s. Times the whole command as a process (median of N) and the
evaluation alone, and prints both.
Usage: python bench/check_speed.py [-n 5] [--json]
"""

from __future__ import annotations

import argparse
import json
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path


def make_manifest(path: Path, kernels: int = 100, seed: int = 1) -> None:
    rng = random.Random(seed)
    lines = ["devices: [gtx1080, v100, a100, h100, rtx4090]", "min_occupancy: 0.1", "kernels:"]
    for i in range(kernels):
        block = rng.choice([64, 128, 256, 512, 1024, [16, 16], [32, 8], [32, 32]])
        lines += [f"  - name: kernel_{i}", f"    block: {json.dumps(block)}",
                  f"    registers: {rng.randint(16, 128)}",
                  f"    static_shared_memory: {rng.choice([0, 2048, 8192, 16384])}",
                  f"    dynamic_shared_memory: {rng.choice([0, 0, 4096, 32768])}"]
    path.write_text("\n".join(lines) + "\n")


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("-n", type=int, default=5)
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    from occupancy.gate.check import evaluate
    from occupancy.inputs.manifest import load_manifest

    with tempfile.TemporaryDirectory() as tmp:
        m = Path(tmp) / "launches.yaml"
        make_manifest(m)
        t0 = time.perf_counter()
        verdicts = evaluate(load_manifest(m))
        core = time.perf_counter() - t0
        exe = shutil.which("occupancy")
        cmd = ([exe] if exe else [sys.executable, "-m", "occupancy"]) + ["check", str(m),
                                                                          "--format", "json"]
        runs = []
        for _ in range(args.n):
            t0 = time.perf_counter()
            subprocess.run(cmd, stdout=subprocess.DEVNULL, check=False)
            runs.append(time.perf_counter() - t0)
    proc = statistics.median(runs)
    result = {"date": time.strftime("%Y-%m-%d"), "verdicts": len(verdicts),
              "load_and_evaluate_s": round(core, 4), "process_s": round(proc, 4),
              "target_s": 1.0, "runs": args.n}
    if args.json:
        print(json.dumps(result, indent=2))
    else:
        print(f"{len(verdicts)} verdicts: load+evaluate {core * 1000:.0f} ms, whole process "
              f"{proc * 1000:.0f} ms (median of {args.n}; target < 1 s)")
    return 0 if proc < 1.0 else 1


if __name__ == "__main__":
    sys.exit(main())
