"""The time model on this project's own microbenchmarks (calibration, CPU only): every row of
bench/results/h200-lsu-overlap/lsu.txt (lds_ffma.cu, rolled and unrolled) and
bench/results/h200-icache/icache.txt (unroll.cu, unrolled 4-64 times) predicted as `tile`
predicts a user's kernel from its SASS (predict_work with the hottest loop's mix, the
declared FLOPs, the point's occupancy; no ptxsim run), against the measured ns per warp k
step per SM. Needs nvcc and nvdisasm.
Usage: python bench/lsu/model_check.py [-v]"""

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

K = 2048  # k steps of both kernels
SHAPES = ((8, 8), (8, 4), (4, 4))


def build(src: Path, defines: list[str]) -> tuple[tuple[tuple[str, int], ...], int]:
    """(the hottest loop's SASS mix, registers a thread) of one variant, for sm_90."""
    with tempfile.TemporaryDirectory() as tmp:
        cubin = os.path.join(tmp, "k.cubin")
        r = subprocess.run(["nvcc", "-O3", "-arch=sm_90", "-cubin", "-Xptxas", "-v", *defines,
                            "-o", cubin, str(src)], check=True, capture_output=True, text=True)
        regs = int(re.search(r"Used (\d+) registers", r.stderr).group(1))  # type: ignore[union-attr]
        sass = subprocess.run([nvdisasm_path() or "nvdisasm", "-c", cubin], check=True,
                              capture_output=True, text=True).stdout
    return next(iter(sass_loop_mix(sass).values())), regs


def rows() -> list[tuple[str, dict[str, str], Path, list[str]]]:
    out = []
    for line in (ROOT / "bench/results/h200-lsu-overlap/lsu.txt").read_text().splitlines():
        v = dict(f.split("=", 1) for f in line.split())
        defs = [f"-DTM={v['tm']}", f"-DTN={v['tn']}"] + (["-DROLLED"] if v["rolled"] == "1" else [])
        out.append((f"lds_ffma {'rolled' if v['rolled'] == '1' else 'unroll 4'}", v,
                    ROOT / "bench/lsu/lds_ffma.cu", defs))
    for line in (ROOT / "bench/results/h200-icache/icache.txt").read_text().splitlines():
        v = dict(f.split("=", 1) for f in line.split())
        defs = [f"-DTM={v['tm']}", f"-DTN={v['tn']}", f"-DUNROLL={v['unroll']}"]
        out.append((f"unroll.cu unroll {v['unroll']}", v, ROOT / "bench/icache/unroll.cu", defs))
    return [r for r in out if r[1].get("check") == "ok"]


def main() -> None:
    dev = load_device("h200")
    built: dict[tuple[str, tuple[str, ...]], tuple[tuple[tuple[str, int], ...], int]] = {}
    errs: list[float] = []
    groups: dict[str, list[tuple[int, float]]] = {}
    for name, v, src, defs in rows():
        key = (str(src), tuple(defs))
        if key not in built:
            built[key] = build(src, defs)
        mix, regs = built[key]
        tm, tn, block, smem = int(v["tm"]), int(v["tn"]), int(v["block"]), int(v["smem"])
        static = 8192 * (tm // 4 + tn // 4)  # both kernels' two tables
        occ = solve(dev, block, regs, static, smem)
        assert occ.active_blocks_per_sm * occ.warps_per_block == int(v["warps_per_sm"]), (name, v)
        grid = occ.active_blocks_per_sm * dev.sm_count * 4  # four full waves, as run
        flops = 2.0 * tm * tn * K * grid * block
        p = predict_work(dev, occ, grid, flops, 0.0, regs, mix)
        warp_steps_per_sm = grid * block / 32 * K / dev.sm_count
        ns = (p.predicted_ms - LAUNCH_OVERHEAD_MS) * 1e6 / warp_steps_per_sm
        e = ns / float(v["ns_per_warp_iter_per_sm"]) - 1
        errs.append(abs(e))
        groups.setdefault(f"{name} {tm}x{tn}", []).append((int(v["warps_per_sm"]), e))
    q = sorted(errs)
    print(f"{len(errs)} rows: median |error| {statistics.median(q):.1%}, mean {statistics.mean(q):.1%}, "
          f"90th percentile {q[int(0.9 * len(q))]:.1%}, worst {q[-1]:.1%}")
    if "-v" in sys.argv:
        for g, v in groups.items():
            print(f"  {g:28s}", " ".join(f"w{w}:{e:+.0%}" for w, e in sorted(v)))


if __name__ == "__main__":
    main()
