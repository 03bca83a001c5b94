"""Performance model: predicted time of a tile candidate on a device (docs/model.md).

Roofs, each a time (ROOF_NAMES). Occupancy enters through latency hiding (Little's law),
the grid through wave quantization. Constants carry the fact or measurement they come from.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

from occupancy.build.sass_loops import COUNTED_KEYS
from occupancy.build.sass_pipes import SCHEDULERS_PER_SM, issue_slots, pipe_factor
from occupancy.core.device import Device
from occupancy.core.solver import OccupancyResult
from occupancy.tune.constwalk import constant_walk_seconds
from occupancy.tune.inflight import (
    dram_reads_per_warp,
    l1_for_loads,
    loads_in_flight,
    row_run_latency_factor,
)
from occupancy.tune.queueing import busy_share, warp_wait_factor
from occupancy.tune.reuse import (
    l2_reread_share,
    panel_l2_share,
    read_back_bytes,
    reread_miss_bytes,
    rewrite_miss_bytes,
    store_merge_bytes,
)

if TYPE_CHECKING:
    from occupancy.tune.ptxsim import Traffic

# One warp-wide shared-memory access (32 lanes x 4 B = 128 B) per clock per SM: the LSU's
# rate since Maxwell. A global load that hits L1 costs more than a shared load (tag lookup,
# address divergence handling): 1.6 LDS-equivalents, calibrated on the H200 naive matmul.
LSU_WAVEFRONTS_PER_CLOCK = 1.0
GLOBAL_LOAD_COST = 1.6
BARRIER_COST = 1.0  # a __syncthreads occupies the issue slot like one wavefront
# A global load that hits L1 passes one wavefront per 128-byte line its lanes touch
# (ptxsim counts the lines): llm.c's matmul_forward_kernel1, whose lanes each walk their
# own row, runs at one line per clock per SM on the H200 (4 block shapes, within 3%).
GLOBAL_LINE_COST = 1.0
# L2 bandwidth per SM per clock for what misses L1: ~5.5 TB/s on H100/H200 (132 SMs at
# 1.98 GHz); used for every device, scaled by its SMs and clock.
L2_BYTES_PER_CLOCK_PER_SM = 21.0
# Stores that touch a sector partially (the naive transpose's column writes) are merged
# in L2 with byte masks at about a quarter sector per clock per SM (H200: 514 GB/s).
PARTIAL_STORE_SECTORS_PER_CLOCK_PER_SM = 0.25
# Sustained fractions of the datasheet peaks, measured on the H200 (bench/results):
# device-to-device copy reaches 88% of the DRAM bandwidth (4.24 of 4.81 TB/s); cuBLAS
# SGEMM 77% of the FP32 peak (51.4 of 66.9 TFLOP/s). Take ~5% of cuBLAS's issue slots for
# its own loads and loop: its FFMA pipe runs at 81% of the boost-clock peak, the floor under
# a loop's FP32 time. The issue side runs at the boost clock (Nsight Compute: register-
# blocked loops at 1.96-1.98 GHz, docs/model.md item 40) and its clocks are the SASS's own,
# the register banks' waits among them (sass_loops.REGISTER_BANKS, item 42).
DRAM_EFFICIENCY = 0.88
FP32_EFFICIENCY = 0.81
# A stream that only reads reaches more of DRAM than the copy: no turnarounds between reads
# and writes on the bus (dram_efficiency: in between by the share written). Set on the
# calibration reduction (kernel_tuner's sum_floats, bench/results/h200-corpus-calibration):
# its leaders read 67 MB at n = 2^24 in 18.4-19.0 us, 94% with the launch and request
# costs here (the 268 MB at 2^26 in 61-63 us: ~100%, so 94% stays on the safe side).
DRAM_READ_EFFICIENCY = 0.94
# The issue side and the memory side overlap imperfectly: the smaller adds up to a quarter
# of itself, less the further it is below the larger (lo * lo / hi): a side far below
# the other hides in its shadow.
OVERLAP = 0.25
# Every DRAM request carries a fixed cost: 128-byte requests (a warp of floats) reach
# ~95% of what the copy engine's large ones do, 512-byte ones (float4) ~99% (H200:
# padded 64x8 transpose 90%, float4 transpose 95% of the copy). Equivalent bytes/request:
REQUEST_OVERHEAD_BYTES = 6.4
DRAM_LATENCY_CLOCKS = 800  # global load latency on a miss, order of magnitude since Volta
L2_LATENCY_CLOCKS = 300
# The same latency as the tuning model sees it: its bytes in flight are the loads a warp
# issues before it first needs one (the SASS's batches), so the effective latency of the
# 1 - e^-x curve is shorter. Calibrated on the H200 transpose space at 8192 (2.6% median
# error; 4096, not used, 5.5%): bench/results/h200-tuning.
WORK_DRAM_LATENCY_CLOCKS = 500
# Issue slots and the load/store unit serve one instruction stream: a shared load takes a
# slot and waits in the unit's queue, so when both are busy the smaller adds a little
# (the same lo^2/hi form as OVERLAP). Calibrated on the H200 SGEMM space at 4096 (5.3%
# median error; 2048 and 8192, not used: 8.1% and 7.1%).
ISSUE_LSU_OVERLAP = 0.1
# A warp pushes its own shared wavefronts through the load/store unit at most one every this
# many clocks: a warp alone on its SM whose every load is a 32-way conflict takes 2.3 clocks
# a wavefront, and so do two (each 1.16), where four or more reach the unit's one a clock
# (1.01-1.08). Measured on the H200 with bench/lsu/conflicted.cu, written here (a lane's own
# row of a shared table by a runtime stride beside a broadcast, 1 to 16 warps an SM, 1- to
# 32-way: bench/results/h200-lsu-conflicts); flash-attention-minimal's thin grid (one or two
# warps an SM) is where a kernel meets it. It scales the whole load/store roof, global
# lines and barriers too.
LONE_WARP_WAVEFRONT_CLOCKS = 2.3
FMA_LATENCY_CLOCKS = 4
# The fixed cost in a `measure` timing (CUDA events around one launch) and the block
# scheduler's rate, measured on the H200 with kernels that do nothing
# (bench/results/h200-launch): 2.8 us for one block; each further block 0.60 ns of the
# whole GPU (16,384 blocks: 12.6 us, 65,536: 42.1 us) whatever its size from 32 to 512
# threads or its shared memory (1024-thread blocks: 0.70 ns). That is 157 clocks per
# block per SM: a grid of many small blocks (a 16 x 4 transpose tile at 8192: 262,144
# blocks, 157 us) is bound by launching them, not by DRAM.
LAUNCH_OVERHEAD_MS = 0.0028
BLOCK_LAUNCH_CLOCKS = 157
# Atomics to one address are serialized where the address lives (its L2 slice), whatever
# the number of SMs that issue them: measured on the H200 (bench/results/h200-atomics.json,
# kernels that only add to one counter, 4,096 to 4.2M blocks, 1 to 32 atomics a block),
# 1.76 ns per float atomicAdd (RED or ATOM alike) and 0.74 ns per integer one. A grid of
# many small blocks that each add a partial sum to one total (a norm, a reduction) is bound
# by it: 4.2M blocks x 1 float atomic = 7.4 ms.
ATOMIC_FLOAT_NS = 1.76
ATOMIC_INT_NS = 0.74
# Predictions closer than this are a tie that only a measurement breaks: the model's
# error on the H200 (the 90th percentile of |predicted / measured - 1| out of sample is
# about 15%; bench/results/model-check.json).
MODEL_ERROR = 0.15
# Predictions closer than this are the same prediction: twice the run-to-run spread of a
# measurement on the H200 (median p90/p10 of 20 runs: 0.98% over the corpus's calibration
# part's 1,700 points, bench/results/h200-corpus-calibration). Where the fastest predicted
# point is bound by a bandwidth roof (MEMORY_ROOFS: it needs bytes in flight), the pick
# among the points predicted within it is the one with the most threads resident: the
# most latency hidden for what the model does not see (L1 held by loads in flight, DRAM
# pages). At the FP32 or load/store roof more warps add no issue slots, and the pick stays
# the fastest predicted. Why: the shipped transposes, predicted 1.2% apart at the DRAM roof,
# whose 75%-occupancy pick measured 11-12% behind the 100% ones at 7000, 11000 and 18000.
RESOLUTION = 0.02
MEMORY_ROOFS = ("dram", "l2", "scatter")
COMPUTE_ROOFS = ("fp32", "lsu", "constant")  # the issue side, summed over rounds
# The error band a prediction carries, from code nobody here wrote: the 68th percentile of
# |log(predicted / measured)| over the corpus's validation part on the H200 (2,688 points;
# corpus-check.json, validation_band_68): 1.19 with docs/model.md items 17-26, 1.16 with
# 27-28, 1.15 with 29; the widest is kept. A band: no prediction moves by it.
BAND_RATIO = 1.19
# The devices the model's constants were measured on; elsewhere they are the H200's.
MEASURED_ON = ("h200",)


def predicted_range_ms(predicted_ms: float, upper_ms: float = 0.0) -> tuple[float, float]:
    """The error band of a prediction (BAND_RATIO either way), above from `upper_ms` where
    that is more: the time a cost the model names and does not price may reach."""
    return predicted_ms / BAND_RATIO, max(predicted_ms, upper_ms) * BAND_RATIO
ROOF_NAMES = {"fp32": "FP32 issue", "lsu": "the load/store unit (L1 and shared memory)",
              "l2": "L2 bandwidth", "dram": "DRAM bandwidth",
              "scatter": "scattered partial-sector stores",
              "blocks": "the block scheduler (launching the grid's blocks)",
              "latency": "the load latency on one warp's path (its dependent round trips)",
              "atomics": "atomics to one address (serialized where it lives in L2)",
              "constant": "a walked __constant__ table's misses (the immediate constant cache)"}


@dataclass(frozen=True)
class Prediction:
    predicted_ms: float
    bound: str  # the largest roof (a key of ROOF_NAMES)
    roofs_ms: dict[str, float]
    hiding: float  # 0-1: how much of the latency the resident warps hide (issue-bound: the
    # share of the time the schedulers issue; constant-bound: the issue side's over the floor)
    wave_efficiency: float  # 0-1: last partial wave of blocks
    dram_bytes: float
    l2_bytes: float
    arithmetic_intensity: float  # FLOP per DRAM byte
    # the time if a walked __constant__ table ran at its slow floor at any blocks an SM
    slow_walk_ms: float = 0.0  # (predict_work's `slow_walk`); 0: not predicted


def _loads_per_batch(mix: dict[str, int], traffic: Traffic) -> float:
    """Global loads a warp issues before it waits for one: the SASS's batches of its hottest
    loop, else (no loads there) all the loads of its run at once. A warp followed to its end
    also walks its row in the kernel's other passes that wait for each load (`pass_loops`),
    as many loads each as the hottest loop's pass: llm.c's online softmax batches 4 loads in
    its first pass and waits for each in its second, 2 loads an element in 1/4 + 1 waits
    (1.6 a wait, not 4), and Nsight Compute found its warps waiting on loads
    (bench/results/h200-softmax-ncu, stalls)."""
    if mix.get("ldg"):
        batches = max(mix.get("ldg_batches", 1), 1)
        if traffic.complete and traffic.global_loads:
            # a warp followed to its end runs as many passes of that loop as its share of the
            # loads fills; the loads left over go through the compiler's remainder code (the
            # rolled loop an unroll leaves for the last iterations), one round trip each; the
            # other passes that wait for each load (`pass_loops`) take as many loads each
            k = mix.get("pass_loops", 0)
            share = traffic.global_loads / (1 + k)
            passes = math.floor(share / mix["ldg"])
            rest = share - passes * mix["ldg"]
            return traffic.global_loads / max(passes * batches + rest + k * share, 1.0)
        return mix["ldg"] / batches
    return traffic.global_loads


def _warp_path(dev: Device, occ: OccupancyResult, grid_blocks: int, mix: dict[str, int],
               traffic: Traffic | None) -> float:
    """The floor one warp's own path sets: its dependent round trips to memory (its global
    loads over the loads it keeps in flight at once, the SASS's batches) at the DRAM
    latency, once per round of resident blocks, after the SM has started the round's
    blocks one by one. A warp run that ptxsim followed to its end only (a run cut at a
    repeating loop has its own stall term); 0 otherwise. Measured: llm.c's layernorm
    kernel 3 (bench/results/h200-layernorm) puts a warp on a row and walks it three times;
    its grid fits the SMs at once, and the time is this path, not the bandwidth."""
    if traffic is None or not traffic.complete or not traffic.global_loads:
        return 0.0
    trips = (traffic.global_loads - l1_reread_loads(dev, occ, grid_blocks, traffic)) \
        / max(_loads_per_batch(mix, traffic), 1.0)
    per_sm = -(-grid_blocks // dev.sm_count)
    resident = max(occ.active_blocks_per_sm, 1)
    rounds = max(1.0, per_sm / resident)
    ramp = min(resident, per_sm) * BLOCK_LAUNCH_CLOCKS
    return (rounds * trips * DRAM_LATENCY_CLOCKS + ramp) / (dev.boost_clock_mhz * 1e6)


def l1_reread_loads(dev: Device, occ: OccupancyResult, grid_blocks: int,
                    traffic: Traffic) -> float:
    """The warp's loads of lines it loaded or stored before that L1 still holds: those of
    its re-reads whose reuse distance times the SM's resident warps (the bytes the SM
    moves between the two) fits the SM's L1. They take no trip to L2 or DRAM. A cyclic
    re-read over more than L1 holds finds nothing (LRU evicts each line before its turn),
    so the rule is all or none. llm.c's softmax 4 at 16,384 x 4,096 (a block per 16 KB row,
    64 warps per SM, four passes over the row): 256-thread blocks re-read 192 KB per SM and
    run at the DRAM roof (242 us), 128-thread blocks 389 KB and take every trip (411 us)."""
    if not traffic.reread_lines or not traffic.global_load_lines:
        return 0.0
    l1 = l1_for_loads(dev, occ)
    if l1 is None:
        return 0.0
    per_sm = occ.resident_blocks(grid_blocks, dev.sm_count)
    footprint = traffic.reread_distance / traffic.reread_lines * per_sm * max(occ.warps_per_block, 1) \
        + traffic.shared_bytes  # what every warp reads, once (ptxsim's sample: traffic.py)
    if footprint > l1:
        return 0.0
    return min(traffic.global_loads,
               traffic.reread_lines * traffic.global_loads / traffic.global_load_lines)


def dram_efficiency(write_share: float | None) -> float:
    """The share of the DRAM bandwidth a stream reaches, by the share of its bytes written:
    a copy (half written) DRAM_EFFICIENCY, a stream that only reads DRAM_READ_EFFICIENCY,
    in between in proportion. Unknown (None): the copy's."""
    if write_share is None:
        return DRAM_EFFICIENCY
    mixed = min(1.0, 2.0 * max(write_share, 0.0))
    return DRAM_READ_EFFICIENCY + (DRAM_EFFICIENCY - DRAM_READ_EFFICIENCY) * mixed


def contended_atomic_seconds(traffic: Traffic | None, units: float) -> float:
    """The floor the grid's atomics to shared addresses set: each address takes them one at
    a time (ATOMIC_*_NS), the addresses in parallel. From a whole warp run only (`units`:
    the grid's warps); 0 without one. Measured on the H200 only, like the other constants."""
    if traffic is None or not traffic.complete or not traffic.contended_addresses:
        return 0.0
    ns = (traffic.contended_float_atomics * ATOMIC_FLOAT_NS
          + traffic.contended_int_atomics * ATOMIC_INT_NS)
    return units * ns * 1e-9 / traffic.contended_addresses


def block_launch_seconds(dev: Device, grid_blocks: int) -> float:
    """The block scheduler's floor: each SM starts a block every BLOCK_LAUNCH_CLOCKS. It
    runs beside the work of the blocks already resident (their time is the other roofs),
    so the kernel takes the larger of the two."""
    return grid_blocks * BLOCK_LAUNCH_CLOCKS / (dev.sm_count * dev.boost_clock_mhz * 1e6)


# --- any kernel, from the work a tuning manifest declares -------------------------------------


def predict_work(dev: Device, occ: OccupancyResult, grid_blocks: int, flops: float,
                 dram_bytes: float, registers_per_thread: int,
                 loop_mix: tuple[tuple[str, int], ...] | None = None,
                 traffic: Traffic | None = None,
                 write_share: float | None = None, grid: tuple[int, ...] = (),
                 slow_walk: bool = False, block: tuple[int, ...] = ()) -> Prediction:
    """_predict_grid's time, but where the grid is one full round of what the SMs hold and a
    second round that holds fewer blocks an SM (ceil(second / SMs)): there the compute side
    (issue, load/store, walked constants) is the two rounds', each predicted with its share
    of the work and its own warps, added. The second round runs with the warps it has (one
    block of 4 warps an SM waits as one warp a scheduler does), not at the first's pace;
    the memory side stays the whole grid's (other SMs take a thin round's bandwidth). Blocks
    that start together finish together, so a second round starts in step; from the third
    on they have drifted apart and the last is spread over the SMs' wave, as _work_seconds
    takes it (docs/model.md item 44). `slow_walk`: a walked table's floor at any blocks."""

    def at(blocks: int) -> Prediction:
        share = blocks / grid_blocks if grid_blocks else 1.0
        return _predict_grid(dev, occ, blocks, flops * share, dram_bytes * share,
                             registers_per_thread, loop_mix=loop_mix, traffic=traffic,
                             write_share=write_share, grid=grid, slow_walk=slow_walk,
                             block=block)

    whole = at(grid_blocks)
    slots = max(occ.active_blocks_per_sm, 1) * dev.sm_count
    second = grid_blocks - slots
    if not 0 < second < slots or -(-second // dev.sm_count) >= occ.active_blocks_per_sm:
        return whole
    first, thin = at(slots), at(second)
    ms = dict(whole.roofs_ms)
    for k in COMPUTE_ROOFS:  # the thin round's uneven shares of the SMs charged to it
        ms[k] = first.roofs_ms[k] + thin.roofs_ms[k] / spread_efficiency(second, dev.sm_count)
    seconds, _ = _work_seconds(dev, occ, grid_blocks, {k: v / 1e3 for k, v in ms.items()},
                               spread=False)
    bound = max(ms, key=ms.__getitem__)
    hiding = whole.hiding
    if bound in ("fp32", "lsu"):  # the same issue in more time
        hiding = (whole.hiding if whole.bound == bound else 1.0) * whole.roofs_ms[bound] / ms[bound]
    pace = first.roofs_ms["fp32"] * grid_blocks / slots  # the whole grid at the first's pace
    return replace(whole, predicted_ms=seconds * 1e3 + LAUNCH_OVERHEAD_MS, bound=bound,
                   roofs_ms=ms, hiding=hiding,
                   wave_efficiency=min(1.0, pace / ms["fp32"]) if ms["fp32"] else 1.0)


def _predict_grid(dev: Device, occ: OccupancyResult, grid_blocks: int, flops: float,
                  dram_bytes: float, registers_per_thread: int,
                  loop_mix: tuple[tuple[str, int], ...] | None = None,
                  traffic: Traffic | None = None,
                  write_share: float | None = None, grid: tuple[int, ...] = (),
                  slow_walk: bool = False, block: tuple[int, ...] = ()) -> Prediction:
    """Predicted time of a user's kernel from its declared work (FLOPs, DRAM bytes), its
    occupancy, the instruction mix of its hottest SASS loop, and what one of its warps
    does on the PTX (ptxsim: shared wavefronts with bank conflicts, global lines).

    The traffic is per warp (a warp's whole run) or per iteration of the hottest loop;
    the grid's warps, or the declared FLOPs over the FLOPs of one iteration, say how many
    times it happens. The SASS mix gives the issue slots the same way (the FLOPs fix how
    many times the loop's FFMAs run). Without either, the FP32 and DRAM roofs alone.
    Latency hiding and the combination of roofs are the same Little's-law terms as the
    hand counts' (tune/handcounts.predict); what a warp waits for is the SASS's lone warp
    (warp_wait_factor), or without it ~1 FMA in flight per 32 registers."""
    warps_per_block = max(occ.warps_per_block, 1)
    mix = unit_mix(dict(loop_mix) if loop_mix else {}, traffic)
    fma_time = flops / (dev.fp32_gflops * 1e9 * FP32_EFFICIENCY) if flops else 0.0
    runs, fp32, issue, lsu = _sass_work(dev, grid_blocks, occ, flops, fma_time, mix)
    units = _traffic_units(traffic, grid_blocks, warps_per_block, flops)
    scattered = merging = 0.0
    if units and traffic is not None:
        lsu, ptx_issue, scattered = _ptx_work(dev, traffic, units)
        issue = issue if runs else ptx_issue
        if dram_bytes:
            dram_bytes += reread_miss_bytes(dev, occ, grid_blocks, traffic, units) \
                + rewrite_miss_bytes(dev, occ, grid_blocks, traffic, units) \
                + read_back_bytes(dev, occ, grid_blocks, traffic, units)
            merging = store_merge_bytes(dev, occ, grid_blocks, traffic, units)
    # the hot SASS loop's busiest pipe over its instructions (compares take the ALU pipe 2
    # clocks each); as a ratio it scales the PTX's issue count too, where no FLOPs count runs
    issue *= pipe_factor(dev, mix)
    rate = dev.dram_bandwidth_gb_s * 1e9 * dram_efficiency(write_share)
    dram = (dram_bytes / rate * (1 + REQUEST_OVERHEAD_BYTES / 128.0)) if dram_bytes else 0.0
    # the merges at the copy's rate, as bench/blockrow/fit.py measured them
    merged = dram + merging / (dev.dram_bandwidth_gb_s * 1e9 * DRAM_EFFICIENCY) \
        * (1 + REQUEST_OVERHEAD_BYTES / 128.0)
    blocks_per_sm = occ.resident_blocks(grid_blocks, dev.sm_count)
    warps = max(blocks_per_sm * warps_per_block, 1)
    # Where the SASS was read, its lone warp's wait says what the warps must hide (shared
    # loads and arithmetic results; warp_wait_factor); else ~1 FMA in flight per 32 registers.
    ilp = max(1, registers_per_thread // 32)
    fma_hiding = 1.0 if "warp_wait" in mix else \
        min(1.0, warps * ilp / (SCHEDULERS_PER_SM * FMA_LATENCY_CLOCKS))
    mem_hiding = _work_mem_hiding(dev, occ, warps, registers_per_thread, mix, traffic, units,
                                  dram_reads_per_warp(traffic, units, dram_bytes, write_share), block)
    per_batch, again = 1.0, 0.0
    if traffic is not None and traffic.phases:  # only such a unit waits per batch
        raw = dict(loop_mix) if loop_mix else {}  # the SASS's batches, before unit_mix scales
        per_batch = _loads_per_batch(raw, traffic) if raw.get("ldg") else 1.0
        again = l2_reread_share(dev, occ, grid_blocks, traffic)
    elif traffic is not None:  # a tiled loop's tiles that a block resident beside it loaded
        again = panel_l2_share(dev, occ, grid, traffic)
    stall = _tiled_loop_stall(mix, traffic, units, warps_per_block, blocks_per_sm, per_batch,
                              again)
    busy = min(dev.sm_count, grid_blocks) / dev.sm_count
    waits = warp_wait_factor(mix, warps)
    # an SM with fewer warps than LONE_WARP_WAVEFRONT_CLOCKS cannot keep its LSU busy
    lone = max(1.0, LONE_WARP_WAVEFRONT_CLOCKS / warps)
    roofs = {"fp32": max(fp32, issue) * stall * waits / busy / fma_hiding,
             "lsu": lsu * lone * stall / busy / fma_hiding,
             # the warps' loads in flight bound the bytes, the L2 merging stores' partial
             # sectors (reuse.store_merge_bytes) the throughput: the slower of the two
             "l2": 0.0, "dram": max(dram / mem_hiding, merged),
             "scatter": scattered,
             "latency": _warp_path(dev, occ, grid_blocks, mix, traffic),
             "atomics": contended_atomic_seconds(traffic, units),
             # its reads spread over the SMs the grid keeps busy, as the issue side's are
             "constant": constant_walk_seconds(dev, mix, runs, blocks_per_sm, warps, slow_walk) / busy}
    roofs["blocks"] = block_launch_seconds(dev, grid_blocks)
    seconds, wave_eff = _work_seconds(dev, occ, grid_blocks, roofs)
    bound = max(roofs, key=lambda r: roofs[r])
    return Prediction(seconds * 1e3 + LAUNCH_OVERHEAD_MS, bound,
                      {r: v * 1e3 for r, v in roofs.items()},
                      fma_hiding / (waits if bound == "fp32" else 1.0) if bound in ("fp32", "lsu")
                      else max(roofs["fp32"], roofs["lsu"]) / roofs["constant"]
                      if bound == "constant" else mem_hiding, wave_eff,
                      dram_bytes, 0.0, flops / dram_bytes if dram_bytes else 0.0)


def unit_mix(mix: dict[str, int], traffic: Traffic | None) -> dict[str, int]:
    """The SASS loop's mix per iteration of ptxsim's unit. The static body counts each
    instruction once, but the FFMA loops nested in it (its `inner_*` counts) run several
    times per iteration: SGEMM_CUDA's 2-D blocktiling at BK = 32 keeps its k loop rolled
    inside the tile loop (ptxas unrolls it 4x: 128 of the tile's 1024 FFMAs), and counted
    once, the tile's 24 loads, their stores, 2 barriers and ~200 address instructions came
    every 128 FFMAs instead of every 1024 (2.8 issue slots per FFMA, not 1.4). Where the
    unit is an iteration of a loop (a cut run), its FFMAs say how often they run: (unit
    FFMAs - FFMAs outside them) / their FFMAs. Unchanged without one (a whole run, none)."""
    inner = work_ffma(mix, "inner_")
    if not inner or traffic is None or traffic.complete or not traffic.ffma:
        return mix
    trips = (traffic.ffma - (work_ffma(mix) - inner)) / inner
    if trips <= 1:
        return mix
    return {**mix, **{k: round(mix.get(k, 0) + (trips - 1) * mix.get(f"inner_{k}", 0))
                      for k in COUNTED_KEYS if k in mix}}


def _sass_work(dev: Device, grid_blocks: int, occ: OccupancyResult, flops: float,
               fma_time: float, mix: dict[str, int]) -> tuple[float, float, float, float]:
    """The issue side from the SASS of the hottest loop: how many times it runs warp-wide
    (the declared FLOPs over its FFMAs, on the lanes its warps have: a block of 8 threads
    is one warp of 8, one of 48 a warp of 32 and one of 16; a straight-line kernel once a
    warp; else 0), and the FP32, issue and
    load/store seconds of those runs. FP32 is at least `fma_time`, the declared FLOPs at
    the sustained peak; the others are 0 where the loop does not run."""
    warps_per_block = max(occ.warps_per_block, 1)
    lanes = max(1, min(dev.warp_size, occ.threads_per_block / warps_per_block))
    clock = dev.boost_clock_mhz * 1e6
    sms = dev.sm_count
    fp32 = fma_time
    issue = lsu = 0.0
    runs = 0.0
    if flops and work_ffma(mix):
        runs = flops / 2 / lanes / work_ffma(mix)  # executions of the loop, warp-wide
    elif mix and not mix.get("loop"):
        runs = float(grid_blocks * warps_per_block)  # straight-line: once a warp
    if runs:
        fp32 = max(fp32, runs * mix["fp32"] * dev.warp_size * 2
                   / (dev.fp32_gflops * 1e9 * FP32_EFFICIENCY))
        issue = runs * mix["total"] / (sms * SCHEDULERS_PER_SM * clock)
        wavefronts = (mix["lds_wavefronts"] + mix["sts_wavefronts"]
                      + GLOBAL_LOAD_COST * mix["ldg"] + mix["stg"] + BARRIER_COST * mix["bar"])
        lsu = runs * wavefronts / (sms * clock * LSU_WAVEFRONTS_PER_CLOCK)
    return runs, fp32, issue, lsu


def work_ffma(mix: Mapping[str, int], prefix: str = "") -> int:
    """The FFMAs of the loop that do its multiply-adds: all of them less those of the IEEE
    divisions it holds (sass_loops.DIVISION_FFMAS each). The declared FLOPs count the
    kernel's work, not how the compiler divides: a loop with a division per iteration would
    otherwise look 6x shorter per FLOP than it is (kernel_tuner's pnpoly computing its
    slopes: 48 FFMAs per 8 edges, 8 of them its work). A loop whose only FFMAs are a
    division's has none: it gets no SASS run count, and ptxsim's counts price it. `prefix`
    "inner_": of the FFMA loops nested in the hottest one."""
    return max(0, mix.get(f"{prefix}ffma", 0) - mix.get(f"{prefix}div_ffma", 0))


def _traffic_units(traffic: Traffic | None, grid_blocks: int, warps_per_block: int,
                   flops: float) -> float:
    """How many times the warp's traffic happens in the grid: once a warp for a whole run,
    the declared FLOPs over an iteration's FLOPs for a loop iteration; 0 where neither
    says (no traffic, or an iteration without declared FLOPs)."""
    if traffic is None:
        return 0.0
    if traffic.complete:
        return float(grid_blocks * warps_per_block)
    if flops and traffic.flops:
        return flops / traffic.flops
    return 0.0


def _ptx_work(dev: Device, t: Traffic, units: float) -> tuple[float, float, float]:
    """The load/store, issue and scattered-store seconds of `units` times the warp's traffic
    on the PTX: shared wavefronts with their conflicts, one wavefront per global line,
    barriers; its warp instructions; its partial-sector stores."""
    clock = dev.boost_clock_mhz * 1e6
    sms = dev.sm_count
    wavefronts = (t.shared_wavefronts + GLOBAL_LINE_COST * t.global_load_lines
                  + t.global_store_lines + BARRIER_COST * t.barriers)
    lsu = units * wavefronts / (sms * clock * LSU_WAVEFRONTS_PER_CLOCK)
    issue = units * t.steps / (sms * SCHEDULERS_PER_SM * clock)
    scattered = units * t.partial_store_sectors / (
        sms * dev.boost_clock_mhz * 1e6 * PARTIAL_STORE_SECTORS_PER_CLOCK_PER_SM)
    return lsu, issue, scattered


def _work_mem_hiding(dev: Device, occ: OccupancyResult, warps: int, registers_per_thread: int,
                     mix: dict[str, int], traffic: Traffic | None, units: float,
                     dram_reads: float | None = None, block: tuple[int, ...] = ()) -> float:
    """How much of the DRAM latency the SM's resident `warps` hide (1 - e^-x, Little's law).
    Bytes a warp has in flight: the global loads its hot code issues before it needs
    them (a straight-line tile load issues them all), else one line per 32 registers;
    at most the bytes DRAM serves the warp over its run (`dram_reads`,
    inflight.dram_reads_per_warp); capped by the L1 lines they hold. The latency is longer
    where a 2-D `block` reads a short run of each row (inflight.row_run_latency_factor)."""
    per_warp_bytes = 128.0 * (mix["ldg"] if mix.get("ldg") else max(1, registers_per_thread // 32))
    if traffic is not None and traffic.global_loads and (units or mix.get("ldg")):
        # a warp has in flight the loads it issues before it first needs one of them:
        # the SASS's batches (the compiler may keep a tile load to a few registers); the
        # bytes of one warp load are the run's, whether or not it counts the run's units
        # (a float4 load is 512 B of a warp, not 128)
        per_warp_bytes = traffic.load_bytes / traffic.global_loads * _loads_per_batch(mix, traffic)
    if dram_reads is not None:
        per_warp_bytes = min(per_warp_bytes, dram_reads)
    lines, useful = 1.0, 128.0
    if traffic is not None and traffic.global_loads:
        lines = traffic.global_load_lines / traffic.global_loads
        useful = traffic.load_bytes / traffic.global_loads
    in_flight = loads_in_flight(warps * per_warp_bytes, l1_for_loads(dev, occ), lines, useful)
    need_dram = (dev.dram_bandwidth_gb_s * 1e9 / dev.sm_count / (dev.boost_clock_mhz * 1e6)
                 * WORK_DRAM_LATENCY_CLOCKS * row_run_latency_factor(block, traffic))
    return 1 - math.exp(-in_flight / need_dram)


def _tiled_loop_stall(mix: dict[str, int], traffic: Traffic | None, units: float,
                      warps_per_block: int, blocks_per_sm: int, per_batch: float = 1.0,
                      again: float = 0.0) -> float:
    """The factor the issue-side roofs grow by where a loop loads from global memory and
    waits at a barrier before using the data (the tiled pattern); 1 elsewhere.

    Such a loop exposes the load latency once per iteration, less the time the block's
    warps spend issuing the instructions between a load and its first use (a prefetch into
    registers for the next tile hides it all), unless the SM's other resident blocks
    compute meanwhile: an iteration of one block takes its compute plus what is exposed,
    and B blocks overlap B computes with it (busy_share). A unit that is the run so far
    across several loops (ptxsim's `phases`) exposes a latency per batch of its loads
    (`per_batch`: the SASS's loads a wait), at the L2's for the share of its lines that
    load again a line L2 still holds (`again`: l2_reread_share), DRAM's for the others;
    any other unit waits at the L2's for the share of its tiles that a block resident
    beside it loaded first (`again`: panel_l2_share, a GEMM's A and B panels)."""
    inner = bool(units and traffic is not None and not traffic.complete
                 and not (traffic.global_loads and traffic.barriers))
    if not (mix.get("loop") and mix.get("ldg") and mix.get("bar") and not inner):
        return 1.0
    iteration = max(issue_slots(mix) * warps_per_block / SCHEDULERS_PER_SM,
                    (mix["lds_wavefronts"] + mix["sts_wavefronts"]) * warps_per_block, 1.0)
    if units and traffic is not None and not traffic.complete:
        iteration = max(traffic.steps * warps_per_block / SCHEDULERS_PER_SM,
                        traffic.shared_wavefronts * warps_per_block, 1.0)
    # the instructions that run, from the PTX run (a static count also sees branches
    # that never run, such as a kernel's scalar fallback for odd sizes), else the SASS
    covered = traffic.cover if units and traffic is not None and traffic.covered_loads \
        else mix.get("ldg_cover", 0)
    cover = covered * warps_per_block / SCHEDULERS_PER_SM
    # at the L2's latency for the share `again` of the loads L2 holds, DRAM's for the others
    latency = DRAM_LATENCY_CLOCKS * (1 - again) + L2_LATENCY_CLOCKS * again
    trips = 1.0
    if units and traffic is not None and traffic.phases and traffic.global_loads:
        # a unit that is the run so far across several loops (ptxsim's phases) waits once
        # per batch of its loads (the SASS's), not once
        trips = max(1.0, traffic.global_loads / max(per_batch, 1.0))
    exposed = trips * max(0.0, latency - cover)
    return 1 / busy_share(blocks_per_sm, iteration, exposed)


def spread_efficiency(blocks: int, sms: int) -> float:
    """The average SM's share of `blocks` over the busiest one's (grid / SMs over
    ceil(grid / SMs)); 1 under one block an SM (_predict_grid's `busy` charges that)."""
    return blocks / sms / -(-blocks // sms) if blocks > sms else 1.0


def _work_seconds(dev: Device, occ: OccupancyResult, grid_blocks: int,
                  roofs: dict[str, float], spread: bool = True) -> tuple[float, float]:
    """The kernel's seconds from its roofs, and the tail's efficiency (1 where there is none).
    The issue side's two roofs overlap (ISSUE_LSU_OVERLAP), a walked constant table's misses
    are a floor under them (tune/constwalk.py), the memory side is its largest roof, and the
    two sides overlap (OVERLAP); the block scheduler and one warp's path are floors.
    `spread`: the SMs' uneven share of the blocks is charged here (predict_work's split of
    a thin second round charges its own)."""
    sms = dev.sm_count
    hi_c, lo_c = max(roofs["fp32"], roofs["lsu"]), min(roofs["fp32"], roofs["lsu"])
    compute = max(hi_c + ISSUE_LSU_OVERLAP * lo_c * (lo_c / hi_c if hi_c else 0.0),
                  roofs["constant"])
    memory = max(roofs["dram"], roofs["scatter"], roofs["atomics"])
    if grid_blocks <= occ.active_blocks_per_sm * sms:
        # one round: every warp's path runs beside the traffic of all the others (their
        # round trips queue behind it), the same lo^2/hi overlap as between the sides
        hi_m, lo_m = max(memory, roofs["latency"]), min(memory, roofs["latency"])
        memory = hi_m + OVERLAP * lo_m * (lo_m / hi_m if hi_m else 0.0)
    hi, lo = max(compute, memory), min(compute, memory)
    seconds = hi + OVERLAP * lo * (lo / hi if hi else 0.0)
    # The tail: blocks are dealt to SMs evenly, so some SMs run ceil(grid / SMs) blocks
    # while the average is grid / SMs. On the issue side each SM works through its own
    # blocks and the kernel ends with the busiest one; on the memory side the others take
    # its share of the bandwidth. (A grid under one block per SM is _predict_grid's `busy`.)
    wave_eff = spread_efficiency(grid_blocks, sms) if spread and compute >= memory else 1.0
    seconds /= wave_eff
    return max(seconds, roofs["blocks"], roofs["latency"]), wave_eff

