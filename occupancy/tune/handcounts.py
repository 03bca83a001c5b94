"""The shipped families' hand counts as a predictor of a tuning entry.

An entry with `hand_counts: FAMILY` (kernels/matmul.yaml, kernels/transpose.yaml) has points
that are candidates of that family in tune/shipped.py: each gets its hand counts (sectors,
bank-conflict ways, loads against the naive kernel), registers estimated where no compiler
can build it, and a predicted time from the counts (`predict`, below) where `predictor:
hand_counts` says so or where the model has no build to read. The counts' numbers are the
ones the H200 records in bench/results were checked against; nothing here changes them.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import replace

from occupancy.build.resources import KernelResources
from occupancy.build.sass_pipes import SCHEDULERS_PER_SM
from occupancy.core.device import Device
from occupancy.core.errors import OccupancyError
from occupancy.core.solver import OccupancyResult, solve
from occupancy.inputs.manifest.tuning import TuneSpec
from occupancy.inputs.safety import inert
from occupancy.tune.model import (
    BARRIER_COST,
    DRAM_EFFICIENCY,
    DRAM_LATENCY_CLOCKS,
    FMA_LATENCY_CLOCKS,
    FP32_EFFICIENCY,
    GLOBAL_LOAD_COST,
    L2_BYTES_PER_CLOCK_PER_SM,
    L2_LATENCY_CLOCKS,
    LAUNCH_OVERHEAD_MS,
    LSU_WAVEFRONTS_PER_CLOCK,
    OVERLAP,
    PARTIAL_STORE_SECTORS_PER_CLOCK_PER_SM,
    REQUEST_OVERHEAD_BYTES,
    Prediction,
    block_launch_seconds,
)
from occupancy.tune.ranked import ESTIMATE_SOURCE, Ranked
from occupancy.tune.shipped import FAMILIES, Candidate, Counts, counts


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
                 max(res.barriers, 1 if c.variant != "naive" else 0), block=tuple(c.block))


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


def _l1_miss_bytes(dev: Device, c: Candidate, k: Counts, n: int) -> float:
    """Bytes the L1 sends to L2. Tiled kernels load each tile once (no L1 reuse); the naive
    matmul reuses each 32-B sector of A along k and B's row across the block's warps."""
    # CC 1.x has no cache in front of DRAM at all: every access misses.
    if dev.l2_cache_bytes and c.kernel == "matmul" and c.variant == "naive":
        bx, by = c.block
        return 4.0 * n ** 3 * (1 / bx + 1 / by)
    return (k.global_load_sectors + k.global_store_sectors) * 32.0


def predict(dev: Device, c: Candidate, k: Counts, occ: OccupancyResult, n: int) -> Prediction:
    """A shipped family's time from its hand counts (docs/model.md, "What it costs")."""
    clock = dev.boost_clock_mhz * 1e6
    sms = dev.sm_count
    # FP32 issue: one warp instruction per scheduler per clock; instructions other than
    # FFMA take issue slots too.
    fma_rate = dev.fp32_gflops * 1e9 / 64 * FP32_EFFICIENCY  # warp FFMA per second
    fp32 = (k.fma_instructions + k.other_instructions) / fma_rate if k.flops else 0.0
    # Every warp instruction is at least one pass; 128 B (4 sectors) per pass beyond that.
    wavefronts = (GLOBAL_LOAD_COST * max(k.global_loads, k.global_load_sectors / 4)
                  + max(k.global_stores, k.global_store_sectors / 4)
                  + k.shared_load_wavefronts + k.shared_store_wavefronts
                  + BARRIER_COST * k.barriers)
    lsu = wavefronts / (sms * clock * LSU_WAVEFRONTS_PER_CLOCK)
    l2_bytes = _l1_miss_bytes(dev, c, k, n)
    l2 = l2_bytes / (sms * clock * L2_BYTES_PER_CLOCK_PER_SM)
    scattered = 0.0
    if k.store_sectors_per_request > k.ideal_sectors_per_request:
        scattered = k.global_store_sectors / (sms * clock * PARTIAL_STORE_SECTORS_PER_CLOCK_PER_SM)
    # DRAM: compulsory traffic, plus re-reads when the panels the resident blocks stream
    # at once do not fit in L2.
    dram_bytes = k.compulsory_bytes
    resident = max(occ.active_blocks_per_sm, 1) * sms
    footprint = k.panel_bytes_per_block * min(resident, k.grid_blocks) ** 0.5 * 2 \
        if k.panel_bytes_per_block else 0.0
    if dev.l2_cache_bytes == 0:
        dram_bytes = max(dram_bytes, l2_bytes)
    elif footprint > dev.l2_cache_bytes:
        dram_bytes += l2_bytes * (1 - dev.l2_cache_bytes / footprint)
    request_bytes = 32.0 * max(k.load_sectors_per_request, 1)
    dram = (dram_bytes / (dev.dram_bandwidth_gb_s * 1e9 * DRAM_EFFICIENCY)
            * (1 + REQUEST_OVERHEAD_BYTES / request_bytes))

    # A grid smaller than one full wave leaves fewer blocks per SM (and some SMs idle).
    warps_per_block = max(occ.warps_per_block, 1)
    blocks_per_sm = min(max(occ.active_blocks_per_sm, 1), -(-k.grid_blocks // sms))
    busy_sms = min(sms, k.grid_blocks)
    warps = max(blocks_per_sm * warps_per_block, 1)
    # Little's law: bandwidth x latency bytes must be in flight per SM. Short of that the
    # achieved bandwidth falls off smoothly (1 - e^-x), not at a cliff: queues at the
    # memory controllers fill gradually.
    # (No L1 cap here, unlike predict_work: the shipped float4 transposes at the 228 KB
    # shared-memory size, vec 16x8 and tall 16x16, measure no slowdown on the H200.)
    in_flight = warps * k.bytes_in_flight_per_warp
    need_dram = dev.dram_bandwidth_gb_s * 1e9 / sms / clock * DRAM_LATENCY_CLOCKS
    need_l2 = L2_BYTES_PER_CLOCK_PER_SM * L2_LATENCY_CLOCKS
    mem_hiding = 1 - math.exp(-in_flight / need_dram)
    l2_hiding = 1 - math.exp(-in_flight / need_l2)
    # Arithmetic: each scheduler needs FMA latency's worth of independent instructions.
    ilp = c.coarsening if c.kernel == "matmul" else 1
    fma_hiding = min(1.0, warps * ilp / (SCHEDULERS_PER_SM * FMA_LATENCY_CLOCKS))
    busy = busy_sms / sms  # issue roofs run on the busy SMs only
    fp32, lsu = fp32 / busy, lsu / busy
    roofs = {"fp32": fp32 / fma_hiding, "lsu": lsu / fma_hiding, "l2": l2 / l2_hiding,
             "dram": dram / mem_hiding, "scatter": scattered}
    # The issue side (FP32, load/store unit) and the memory side (L2, DRAM, scattered
    # stores) run concurrently but not perfectly: the larger plus OVERLAP x lo^2 / hi of
    # the smaller. Roofs on the same side share one stream and do not add.
    compute = max(roofs["fp32"], roofs["lsu"])
    memory = max(roofs["l2"], roofs["dram"], roofs["scatter"])
    hi, lo = max(compute, memory), min(compute, memory)
    seconds = hi + OVERLAP * lo * (lo / hi if hi else 0.0)
    roofs["blocks"] = block_launch_seconds(dev, k.grid_blocks)
    roofs["latency"] = 0.0  # (the tuning model's warp path; the hand counts have none)
    roofs["atomics"] = 0.0  # (the tuning model's contended atomics; the hand counts have none)
    # Wave quantization: with one or two waves, the last one runs part-full; on the
    # issue side that idle share of the SMs is lost (the memory side is covered above).
    waves = -(-k.grid_blocks // resident)
    wave_eff = k.grid_blocks / (waves * resident)
    if 1 < waves <= 2 and compute >= memory:
        seconds /= wave_eff
    else:
        wave_eff = 1.0
    seconds = max(seconds, roofs["blocks"])
    bound = max(roofs, key=lambda r: roofs[r])
    ms = seconds * 1e3 + LAUNCH_OVERHEAD_MS
    return Prediction(ms, bound, {r: v * 1e3 for r, v in roofs.items()},
                      min(mem_hiding, fma_hiding) if bound != "fp32" else fma_hiding,
                      wave_eff, dram_bytes, l2_bytes,
                      k.flops / dram_bytes if dram_bytes else 0.0)
