"""Lines a warp loads again that L2 may still hold: a softmax's or a layernorm's next pass
over its row, the output it wrote and reads back (docs/model.md items 8, 21 and 32).

ptxsim counts, per warp, the lines it loads a second time and how far apart: the distinct
32-B sectors it touched in between (ptx_counters.Distinct), their sum and the sum of their
squares. Every resident warp of the GPU touches as much between its own two loads of a line,
so the GPU's footprint between them is that distance times the resident warps; how much of
the re-reads L2 keeps at that footprint was measured on the H200 with a kernel written here
that reads rows twice (bench/results/h200-l2reuse: 16-64 warps an SM, footprints of 8-192 MB,
the DRAM bytes Nsight Compute counted): all of them up to 0.62 of its L2, none from 1.06, in
proportion between. An LRU cache walked cyclically over more than it holds keeps nothing, and
the H200's starts losing them well before it is full. The re-reads of one warp are not all as
far apart (a softmax that reads its row, reads and writes it, then reads the output back
re-reads each line between one row and two apart, by where the line sits): the share is
taken at their mean distance less and plus its spread, half each.

A store that leaves a 32-B sector partly written for another warp to complete (the ends of
a warp's 128 B on a row off its lines, where the block's next warp writes the rest) costs a
read of the sector from DRAM when L2 lets it go before that warp comes: measured on a copy
written here in softmax 7's store pattern (bench/results/h200-blockrow/curve), the bytes read
back over the open sectors' grow with the blocks an SM holds. Merging a store's partial
sectors also costs L2 time beyond their bytes, whoever completes them, and more where another
warp does (store_merge_bytes; docs/model.md item 33)."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

from occupancy.core.device import Device
from occupancy.core.solver import OccupancyResult

if TYPE_CHECKING:
    from occupancy.tune.ptxsim import Traffic

# The footprint, as shares of the L2, up to which L2 keeps every re-read and from which it
# keeps none (bench/results/h200-l2reuse, fitted on its 39 read-twice points by
# bench/l2reuse/fit.py; the 39 points that read the output back were left to check it).
L2_KEPT_FROM = 0.62
L2_KEPT_TO = 1.06
# DRAM bytes read back per byte of the sectors a warp's stores leave open for another warp
# (ptxsim's open_store_sectors), by resident blocks an SM: Nsight Compute's DRAM reads of
# the strided copy less the warp-contiguous one's (whose warps close their own), over its
# open sectors, 2 a warp store on the 7 rows in 8 that start off their sectors
# (bench/blockrow/fit.py on bench/results/h200-blockrow/curve, blocks of 64-1,024 at their
# own occupancy, 64 warps an SM, no shared memory; item 32 divided by 2 a store on every
# row, 7/8 of these, as its sample counted them). Between the counts measured, linear in
# log2(blocks); outside, the nearest. With shared memory taking most of the L1 the same
# copy read back a third to a half of these at 8-16 blocks (the curve's other rows): not
# priced. The copy's rows start 4 B further into a sector each (one in eight on a sector
# boundary, leaving nothing open): ptxsim counts the open sectors as the rows' mean
# (traffic._store_ends), as the shares here were taken.
READ_BACK_BY_BLOCKS = ((2, 0.01), (4, 0.16), (8, 0.61), (16, 1.22), (32, 1.13))
# What L2 spends merging a store's partial sectors, as bytes of DRAM time at the model's copy
# bandwidth (bench/blockrow/fit.py on bench/results/h200-blockrow, Nsight Compute's time and
# bytes): each end of a warp store that also fills whole sectors (ptxsim's
# split_store_sectors: a row off its lines) costs about a sector more, however soon it is
# completed (the warp-contiguous copy of rows off their lines against rows on them, 35.5 and
# 36.5 at blocks of 1,024 and 128: the same bytes in 1.25x the time); one left open for
# another warp (open_store_sectors) costs more beyond the bytes it reads back, by resident
# blocks an SM (the strided copy against the warp-contiguous one, 64 warps an SM, no shared
# memory; with shared memory taking most of the L1, 27-83 at 2-16 blocks: not priced).
# Priced at the copy's rate (DRAM_EFFICIENCY), as fitted. Both counts are the rows' mean,
# as the fit counted them (7 rows in 8 off their sectors at 50,257 floats), where ptxsim's
# extra warps reach rows of every offset (traffic._store_ends: rows indexed by block or
# warp along the grid's longest axis; a warp that starts at its own offset in a shared
# row, as the blockrow copy's warp-contiguous layout does, is sampled at fewer offsets).
SPLIT_SECTOR_BYTES = 36.0
OPEN_SECTOR_BYTES_BY_BLOCKS = ((2, 22.0), (4, 49.0), (8, 89.0), (16, 123.0), (32, 103.0))


def l2_kept(dev: Device, footprint: float) -> float:
    """The share of re-reads L2 still holds with `footprint` bytes touched GPU-wide between a
    line's two loads: 1 up to L2_KEPT_FROM of the L2, 0 from L2_KEPT_TO, linear between."""
    c = dev.l2_cache_bytes
    if not c:
        return 0.0
    return min(1.0, max(0.0, (L2_KEPT_TO - footprint / c) / (L2_KEPT_TO - L2_KEPT_FROM)))


def _resident_warps(dev: Device, occ: OccupancyResult, grid_blocks: int) -> int:
    """The warps the GPU holds at once: every one of them touches as much between two loads
    of a line as the sampled warp does."""
    blocks = min(grid_blocks, max(occ.active_blocks_per_sm, 1) * dev.sm_count)
    return blocks * max(occ.warps_per_block, 1)


def far_kept(dev: Device, occ: OccupancyResult, grid_blocks: int,
             traffic: Traffic) -> tuple[float, float]:
    """(the warp's far re-read lines, the share of them L2 still holds): at the GPU's
    footprint for their mean distance as L2 sees it (ptxsim's far_l2) less and plus its
    spread, half each."""
    lines = traffic.far_rereads[0]
    if lines <= 0:
        return 0.0, 1.0
    resident = _resident_warps(dev, occ, grid_blocks)
    mean, spread = traffic.far_l2
    shared = traffic.shared_bytes  # what every warp touches, held once (ptxsim's sample)
    kept = (l2_kept(dev, (mean - spread) * resident + shared)
            + l2_kept(dev, (mean + spread) * resident + shared)) / 2
    return lines, kept


def reread_miss_bytes(dev: Device, occ: OccupancyResult, grid_blocks: int, traffic: Traffic,
                      units: float) -> float:
    """DRAM bytes of the lines a warp loads a second time that L2 no longer holds. The
    declared bytes count each byte once. A line loaded again right after the warp loaded it
    (ptxsim's near re-reads: a row that does not start on a 128-B line has each load straddle
    two lines) hits and is left out: counted, llm.c's online softmax at C = 50,257 read 2.9x
    its input from DRAM where Nsight Compute measured 2.0x (bench/results/h200-softmax-ncu).
    A miss brings the sectors the loads touch (ptxsim's far_reread_sectors), not whole
    lines: on a row off its lines a warp load of 128 B touches 5 sectors across two lines."""
    lines, kept = far_kept(dev, occ, grid_blocks, traffic)
    if lines <= 0:
        return 0.0
    return units * traffic.far_reread_sectors * 32.0 * (1 - kept)


def rewrite_miss_bytes(dev: Device, occ: OccupancyResult, grid_blocks: int,
                       traffic: Traffic, units: float) -> float:
    """DRAM bytes written a second time: sectors the warp stores again after L2 let the first
    store's go (the same law as a re-read, at their mean distance)."""
    if traffic.far_rewrite_sectors <= 0:
        return 0.0
    resident = _resident_warps(dev, occ, grid_blocks)
    footprint = traffic.far_rewrite_distance / traffic.far_rewrite_sectors * resident \
        + traffic.shared_bytes
    return units * traffic.far_rewrite_sectors * 32.0 * (1 - l2_kept(dev, footprint))


def by_blocks(pts: tuple[tuple[int, float], ...], blocks_per_sm: float) -> float:
    """A table by resident blocks an SM at `blocks_per_sm`: linear in log2(blocks) between the
    counts measured, the nearest outside them."""
    if blocks_per_sm <= pts[0][0]:
        return pts[0][1]
    for (b0, p0), (b1, p1) in zip(pts, pts[1:], strict=False):
        if blocks_per_sm <= b1:
            return p0 + (p1 - p0) * math.log2(blocks_per_sm / b0) / math.log2(b1 / b0)
    return pts[-1][1]


def read_back_bytes(dev: Device, occ: OccupancyResult, grid_blocks: int, traffic: Traffic,
                    units: float) -> float:
    """DRAM bytes read back for the sectors the warp's stores leave open for another warp."""
    if traffic.open_store_sectors <= 0:
        return 0.0
    blocks = occ.resident_blocks(grid_blocks, dev.sm_count)
    return units * traffic.open_store_sectors * 32.0 * by_blocks(READ_BACK_BY_BLOCKS, blocks)


def store_merge_bytes(dev: Device, occ: OccupancyResult, grid_blocks: int, traffic: Traffic,
                      units: float) -> float:
    """The DRAM time, as bytes, L2 spends merging the partial sectors of the warp's stores
    (SPLIT_SECTOR_BYTES, OPEN_SECTOR_BYTES_BY_BLOCKS): a cost of throughput, not bytes moved."""
    if traffic.split_store_sectors <= 0 and traffic.open_store_sectors <= 0:
        return 0.0
    blocks = occ.resident_blocks(grid_blocks, dev.sm_count)
    return units * (traffic.split_store_sectors * SPLIT_SECTOR_BYTES + traffic.open_store_sectors
                    * by_blocks(OPEN_SECTOR_BYTES_BY_BLOCKS, blocks))


def l2_reread_share(dev: Device, occ: OccupancyResult, grid_blocks: int,
                    traffic: Traffic) -> float:
    """The share of the warp's global load lines that load again a line L2 still holds: its
    near re-reads, and the share of its far ones L2 keeps (reread_miss_bytes' complement)."""
    if not traffic.global_load_lines:
        return 0.0
    lines, kept = far_kept(dev, occ, grid_blocks, traffic)
    return min(1.0, (traffic.near_reread_lines + lines * kept) / traffic.global_load_lines)


# L2 halves that each keep their own copy of a line: the A100's and H100's L2 is two
# partitions, each caching for the SMs next to it, so a line the SMs of both halves load
# misses once in each. On the H200 (compute capability 9.0) the tile loads' L2 hit rates of
# nine SGEMM points (bench/results/h200-sass-stalls; 50-89%) lie within 0.6-6.4 points of
# panel_hit_share's with 2 (mean 2.7) and 10.6 points off with 1 (24 at worst); other chips
# are not measured.
L2_PARTITIONS = {"8.0": 2, "9.0": 2}


def panel_hit_share(dev: Device, occ: OccupancyResult, grid: tuple[int, ...],
                    traffic: Traffic) -> float:
    """The share of a tiled loop's global loads that find their line in L2 because a block
    resident beside it loaded it first (docs/model.md item 38). The grid's blocks run in
    order, x fastest, so the C blocks resident at once span C / gx rows and min(C, gx)
    columns of the grid: a line that every block of a row loads (ptxsim's `x_shared`, a
    GEMM's A panel) misses once per row, one that every block of a column loads
    (`y_shared`, its B panel) once per column, any other line each time; each L2 partition
    (L2_PARTITIONS) misses on its own. A GEMM of 128 x 128 tiles at 8192^3 with one block
    an SM (C = 132 of a 64 x 64 grid): 3 rows and 64 columns, 25% misses, 49% hits with
    two partitions (Nsight Compute: 50%); three blocks an SM of 64 x 128 tiles, 77% (78%)."""
    if not grid or not (traffic.x_shared or traffic.y_shared):
        return 0.0
    gx = max(grid[0], 1)
    blocks, _, resident = _rounds(dev, occ, grid)
    rows, cols = min(blocks // gx or 1, math.ceil(resident / gx)), min(resident, gx)
    x, y = traffic.x_shared, traffic.y_shared
    miss = x * rows / resident + y * cols / resident + max(0.0, 1.0 - x - y)
    return max(0.0, 1.0 - min(1.0, L2_PARTITIONS.get(dev.compute_capability, 1) * miss))


def panel_l2_share(dev: Device, occ: OccupancyResult, grid: tuple[int, ...],
                   traffic: Traffic) -> float:
    """The share of a tiled loop's global loads that wait only L2's latency: the panel hits
    (panel_hit_share) of blocks that do not load a shared tile at the moment its other
    readers do. A hit on a line still on its way from DRAM waits as long as the miss
    (Nsight counts it as a hit). The first round of blocks starts together, so only the
    blocks dealt later count (1 - C / blocks); and one block an SM runs in step with its
    peers on the other SMs in every round (they start and end together), while B blocks an
    SM queue for it, which staggers all but one in B (1 - 1 / B). On the H200
    (bench/results/h200-l2panel) examples/sgemm's one-block point took 1.161-1.166 ms a
    round at 1, 2, 4 and 8 rounds, and its three-block point 1.417 ms at one round and
    1.365 ms at eight."""
    blocks, per_sm, resident = _rounds(dev, occ, grid)
    later = 1.0 - resident / blocks
    return panel_hit_share(dev, occ, grid, traffic) * later * (1.0 - 1.0 / per_sm)


def _rounds(dev: Device, occ: OccupancyResult, grid: tuple[int, ...]) -> tuple[int, int, int]:
    """(the grid's blocks, those an SM holds at once, those the GPU holds at once)."""
    blocks = max(math.prod(grid), 1) if grid else 1
    per_sm = occ.resident_blocks(blocks, dev.sm_count)
    return blocks, per_sm, min(blocks, per_sm * dev.sm_count)
