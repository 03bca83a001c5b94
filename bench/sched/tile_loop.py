"""The whole tile loop of the corpus's SGEMMs issued by sim.py (a probe, docs/model.md item
34; CPU only). Per point of a committed record: the loop that holds the tile's global loads
and barriers, its nested FFMA loop laid out by its trips (the tile's FFMAs a thread, BK x BM
x BN / threads, less the outer loop's own), a barrier among the block's warps on the
sub-partition; the busiest SM's blocks in rounds of its resident ones, their warps on its
busiest sub-partition. Four variants, each the probe alone at the boost clock:

  widths, L2       shared and global accesses at one wavefront a width (LDS.128: 4), a
                   global load's result at L2_LATENCY_CLOCKS (300)
  wavefronts, L2   the shared accesses at ptxsim's wavefronts (bank conflicts, packed
                   broadcasts: the model's own count, over the widths', per point)
  wavefronts, DRAM  ... a global load's result at DRAM_LATENCY_CLOCKS (800)
  + lines, DRAM    ... and a global load at ptxsim's 128-byte lines a warp load

Prints per record the model's and each variant's rank of the measured fastest, the measured
time of its pick against the fastest, and its median |error|.

Needs the corpus manifests (bench/corpus, not committed: bench/CORPUS.md) and the cubins
the model built for them: run with OCCUPANCY_CACHE_DIR set to the build cache the corpus's
re-prediction left (else the model compiles every point again first).
Usage: python bench/sched/tile_loop.py RECORD.json [...]
"""

from __future__ import annotations

import json
import os
import re
import statistics
import subprocess
import sys
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(Path(__file__).resolve().parent))
import sim  # noqa: E402

from occupancy import load_device  # noqa: E402
from occupancy.build.compilers import nvdisasm_path  # noqa: E402
from occupancy.inputs.manifest.tuning import load_tuning  # noqa: E402
from occupancy.tune import model  # noqa: E402
from occupancy.tune.bounds import WorkLimits  # noqa: E402
from occupancy.tune.spaces import points, rank  # noqa: E402

SMS, BOOST_CLOCKS_PER_MS = 132, 1.98e6
VARIANTS = (("widths, L2", model.L2_LATENCY_CLOCKS, False, False),
            ("wavefronts, L2", model.L2_LATENCY_CLOCKS, True, False),
            ("wavefronts, DRAM", model.DRAM_LATENCY_CLOCKS, True, False),
            ("+ lines, DRAM", model.DRAM_LATENCY_CLOCKS, True, True))
_NAME = re.compile(rb"_Z\d+sgemm\w+")


def counts(path: Path) -> tuple[dict, dict[str, dict[str, Any]]]:
    """The record, and per point (its parameters as JSON) what the model counted: ptxsim's
    shared wavefronts over the SASS widths', its lines a global load, and the cubin."""
    rec = json.loads(path.read_text())
    suffix = "-" + "-".join(str(v) for v in rec["problem"].values())
    spec = load_tuning(ROOT / "bench/corpus" / path.stem.removesuffix(suffix) / "tune.yaml",
                       rec["kernel"], {k: int(v) for k, v in rec["problem"].items()})
    seen: dict[int, dict[str, Any]] = {}
    inner = model.predict_work

    def spy(dev, occ, grid_blocks, flops, dram_bytes, regs, loop_mix=None, traffic=None,
            write_share=None, grid=(), **kw):
        p = inner(dev, occ, grid_blocks, flops, dram_bytes, regs, loop_mix, traffic, write_share,
                  grid, **kw)
        if loop_mix and traffic is not None:
            mix = model.unit_mix(dict(loop_mix), traffic)
            fma = flops / (dev.fp32_gflops * 1e9 * model.FP32_EFFICIENCY)
            runs = model._sass_work(dev, grid_blocks, occ, flops, fma, mix)[0]
            units = model._traffic_units(traffic, grid_blocks, max(occ.warps_per_block, 1), flops)
            widths = runs * (mix["lds_wavefronts"] + mix["sts_wavefronts"])
            seen[id(p)] = {"scale": units * traffic.shared_wavefronts / widths if widths else 1.0,
                           "lines": traffic.global_load_lines / traffic.global_loads
                           if traffic.global_loads else None}
        return p

    hooked = [m for m in list(sys.modules.values()) if getattr(m, "predict_work", None) is inner]
    for m in hooked:
        m.predict_work = spy
    try:
        pts, removed = points(spec, 100000, WorkLimits(100000, 100000))
        ranked = rank(spec, load_device("h200"), pts, removed).ranked
    finally:
        for m in hooked:
            m.predict_work = inner
    return rec, {json.dumps(r.point.params, sort_keys=True): seen.get(id(r.prediction), {})
                 for r in ranked if r.prediction}


def index(cache: Path) -> dict[str, Path]:
    """Every SGEMM_CUDA instance's mangled name, to the cubin that holds it: only cubins
    built from SGEMM_CUDA's sources (the build's first dependency is its wrapper, whose
    first line includes the source), since examples/sgemm's kernel has the same name."""
    out: dict[str, Path] = {}
    for cubin in sorted(cache.glob("*.cubin")):
        meta = cubin.with_suffix(".json")
        try:
            wrapper = Path(json.loads(meta.read_text())["deps"][0][0])
            if "SGEMM_CUDA" not in wrapper.read_text().splitlines()[0]:
                continue
        except (OSError, ValueError, KeyError, IndexError):
            continue
        for name in _NAME.findall(cubin.read_bytes()):
            out.setdefault(name.decode(), cubin)
    return out


def tile_trace(insns: list[sim.Insn], labels: dict[str, int], ffma_tile: int) -> list[sim.Insn]:
    """The tile loop's instructions of one tile, its nested FFMA loop repeated by its trips."""
    every = sim.loops(insns, labels)
    tiles = [b for b in every if any(i.base == "LDG" for i in b) and any(i.base == "BAR" for i in b)]
    if not tiles:
        return []
    outer = max(tiles, key=len)
    inner = [b for b in every if b is not outer and outer[0].addr <= b[0].addr
             and b[-1].addr <= outer[-1].addr]
    if not inner:
        return outer
    loop = max(inner, key=lambda b: sum(i.base == "FFMA" for i in b))
    own = sum(i.base == "FFMA" for i in loop)
    rest = sum(i.base == "FFMA" for i in outer) - own
    trips = max(1, round((ffma_tile - rest) / own)) if own else 1
    a, z = outer.index(loop[0]), outer.index(loop[-1])
    return outer[:a] + loop * trips + outer[z + 1:]


_SASS: dict[Path, tuple[dict, dict]] = {}


def clocks(job: tuple[dict, dict, str, Path, dict]) -> list[float | None]:
    """The probe's clocks for one point under each variant."""
    point, problem, name, cubin, counted = job
    if cubin not in _SASS:
        sass = subprocess.run([nvdisasm_path() or "nvdisasm", "-c", "-hex", str(cubin)],
                              check=True, capture_output=True, text=True).stdout
        _SASS[cubin] = sim.parse(sass)
    funcs, labels = _SASS[cubin]
    p = point["params"]
    threads = p.get("NUM_THREADS") or p["BM"] * p["BN"] // (p.get("TM", 1) * p.get("TN", 1))
    body = tile_trace(funcs[name], labels, p["BK"] * p["BM"] * p["BN"] // threads)
    if not body:
        return [None] * len(VARIANTS)
    warps_per_block = -(-threads // 32)
    per_sm = -(-(problem["M"] // p["BM"] * (problem["N"] // p["BN"])) // SMS)
    resident = min(point["predicted_active_blocks_per_sm"], per_sm)
    warps = -(-resident * warps_per_block // 4)
    out: list[float | None] = []
    for _, latency, conflicts, lines in VARIANTS:
        sim.OTHER_LOAD_CLOCKS = latency
        sim.SHARED_WAVEFRONT_SCALE = counted.get("scale", 1.0) if conflicts else 1.0
        sim.GLOBAL_LINES_PER_LOAD = counted.get("lines") if lines else None
        per_warp = sim.simulate(body, warps, iters=4, block_warps=max(1, warps_per_block // 4))
        out.append(-(-per_sm // resident) * problem["K"] // p["BK"] * warps * per_warp)
    return out


def judge(meas: list[float], pred: list[float]) -> str:
    fast = min(range(len(meas)), key=meas.__getitem__)
    pick = min(range(len(pred)), key=pred.__getitem__)
    err = statistics.median(abs(x / m - 1) for m, x in zip(meas, pred, strict=True))
    rank_ = 1 + sum(x < pred[fast] for x in pred)
    return f"#{rank_:<3d} {meas[pick] / meas[fast] - 1:+6.1%} {err:5.1%}"


def main(argv: list[str]) -> None:
    where = index(Path(os.environ.get("OCCUPANCY_CACHE_DIR", "")) / "builds")
    print(f"{'record':32s} " + " | ".join(f"{n:21s}" for n in ("model", *(v[0] for v in VARIANTS)))
          + "\n(each: rank of the measured fastest, its pick against the fastest, median |error|)")
    for path in map(Path, argv):
        rec, counted = counts(path)
        jobs, meas, pred = [], [], []
        for x in rec["results"]:
            m = re.match(r"(\w+)<([\d, ]+)>", x["function"])
            mangled = "I" + "".join(f"Li{int(v)}E" for v in m.group(2).split(",")) + "E" if m else "?"
            name = next((n for n in where if m and m.group(1) in n and mangled in n), None)
            if x.get("measured") and name:
                jobs.append((x, rec["problem"], name, where[name],
                             counted.get(json.dumps(x["params"], sort_keys=True), {})))
                meas.append(x["measured"]["median_ms"])
                pred.append(x["predicted_ms"])
        with ProcessPoolExecutor(2) as pool:
            sims = list(pool.map(clocks, jobs, chunksize=8))
        keep = [i for i, s in enumerate(sims) if all(s)]
        cols = [judge([meas[i] for i in keep], [pred[i] for i in keep])]
        cols += [judge([meas[i] for i in keep], [sims[i][k] / BOOST_CLOCKS_PER_MS for i in keep])
                 for k in range(len(VARIANTS))]
        print(f"{path.stem:32s} " + " | ".join(f"{c:21s}" for c in cols) + f" ({len(keep)} points)",
              flush=True)


if __name__ == "__main__":
    main(sys.argv[1:])
