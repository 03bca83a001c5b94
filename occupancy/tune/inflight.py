"""What a warp keeps in flight toward memory, and what caps it (tune/model.py's Little's law).

A warp hides the DRAM latency with the bytes it has requested and not yet used. Two things
bound them beyond what its code issues: the L1 lines its loads hold until the data returns
(`l1_for_loads`, `loads_in_flight`), and the bytes DRAM serves it at all
(`dram_reads_per_warp`): a load that another warp's request already brought into L2 or L1
keeps no DRAM request of its own in flight.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

from occupancy.core.device import Device
from occupancy.core.solver import OccupancyResult

SECTOR_BYTES = 32  # what a store sector holds

if TYPE_CHECKING:
    from occupancy.tune.ptx_counters import Traffic


def l1_for_loads(dev: Device, occ: OccupancyResult) -> int | None:
    """Bytes of L1 data cache an SM keeps beside shared memory: the unified array less the
    shared-memory size the driver configures for the resident blocks (the smallest supported
    size that holds them, or the carveout asked for). Loads in flight hold their lines in it
    until the data returns, so it caps the bytes a SM has in flight. Measured on the H200
    (bench/results/h200-transpose-smem): the same transpose with unused dynamic shared memory
    that moves the SM to the 228 KB size (28 KB of L1 left), at the same resident warps,
    runs 3-5% slower on aligned rows and 12-16% slower where each warp load spans two
    lines. None where the profile has no unified array (before CC 7.0)."""
    if not dev.l1_shared_memory_bytes:
        return None
    used = max(occ.active_blocks_per_sm, 1) * occ.allocated_shared_memory_per_block
    config = next((s for s in dev.shared_memory_carveout_bytes if s >= used),
                  dev.shared_memory_per_sm_bytes)
    if occ.carveout is not None:
        config = max(config, occ.shared_memory_per_sm_bytes)
    return max(dev.l1_shared_memory_bytes - config, 0)


def loads_in_flight(in_flight: float, l1: int | None, lines_per_load: float,
                    useful_bytes_per_load: float) -> float:
    """Useful bytes in flight per SM, capped by the L1 lines they hold: a warp load holds
    every 128-B line it touches for its useful bytes (a misaligned row touches two)."""
    if l1 is None:
        return in_flight
    cap = l1 * useful_bytes_per_load / (max(lines_per_load, 1.0) * 128.0)
    return max(min(in_flight, cap), 1.0)


def dram_reads_per_warp(traffic: Traffic | None, units: float, dram_bytes: float,
                       write_share: float | None) -> float | None:
    """The DRAM bytes a warp reads over its whole run, where ptxsim followed it to its end
    (`units` is then the grid's warps): the declared bytes (with the re-reads L2 misses)
    less the share written (unknown: the copy's half), or less the bytes the warp stores,
    whichever leaves more (an array read and written in place counts as written whole in
    the share: `x = a x + y` reads 2/3 of its bytes, not 1/2). None for a run measured per
    loop iteration, whose warps read their tiles from L2 again and again (a GEMM).

    A warp cannot keep more DRAM bytes in flight than it reads from DRAM. A 5-point
    stencil's warp issues its 4 loads together (512 B), but every line of the grid is
    loaded by the warps of 3 rows and fetched from DRAM once: 128 B a warp. Counted as 512,
    the model had bench/stencil's 5-point kernel hide the DRAM latency 4x better than a copy
    through the same indexing and 35-40% too fast, where it runs slower than the copy
    (bench/results/h200-stencil; docs/model.md item 49)."""
    if traffic is None or not traffic.complete or not units or not dram_bytes \
            or not traffic.global_loads:
        return None  # no run followed to its end, or nothing loaded: nothing to cap
    per_warp = dram_bytes / units
    by_share = per_warp * (1 - (0.5 if write_share is None else write_share))
    # never under one of its loads: a warp that loads waits for at least that (a table
    # lookup reads next to nothing from DRAM, a fill of stores nothing: without the floor
    # their hiding went to 0 and the DRAM roof up to 3,900x)
    return max(by_share, per_warp - traffic.global_store_sectors * SECTOR_BYTES,
               traffic.load_bytes / traffic.global_loads)


# A DRAM row (an HBM page, 1 KB) that a request opens serves the requests after it sooner
# than one it must open: where a 2-D block's rows read a short run of each array row, more
# of its requests open a row, and each waits longer (HBM3's precharge and activate, ~28 ns,
# ~55 clocks at 1,980 MHz, against the ~250 ns of a load). Set on this project's own
# stencil record (bench/results/h200-stencil, its copy through the stencil's indexing,
# every shape of 256-1,024 threads at n = 8,192 and 12,288; docs/model.md item 51):
# blocks one warp wide (128 B of each row) 5-9% behind the widest of the same threads,
# two warps wide 1-3%, with the same DRAM, L1 and L2 bytes by Nsight Compute. Checked
# after on bench/results/h200-rowrun (float2 and float4 copies, 4 loads a thread, blocks
# half a warp wide: a 64-B run costs twice a 128-B one's rows).
ROW_MISS_LATENCY = 0.12  # the latency's growth where a request opens a row for 128 B
ROW_BYTES = 1024  # a run of a page's bytes opens the row once: the floor of the rows opened
REQUEST_BYTES = 128  # a warp's request of floats
SHORTEST_RUN_BYTES = 64  # the shortest run measured (a block 16 floats wide): not extrapolated


def row_run_bytes(block: tuple[int, ...], traffic: Traffic | None,
                  least: float = SHORTEST_RUN_BYTES) -> float | None:
    """The bytes a 2-D block reads of each array row: its x threads times the bytes a lane
    loads (the x index walking the row, as a 2-D block's does: a kernel that flattens a 2-D
    block's index into one contiguous run is not told apart), at least `least`.
    None where that is not known or not measured: a 1-D block (the launch does not say in
    which order its warps walk a row: llm.c's softmaxes give each warp its own), a loop's
    iteration, no loads, and loads whose lanes do not walk a row (over 4x the lines their
    bytes fill: a column walk, whose lines the load/store roof and the sectors price)."""
    if traffic is None or not traffic.complete or not traffic.global_loads \
            or len(block) < 2 or math.prod(block[1:]) <= 1:
        return None
    per_load = traffic.load_bytes / traffic.global_loads
    if per_load <= 0 or traffic.global_load_lines / traffic.global_loads \
            > 4 * max(1.0, per_load / REQUEST_BYTES):
        return None
    return max(block[0] * per_load / max(traffic.lanes, 1), least)


def row_run_latency_factor(block: tuple[int, ...], traffic: Traffic | None) -> float:
    """How much longer a DRAM request waits where a 2-D block reads a short run of each
    array row (`row_run_bytes`): 1 + ROW_MISS_LATENCY x (the rows opened a 128-B request,
    128 B over the run, less a page-long run's 1/8): 128 B for 32 floats, 64 B for 16 (each
    costs twice the rows a byte). Where ptxsim followed the warp to its end (a kernel of one
    pass of loads: a stencil, a copy, a transpose), since that is what was measured; else 1."""
    run = row_run_bytes(block, traffic)
    if run is None:
        return 1.0  # not a 2-D block's rows, or not measured
    return 1.0 + ROW_MISS_LATENCY * max(0.0, REQUEST_BYTES / run - REQUEST_BYTES / ROW_BYTES)
