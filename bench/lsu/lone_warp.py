"""Issue 18, bench/results/h200-lsu-overlap: does a one-warp issue model of the hot loop's
SASS explain what the H200 measured for lds_ffma.cu? CPU only (nvcc and nvdisasm here).

Each variant's hottest loop (as occupancy reads it) is issued in order by one warp, one
instruction a clock; an instruction that reads a register a shared load writes waits until
LATENCY clocks after that load. That gives the clocks a lone warp takes per k step (T1)
against the instructions it issues (I). With w warps a scheduler, a step waits a fraction
f = (T1 - I) / T1 of its time, and a scheduler idles when all its warps wait: I / (1 - f^w)
clocks a warp step (the form of model._tiled_loop_stall). Compared with lsu.txt at the clock
the SM holds: 1.69 GHz under full FFMA load (the model's CLOCK_UNDER_LOAD) for 8x8, 1.98 GHz
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
import occupancy.build.binaries as binaries  # noqa: E402
from occupancy.build.compilers import nvdisasm_path  # noqa: E402

SHAPES = {"88": (8, 8, 1.69), "84": (8, 4, 1.98), "44": (4, 4, 1.98)}


def hot_body(sass: str) -> list[tuple[int, str, str | None, str | None, str]]:
    """The hottest loop's instructions, as sass_loop_mix chooses it."""
    seen: list[list[tuple[int, str, str | None, str | None, str]]] = []
    real = binaries._load_batches

    def spy(body: list[tuple[int, str, str | None, str | None, str]]) -> tuple[int, int]:
        seen.append(body)
        return real(body)

    binaries._load_batches = spy  # type: ignore[assignment]
    try:
        binaries.sass_loop_mix(sass)
    finally:
        binaries._load_batches = real  # type: ignore[assignment]
    return seen[0]


def lone_warp(body: list[tuple[int, str, str | None, str | None, str]], latency: int
              ) -> tuple[int, int]:
    """(clocks a lone warp takes per iteration in steady state, instructions it issues)."""
    decoded = [(op, suffix, *binaries._operands(rest, op)) for _, op, suffix, _, rest in body]
    ready: dict[int, int] = {}
    t, starts = 0, []
    for _ in range(3):
        starts.append(t)
        for op, suffix, writes, reads in decoded:
            t = max(t, *(ready.get(r, 0) for r in reads), 0) + 1
            if op in ("LDS", "LDSM") and writes:
                width = 4 if suffix and ".128" in suffix else 2 if suffix and ".64" in suffix else 1
                ready.update(dict.fromkeys(range(writes[0], writes[0] + width), t - 1 + latency))
            else:
                for r in writes:
                    ready.pop(r, None)
    return starts[2] - starts[1], len(decoded)


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
                t1, issued = lone_warp(hot_body(sass), latency)
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
