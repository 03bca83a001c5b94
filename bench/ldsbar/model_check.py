"""The time model on bench/ldsbar/lds_bar.cu's loops (this project's own, calibration; CPU
only): every row of a run's lds.txt predicted as `tile` predicts a kernel from its SASS
(predict_work with the hottest loop's mix, the declared FLOPs, the point's occupancy; no
ptxsim run), against the measured ns per warp k step per SM. Needs nvcc and nvdisasm.
Usage: python bench/ldsbar/model_check.py LDS_TXT [-v]  (the rows without global loads, SYNC = 0 and 1)"""

from __future__ import annotations

import os
import re
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
from occupancy import load_device  # noqa: E402
from occupancy.build.compilers import nvdisasm_path  # noqa: E402
from occupancy.build.sass_loops import sass_loop_mix  # noqa: E402
from occupancy.core.solver import solve  # noqa: E402
from occupancy.tune.model import LAUNCH_OVERHEAD_MS, predict_work  # noqa: E402

K = 2048


def build(defines: tuple[str, ...]) -> tuple[tuple[tuple[str, int], ...], int, int]:
    """(the hottest loop's SASS mix, registers a thread, static shared bytes), sm_90."""
    with tempfile.TemporaryDirectory() as tmp:
        cubin = os.path.join(tmp, "k.cubin")
        r = subprocess.run(["nvcc", "-O3", "-arch=sm_90", "-cubin", "-Xptxas", "-v", *defines,
                            "-o", cubin, str(ROOT / "bench/ldsbar/lds_bar.cu")],
                           check=True, capture_output=True, text=True)
        regs = int(re.search(r"Used (\d+) registers", r.stderr).group(1))  # type: ignore[union-attr]
        smem = int(re.search(r"(\d+) bytes smem", r.stderr).group(1))  # type: ignore[union-attr]
        sass = subprocess.run([nvdisasm_path() or "nvdisasm", "-c", cubin], check=True,
                              capture_output=True, text=True).stdout
    mixes = sass_loop_mix(sass)
    return max(mixes.values(), key=lambda m: dict(m).get("ffma", 0)), regs, smem


def main() -> None:
    dev = load_device("h200")
    built: dict[tuple[str, ...], tuple[tuple[tuple[str, int], ...], int, int]] = {}
    groups: dict[str, list[tuple[int, int, float]]] = {}
    errs: list[float] = []
    for line in Path(sys.argv[1]).read_text().splitlines():
        v = dict(f.split("=", 1) for f in line.split() if "=" in f)
        if v.get("check") != "ok":
            continue
        tm, tn, block, dyn = int(v["tm"]), int(v["tn"]), int(v["block"]), int(v["smem"])
        if v["sync"] in ("2", "3"):
            continue  # tile loads: the SASS alone cannot say they hit L2 (exposure.py)
        defs = (f"-DTM={tm}", f"-DTN={tn}", f"-DSYNC={v['sync']}") \
            + (("-DBCAST",) if v["bcast"] == "1" else ()) + (("-DROLLED",) if v["rolled"] == "1" else ()) \
            + ((f"-DWARPS={block // 32}",) if "_w" in v.get("build", "") else ()) \
            + ((f"-DSTAGGER={v['stagger']}",) if v.get("stagger", "0") != "0" else ())
        if defs not in built:
            built[defs] = build(defs)
        mix, regs, static = built[defs]
        occ = solve(dev, block, regs, static, dyn)
        assert occ.active_blocks_per_sm * occ.warps_per_block == int(v["warps_per_sm"]), line
        grid = occ.active_blocks_per_sm * dev.sm_count * 4
        flops = 2.0 * tm * tn * K * grid * block
        p = predict_work(dev, occ, grid, flops, 0.0, regs, mix)
        ns = (p.predicted_ms - LAUNCH_OVERHEAD_MS) * 1e6 / (grid * block / 32 * K / dev.sm_count)
        e = ns / float(v["ns_per_warp_iter_per_sm"]) - 1
        key = f"{tm}x{tn} bcast={v['bcast']} sync={v['sync']} rolled={v['rolled']}"
        groups.setdefault(key, []).append((int(v["warps_per_sm"]), block, e))
        errs.append(abs(e))
    q = sorted(errs)
    print(f"{len(q)} rows without global loads: median |error| {statistics.median(q):.1%}, "
          f"90th percentile {q[int(0.9 * len(q))]:.1%}, worst {q[-1]:.1%}")
    if "-v" in sys.argv:
        for g, rows in groups.items():
            print(f"  {g:34s}", " ".join(f"w{w}/{b}:{e:+.0%}" for w, b, e in sorted(rows)))


if __name__ == "__main__":
    main()
