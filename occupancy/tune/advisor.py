"""`occupancy tile`: every candidate of a kernel family on a device, and the recommendation.

Joins the pieces: candidates and counts (tiling.py), registers from the real compiler for
the device's architecture (resources.py), occupancy (solver.py), predicted time (model.py).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path

from occupancy.build.builds import compile_or_estimate
from occupancy.build.resources import CompilerUnavailable, KernelResources
from occupancy.core.device import Device
from occupancy.core.errors import OccupancyError
from occupancy.core.solver import OccupancyResult, solve
from occupancy.core.words import limiters, pct
from occupancy.inputs.files import data_dir
from occupancy.tune.model import MODEL_ERROR, ROOF_NAMES, Prediction, predict, predict_work
from occupancy.tune.shipped import Candidate, Counts, candidates, counts


def kernels_dir() -> Path:
    return data_dir("kernels")


@dataclass(frozen=True)
class Analysis:
    candidate: Candidate
    resources: KernelResources
    occupancy: OccupancyResult
    counts: Counts
    prediction: Prediction | None  # None: cannot launch

    @property
    def launchable(self) -> bool:
        return self.occupancy.launchable


@dataclass(frozen=True)
class TileReport:
    device: Device
    kernel: str
    n: int
    analyses: tuple[Analysis, ...]
    recommended: Analysis | None
    reasons: tuple[str, ...]
    notes: tuple[str, ...]


def _resources(dev: Device, c: Candidate, notes: list[str]) -> KernelResources:
    src = kernels_dir() / f"{c.kernel}.cu"
    try:
        found = compile_or_estimate(src, dev, c.defines)
        return found[c.function]
    except CompilerUnavailable as exc:
        if not any("estimate" in n for n in notes):
            notes.append(f"registers are estimates: {exc}")
        return KernelResources(c.function, c.estimated_registers, c.static_shared_memory,
                               0 if c.variant == "naive" else 1, 0, 0, 0, None,
                               "estimate (no compiler; pip install 'occupancy[compiler]')")


def candidate_occupancy(dev: Device, c: Candidate, res: KernelResources) -> OccupancyResult:
    """The solver on a compiled candidate: its registers, static smem, launch bound and
    barriers (the tiled kernels use one; ptxas reports it)."""
    return solve(dev, c.threads, res.registers_per_thread, res.static_shared_memory, 0,
                 max_threads_per_block=res.max_threads_per_block,
                 block_barriers=max(res.barriers, 1 if c.variant != "naive" else 0))


def work_prediction(dev: Device, c: Candidate, res: KernelResources, occ: OccupancyResult,
                    k: Counts, n: int) -> Prediction | None:
    """The model every user kernel gets (model.predict_work): the SASS loop mix and one warp
    run on the candidate's PTX (ptxsim), with its real launch (A, B, C or in, out; n).
    None where there is no build to read (estimated registers, or no nvdisasm for the SASS)
    or the PTX cannot be run."""
    from occupancy.build.builds import arch_of, device_build
    from occupancy.build.compilers import make_build
    from occupancy.tune.ptxsim import ARRAY_STRIDE
    from occupancy.tune.traffic import warp_traffic

    if "estimate" in res.source or res.loop_mix is None:
        return None
    build = device_build(make_build(kernels_dir() / f"{c.kernel}.cu", arch_of(dev),
                                    defines=c.defines), dev)
    args: list[float | int] = [ARRAY_STRIDE * (j + 1) for j in range(c.arrays)]
    grid = c.grid(n, occ.active_blocks_per_sm * dev.sm_count)
    t = warp_traffic(build, c.function, [*args, *c.sizes(n)], c.block, grid,
                     dev.shared_memory_banks, sass_ffma=dict(res.loop_mix).get("ffma", 0))
    if t is None:
        return None
    return predict_work(dev, occ, math.prod(grid), k.flops, k.compulsory_bytes,
                        res.registers_per_thread, res.loop_mix, t)


def predict_candidate(dev: Device, c: Candidate, res: KernelResources, occ: OccupancyResult,
                      k: Counts, n: int) -> Prediction | None:
    """A shipped candidate's predicted time (None: it cannot launch). matmul: the model every
    user kernel gets, read from the build (its SASS and one warp of its PTX): 6.4% median
    error on the H200 against 16.8% for the hand counts. transpose: the hand counts (3.2%
    against 6.5%). The hand counts also stand in where no build exists. docs/model.md."""
    if not occ.launchable:
        return None
    return (work_prediction(dev, c, res, occ, k, n) if c.kernel == "matmul" else None) \
        or predict(dev, c, k, occ, n)


def analyze(dev: Device, kernel: str, n: int) -> TileReport:
    if not isinstance(n, int) or n <= 0:
        raise OccupancyError(f"-n must be a positive integer (the matrix size), got {n}")
    notes: list[str] = []
    out = []
    for c in candidates(kernel):
        res = _resources(dev, c, notes)
        occ = candidate_occupancy(dev, c, res)
        k = counts(c, n, dev.shared_memory_banks)
        pred = predict_candidate(dev, c, res, occ, k, n)
        out.append(Analysis(c, res, occ, k, pred))
    runnable = [a for a in out if a.prediction is not None]
    if not runnable:
        return TileReport(dev, kernel, n, tuple(out), None,
                          ("no candidate can launch on this device",), tuple(notes))
    best = min(runnable, key=lambda a: a.prediction.predicted_ms)  # type: ignore[union-attr]
    return TileReport(dev, kernel, n, tuple(out), best, tuple(_reasons(best, runnable, n)),
                      tuple(notes))



def _blocks(n: int) -> str:
    return f"{n} block" + ("" if n == 1 else "s")


def _reasons(best: Analysis, runnable: list[Analysis], n: int) -> list[str]:
    p = best.prediction
    assert p is not None
    c = best.candidate
    occ = best.occupancy
    limiter = limiters(occ.limiters)
    reasons = [f"{c.label}: predicted {p.predicted_ms:.3f} ms, bound by {ROOF_NAMES[p.bound]}"]
    others = sorted((a for a in runnable if a is not best),
                    key=lambda a: a.prediction.predicted_ms)  # type: ignore[union-attr]
    if others:
        nxt = others[0]
        ratio = nxt.prediction.predicted_ms / p.predicted_ms  # type: ignore[union-attr]
        if ratio < 1 + MODEL_ERROR:
            reasons.append(f"a tie with {nxt.candidate.label} ({ratio:.2f}x), within the "
                           f"model's error ({MODEL_ERROR:.0%}): `occupancy measure` decides")
        else:
            reasons.append(f"{ratio:.2f}x faster than the runner-up, {nxt.candidate.label}")
    reasons.append(f"occupancy {pct(occ.occupancy)} ({_blocks(occ.active_blocks_per_sm)} of "
                   f"{c.threads} threads per SM, limited by {limiter}; "
                   f"{best.resources.registers_per_thread} registers from "
                   f"{best.resources.source})")
    naive = next((a for a in runnable if a.candidate.variant == "naive"), None)
    saved = (naive.counts.global_load_elements / best.counts.global_load_elements
             if naive and best.counts.global_load_elements else 1.0)
    if naive and naive is not best and saved >= 1.5:
        reasons.append(f"{saved:.0f}x fewer global loads than the naive kernel "
                       f"({best.counts.global_load_elements:.3g} vs "
                       f"{naive.counts.global_load_elements:.3g} elements)")
    if best.counts.bank_conflict_ways > 1:
        reasons.append(f"its shared-memory access has {best.counts.bank_conflict_ways}-way "
                       "bank conflicts, counted in the load/store roof")
    if p.hiding < 1:
        reasons.append(f"the resident warps hide {pct(p.hiding)} of the memory latency")
    return reasons
