"""Why do the transposes with many elements per thread run slower than the model says?
Nsight Compute's view of four points of examples/transpose at N = 4096 (the fastest,
TILE 32 x ROWS 4, against TILE 64 x ROWS 2 that the model ranks first, and two more).

On the GPU machine: python bench/transpose_ncu.py  (runs itself under ncu; writes
$OUT/transpose-ncu.csv and prints a table)
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
POINTS = [(32, 4, 1), (64, 2, 1), (64, 4, 1), (32, 2, 1)]
N = 4096
SECTIONS = ["SpeedOfLight", "MemoryWorkloadAnalysis", "Occupancy", "WarpStateStats",
            "SchedulerStats", "LaunchStats"]


def child() -> None:
    import cupy as cp

    src = (ROOT / "examples" / "transpose" / "transpose.cuh").read_text()
    names = [f"transpose_tiled<{t}, {r}, {p}>" for t, r, p in POINTS]
    mod = cp.RawModule(code=src, options=("-std=c++17",), name_expressions=names)
    a = cp.random.standard_normal((N, N), dtype=cp.float32)
    out = cp.empty_like(a)
    for (t, r, _), name in zip(POINTS, names, strict=True):
        fn = mod.get_function(name)
        grid = (-(-N // t), -(-N // t))
        for _ in range(2):  # the second launch is profiled too: caches as in a timing loop
            fn(grid, (t, r), (a, out, cp.int32(N)))
    cp.cuda.Device().synchronize()


def main() -> None:
    if sys.argv[1:] == ["--child"]:
        child()
        return
    dest = Path(os.environ.get("OUT", ROOT / "bench" / "results")) / "transpose-ncu.csv"
    cmd = ["ncu", "--csv", "--page", "details", "--print-units", "base"]
    for s in SECTIONS:
        cmd += ["--section", s]
    r = subprocess.run([*cmd, sys.executable, __file__, "--child"], capture_output=True, text=True)
    dest.write_text(r.stdout)
    lines = [x for x in r.stdout.splitlines() if x.startswith('"')]
    print(f"{len(lines)} metric rows; stderr tail: {r.stderr[-500:]}")
    import csv
    import io

    rows = list(csv.DictReader(io.StringIO("\n".join(lines))))
    want = ("Duration", "DRAM Throughput", "Memory Throughput", "Achieved Occupancy",
            "Waves Per SM", "L2 Hit Rate", "L1/TEX Hit Rate", "Warp Cycles Per Issued Instruction",
            "Issue Slots Busy", "Executed Ipc Active", "Avg. Active Threads Per Warp",
            "No Eligible", "Mem Busy", "Max Bandwidth", "Registers Per Thread")
    table: dict[str, dict[str, str]] = {}
    for row in rows:
        if row.get("Metric Name") in want:
            table.setdefault(row["Metric Name"], {})[f"{row['ID']} {row['Kernel Name'][:30]}"] = \
                row["Metric Value"]
    for name, vals in table.items():
        print(f"{name:38s} " + "  ".join(f"{k}={v}" for k, v in vals.items()))


if __name__ == "__main__":
    main()
