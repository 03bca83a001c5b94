"""Issue 18, bench/results/h200-lsu-overlap: does a one-warp issue model of the hot loop's
SASS explain what the H200 measured for lds_ffma.cu? CPU only (nvcc and nvdisasm here).

Each variant's hottest loop (as occupancy reads it) is issued in order by one warp, one
instruction a clock; an instruction that reads a register a shared load writes waits until
LATENCY clocks after that load. That gives the clocks a lone warp takes per k step (T1)
against the instructions it issues (I). With w warps a scheduler, a step waits a fraction
f = (T1 - I) / T1 of its time, and a scheduler idles when all its warps wait: I / (1 - f^w)
clocks a warp step (the form of model._tiled_loop_stall). Compared with lsu.txt at the clock
the SM holds: 1.69 GHz under full FFMA load (the model's CLOCK_UNDER_LOAD then; docs/model.md
item 42 took it out: no clock drop, the register banks instead) for 8x8, 1.98 GHz
(boost) for 8x4 and 4x4.
Usage: python bench/lsu/lone_warp.py [LATENCY]"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
import occupancy.build.sass_loops as sass_loops  # noqa: E402
from occupancy.build.compilers import nvdisasm_path  # noqa: E402

SHAPES = {"88": (8, 8, 1.69), "84": (8, 4, 1.98), "44": (4, 4, 1.98)}


def lone_warp(sass: str, latency: int) -> tuple[int, int]:
    """(clocks a lone warp takes per pass of the hottest loop in steady state, instructions
    it issues): the SASS reader's own `warp_wait` (sass_loops._lone_warp_wait), with the shared
    load's latency set and arithmetic results ready the next clock (this record waits for
    shared loads only)."""
    saved = sass_loops.SHARED_LOAD_CLOCKS, sass_loops.ALU_RESULT_CLOCKS
    sass_loops.SHARED_LOAD_CLOCKS, sass_loops.ALU_RESULT_CLOCKS = latency, 1
    try:
        mix = dict(next(iter(sass_loops.sass_loop_mix(sass).values())))
    finally:
        sass_loops.SHARED_LOAD_CLOCKS, sass_loops.ALU_RESULT_CLOCKS = saved
    return mix["total"] + mix["warp_wait"], mix["total"]


def measured() -> dict[tuple[int, str, int], float]:
    out: dict[tuple[int, str, int], list[float]] = {}
    for line in (ROOT / "bench/results/h200-lsu-overlap/lsu.txt").read_text().splitlines():
        v = dict(f.split("=", 1) for f in line.split())
        key = (int(v["rolled"]), v["tm"] + v["tn"], int(v["warps_per_sm"]))
        out.setdefault(key, []).append(float(v["ns_per_warp_iter_per_sm"]))
    return {k: sorted(x)[len(x) // 2] for k, x in out.items()}


def main() -> None:
    latency = int(sys.argv[1]) if len(sys.argv) > 1 else 50
    meas = measured()
    src = ROOT / "bench/lsu/lds_ffma.cu"
    with tempfile.TemporaryDirectory() as tmp:
        for rolled in (1, 0):
            for name, (tm, tn, ghz) in SHAPES.items():
                cubin = os.path.join(tmp, f"l{rolled}{name}.cubin")
                subprocess.run(["nvcc", "-O3", "-arch=sm_90", "-cubin", f"-DTM={tm}", f"-DTN={tn}",
                                *(["-DROLLED"] if rolled else []), "-o", cubin, str(src)], check=True)
                sass = subprocess.run([nvdisasm_path() or "nvdisasm", "-c", cubin], check=True,
                                      capture_output=True, text=True).stdout
                t1, issued = lone_warp(sass, latency)
                steps = 1 if rolled else 4  # the unrolled body holds 4 k steps
                t1, issued = t1 / steps, issued / steps
                f = (t1 - issued) / t1
                for w in (1, 2, 3, 4, 5):
                    m = meas.get((rolled, name, 4 * w))
                    if m is None:
                        continue
                    model = issued / (1 - f ** w)  # scheduler clocks a warp step
                    got = m * ghz * 4  # ns per warp step per SM -> scheduler clocks
                    print(f"{'rolled' if rolled else 'unrolled':8} {tm}x{tn} warps/SM {4 * w:2}: "
                          f"I {issued:5.1f}  T1 {t1:5.1f}  model {model:6.1f}  measured {got:6.1f}"
                          f"  ({model / got - 1:+.0%})")


if __name__ == "__main__":
    main()
