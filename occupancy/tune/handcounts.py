"""The shipped families' hand counts as a predictor of a tuning entry.

An entry with `hand_counts: FAMILY` (kernels/matmul.yaml, kernels/transpose.yaml) has points
that are candidates of that family in tune/shipped.py: each gets its hand counts (sectors,
bank-conflict ways, loads against the naive kernel), registers estimated where no compiler
can build it, and a predicted time from the counts (model.predict) where `predictor:
hand_counts` says so or where the model has no build to read. The counts' numbers are the
ones the H200 records in bench/results were checked against; nothing here changes them.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace

from occupancy.build.resources import KernelResources
from occupancy.core.device import Device
from occupancy.core.errors import OccupancyError
from occupancy.core.solver import OccupancyResult, solve
from occupancy.inputs.manifest.tuning import TuneSpec
from occupancy.inputs.safety import inert
from occupancy.tune.model import predict
from occupancy.tune.ranked import ESTIMATE_SOURCE, Ranked
from occupancy.tune.shipped import FAMILIES, Candidate, counts


def problem_n(spec: TuneSpec) -> int:
    """The n x n problem the hand counts describe: the entry's `problem: {N: ...}`."""
    if spec.hand_counts not in FAMILIES:
        raise OccupancyError(f"{spec.manifest}: line {spec.line}: kernel '{inert(spec.name)}': "
                             f"hand_counts: no hand-count model '{inert(str(spec.hand_counts))}' "
                             f"(known: {', '.join(FAMILIES)})")
    if "N" not in spec.problem:
        raise OccupancyError(f"{spec.manifest}: line {spec.line}: kernel '{inert(spec.name)}': "
                             "hand_counts needs the matrix size as problem: {N: ...}")
    return spec.problem["N"]


def candidate_of(family: str, function: str, block: tuple[int, ...],
                 defines: Mapping[str, str]) -> Candidate:
    """The shipped candidate a point is: its variant from the function's name, its tile edge
    and work per thread from its macros (what kernels/<family>.cu does with them). A point
    that is none (another function, a macro missing): an error naming what it lacks."""
    try:
        c = _candidate(family, function, block, defines)
        c.estimated_registers  # noqa: B018 - a known kernel of the family
    except (KeyError, ValueError, ZeroDivisionError) as exc:
        raise OccupancyError(f"hand_counts: {inert(family)}: {inert(function)} with "
                             f"{inert(str(dict(defines)))} is no candidate of the family "
                             f"(missing or bad {inert(str(exc))})") from None
    return c


def _candidate(family: str, function: str, block: tuple[int, ...],
               defines: Mapping[str, str]) -> Candidate:
    variant = function.removeprefix(f"{family}_")
    d = {k: int(v) for k, v in defines.items()}
    b2 = (block[0], block[1] if len(block) > 1 else 1)
    if family == "matmul":
        if variant == "regblock":
            return Candidate(family, variant, function, b2, d, tile=d["BM"],
                             coarsening=d["TM"] * d["TN"])
        return Candidate(family, variant, function, b2, d,
                         tile=d.get("TILE", 0) if variant == "tiled" else 0)
    if variant == "vec":
        return Candidate(family, variant, function, b2, d, tile=64, coarsening=4 * 64 // d["VBY"])
    if variant == "tall":
        return Candidate(family, variant, function, b2, d, tile=128, coarsening=32)
    return Candidate(family, variant, function, b2, d, tile=d["TILE"],
                     coarsening=d["TILE"] // d["BLOCK_ROWS"])


def estimated(c: Candidate) -> KernelResources:
    """Registers to assume where no compiler can build the candidate (marked an estimate)."""
    return KernelResources(c.function, c.estimated_registers, c.static_shared_memory,
                           0 if c.variant == "naive" else 1, 0, 0, 0, None, ESTIMATE_SOURCE)


def occupancy(dev: Device, c: Candidate, res: KernelResources, dynamic_shared_memory: int = 0,
              carveout: int | None = None) -> OccupancyResult:
    """The solver on a candidate: its registers, static smem, launch bound and barriers (the
    tiled kernels use one; the naive ones none, as ptxas reports)."""
    return solve(dev, c.threads, res.registers_per_thread, res.static_shared_memory,
                 dynamic_shared_memory, carveout, res.max_threads_per_block,
                 max(res.barriers, 1 if c.variant != "naive" else 0))


def attach(spec: TuneSpec, dev: Device, r: Ranked) -> Ranked:
    """A point of a `hand_counts:` entry with its candidate, its counts and the launch's real
    grid (a persistent kernel's depends on the blocks resident at once)."""
    assert spec.hand_counts is not None
    n = problem_n(spec)
    c = candidate_of(spec.hand_counts, r.point.function, r.point.block, dict(r.point.defines))
    resident = r.occupancy.active_blocks_per_sm * dev.sm_count if r.occupancy else 1
    pt = replace(r.point, grid=c.grid(n, resident))
    return replace(r, point=pt, candidate=c, counts=counts(c, n, dev.shared_memory_banks))


def predicted(spec: TuneSpec, dev: Device, r: Ranked) -> Ranked:
    """The hand counts' prediction where the entry asks for it or the model gave none."""
    if r.candidate is None or r.counts is None or not r.can_launch or r.pruned:
        return r
    if r.prediction is not None and spec.predictor != "hand_counts":
        return r
    assert r.occupancy is not None
    return replace(r, prediction=predict(dev, r.candidate, r.counts, r.occupancy, problem_n(spec)))


def model_reads(spec: TuneSpec, res: KernelResources) -> bool:
    """Whether the model (SASS and one warp of PTX) runs on a point of this entry: not where
    the hand counts predict, nor where there is no real build (estimated registers) or no
    SASS loop mix to read."""
    if spec.hand_counts is None:
        return True
    return spec.predictor != "hand_counts" and "estimate" not in res.source \
        and res.loop_mix is not None
