"""One warp of a built kernel run through its PTX (ptxsim), cached beside the build."""

from __future__ import annotations

import hashlib
import json
import math
import os
from collections.abc import Mapping, Sequence
from dataclasses import asdict, replace
from functools import cache
from pathlib import Path
from typing import Any

from occupancy.build.builds import build_ptx
from occupancy.build.cache import _write_atomic, cache_dir
from occupancy.build.compilers import Build
from occupancy.core.errors import OccupancyError
from occupancy.core.version import __version__
from occupancy.tune.ptxsim import Traffic


@cache
def _emulator_hash() -> str:
    """Cached traffic is only as good as the code that counted it: ptxsim (every tune/ptx*.py
    module of it) and banks."""
    package = Path(__file__).resolve().parent.parent
    emulator = sorted(p.relative_to(package).as_posix() for p in package.glob("tune/ptx*.py"))
    return hashlib.sha256(b"".join((package / f).read_bytes()
                                   for f in (*emulator, "tune/traffic.py", "core/banks.py"))
                          ).hexdigest()[:16]


def merged_across(words: Mapping[str, float], scalar_share: float | None) -> bool:
    """Whether ptxas merged the scalar shared loads that step one element an iteration (`As[row
    * BK + k]` over k) across the iterations it unrolled, by the SASS loop's share of words
    moved by scalar LDS (`scalar_share`: sass_loops' `lds_scalar` over `lds_wavefronts`, of
    the loop the unroll is read from; None: no SASS read) against the shares ptxsim's first
    run gives with those loads merged and kept scalar (`words`: Warp.lds_words): the nearer
    wins, a tie merges. SGEMM_CUDA's 2-D kernel at BM = BN = 128, BK = 16, TM = 8, TN = 4:
    ptxas unrolled the k loop by 4 and kept A's 8 loads scalar (32 LDS beside 4 LDS.128, a
    share of 2/3); merged, ptxsim had counted 71.3 M shared wavefronts where Nsight Compute
    counts 105.6 M (bench/results/h200-sgemm2d-ncu). At BM = 128, BN = 64, BK = 32 it merged
    them (no scalar LDS, a share of 0). Without a SASS read or stepping loads: merged."""
    every, stream = words.get("all", 0.0), words.get("stream", 0.0)
    if scalar_share is None or stream <= 0 or every <= 0:
        return True
    plain = words.get("plain", 0.0)
    return abs(scalar_share - plain / every) <= abs(scalar_share - (plain + stream) / every)


def warp_traffic(build: Build, entry: str, args: Sequence[float | int], block: Sequence[int],
                 grid: Sequence[int], banks: int, whole: bool = False,
                 sass_ffma: int = 0, merge: tuple[bool, ...] = (True, True),
                 scalar_share: float | None = None) -> Traffic | None:
    """One warp of a kernel of this build run on its PTX (ptxsim), with the launch's
    argument values; cached beside the build by the PTX, the launch and the emulator's
    code. None where there is no PTX or the emulator cannot follow it. `sass_ffma`: the
    FFMAs of the hottest SASS loop that do its work (model.work_ffma: a division's
    refinement is not counted); where that body holds several iterations of the PTX
    loop, ptxas unrolled it, and the warp is run again with that unroll (merging the scalar
    shared loads that step across iterations where ptxas did: `scalar_share`, merged_across).
    `merge`: whether the SASS has wide shared (loads, stores) at all (sass_loops' `wide_lds`,
    `wide_sts`): where ptxas merged none, ptxsim merges none."""
    from occupancy.tune.ptxsim import WARP, PtxError, Traffic, block_sample, run_warp

    try:
        ptx = build_ptx(build)
    except OccupancyError:
        return None
    if not ptx:
        return None
    blob = json.dumps([__version__, _emulator_hash(), entry, list(args), list(block), list(grid),
                       banks, whole, sass_ffma, list(merge), scalar_share,
                       hashlib.sha256(ptx.encode()).hexdigest()])
    path = cache_dir() / f"traffic-{hashlib.sha256(blob.encode()).hexdigest()}.json"
    try:
        return Traffic(**json.loads(path.read_text(encoding="utf-8")))
    except (OSError, ValueError, TypeError):
        pass  # not cached yet, or unreadable: run it
    first_log: list[tuple[int, bool]] = []
    last_log: list[tuple[int, bool]] = []
    first_bytes: dict[int, int] = {}
    words: dict[str, float] = {}
    try:
        t = run_warp(ptx, entry, args, block, grid, banks, whole=whole, atomic_log=first_log,
                     merge=merge, touched=first_bytes, lds_words=words)
        unroll = max(1, round(sass_ffma / t.inner_ffma)) if t.inner_ffma and merge[0] else 1
        if unroll >= 2:
            merge = (*merge[:2], merged_across(words, scalar_share))
            first_log.clear()
            first_bytes.clear()
            t = run_warp(ptx, entry, args, block, grid, banks, whole=whole, unroll=unroll,
                         atomic_log=first_log, merge=merge, touched=first_bytes)
    except PtxError:
        return None  # the model goes on without the warp's addresses
    last_warp = (math.prod(block) - 1) // WARP
    first = t
    second: Traffic | None = None
    # the second warp of the sample: the block's last, or where a block is one warp, the
    # next block's (a second row); the bytes both touch (a layernorm's weights, which every
    # warp reads) weigh nothing in the second's reuse distances, nor, run again, in the
    # first's where its whole run re-reads
    other = (last_warp, False) if last_warp else (0, True) if grid and grid[0] >= 2 else None
    if other is not None:
        try:
            second_bytes: dict[int, int] = {}
            second = run_warp(ptx, entry, args, block, grid, banks, other[0], whole, unroll,
                              atomic_log=last_log if last_warp else None, next_block=other[1],
                              merge=merge, foreign=first_bytes, touched=second_bytes)
            both = sum((m & first_bytes.get(x, 0)).bit_count() for x, m in second_bytes.items())
            if first.complete and first.reread_lines and both:
                t = run_warp(ptx, entry, args, block, grid, banks, whole=whole, unroll=unroll,
                             merge=merge, foreign=second_bytes)
            t = replace(block_sample(t, second), shared_bytes=float(both))
        except PtxError:
            last_log.clear()  # warp 0 alone
    if t.global_stores:
        t = _store_ends(t, first, second, ptx, entry, args, block, grid, banks, whole, unroll,
                        merge)
    if first.global_loads and first.barriers and first_bytes:
        t = _panel_shares(t, first_bytes, ptx, entry, args, block, grid, banks, whole, unroll,
                          merge)
    # (a grid under 3 blocks a side has its middle block at 0: nothing to compare it with)
    if first.complete and (first_log or last_log) and any(g >= 3 for g in grid):
        t = _contended(t, ptx, entry, args, block, grid, banks, whole, unroll,
                       first_log, last_log, last_warp + 1, merge)
    _keep(path, t)
    return t


def _keep(path: Path, t: Traffic) -> None:
    """The warp's traffic cached at `path` (an unwritable cache only costs the next run)."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        _write_atomic(path.parent, path.name, json.dumps(asdict(t)).encode())
    except OSError:
        pass


# warps whose store ends stand for the rows' (their first: the sample's warp 0)
STORE_END_SAMPLE = 8


def _row_warps(warps: int) -> list[int]:
    """For j < STORE_END_SAMPLE, the warp of the block j after the middle one to run: where
    a warp walks a row (row = block x warps + warp), the rows these give fall on every
    residue mod 8 (a row's offset within a 32-B sector repeats every 8 rows of 4-byte
    elements) for any number of warps a block: the first of these choices that does, warp
    j (1 - warps) mod 8 (row j on, mod 8) where the block has it, warp 0 (an odd number of
    warps), j // 4 or j // 2 (2, 4 or 6 warps). Where a block walks a row, the block j on
    is the row, whichever warp."""
    n = STORE_END_SAMPLE
    picks = [[w if (w := j * (1 - warps) % 8) < warps else 0 for j in range(n)],
             [0] * n, [j // 4 % warps for j in range(n)], [j // 2 % warps for j in range(n)]]
    return max(picks, key=lambda p: len({(j * warps + w) % 8 for j, w in enumerate(p)}))


def _store_end_places(grid: Sequence[int], warps: int) -> list[tuple[int, int, int]]:
    """The (axis, block offset from the middle one, warp) of the warps _store_ends runs
    besides warp 0 of the middle block: along the grid's longest axis (rows on y are
    blocks on y), the blocks after the middle one, then those before it where the grid
    ends first; with one block, the block's other warps (rows of a warp each)."""
    if not grid:
        return []
    axis = max(range(len(grid)), key=lambda a: (grid[a], -a))
    g = grid[axis]
    middle = (g - 1) // 2
    offsets = list(range(1, g - middle))[:STORE_END_SAMPLE - 1]
    offsets += [-k for k in range(1, middle + 1)][:STORE_END_SAMPLE - 1 - len(offsets)]
    rows = _row_warps(warps)
    if not offsets:
        return [(axis, 0, w) for w in range(1, min(STORE_END_SAMPLE, warps))]
    return [(axis, k, rows[j + 1]) for j, k in enumerate(offsets)]


def _store_ends(t: Traffic, first: Traffic, second: Traffic | None, ptx: str, entry: str,
                args: Sequence[float | int], block: Sequence[int], grid: Sequence[int],
                banks: int, whole: bool, unroll: int, merge: tuple[bool, ...]) -> Traffic:
    """The sectors a warp's stores leave partly written (split_store_sectors,
    open_store_sectors) as the rows' mean, not the sampled rows': they depend on where a
    row starts within a 32-B sector, which the row's index sets (a row of 50,257 floats
    starts 4 B further into one than the row before: 7 rows in 8 off their sectors), and the
    middle block's warps may all start on one (warp 0's row, a multiple of 8 where a block
    holds 8+ rows). Warp 0 of the middle block and up to STORE_END_SAMPLE - 1 more
    (_store_end_places: rows on every offset mod 8 where a block or a warp walks a row
    indexed along the grid's longest axis, with 7+ blocks after the middle one; the
    sample's last warp too where fewer are). The first of them runs as a probe: where
    neither it nor the sample split a store, nothing changes. Per warp store, as the mean
    of the warps that ran the same unit (block_sample's test, less the FLOPs: warps of a
    block differ a little in their reductions)."""
    from occupancy.tune.ptxsim import WARP, PtxError, run_warp

    warps = max(1, -(-math.prod(block) // WARP))  # a partial last warp is a warp
    places = _store_end_places(grid, warps)
    samples = [first]
    # the sample's last warp fills in where fewer places exist, unless it is one of them
    # (the next block's warp 0 where a block is one warp; a one-block grid's last warp)
    seconds = {(0, 0, warps - 1)} if warps > 1 else {(0, 1, 0)}
    if second is not None and len(places) < STORE_END_SAMPLE - 1 \
            and not any((0 if k == 0 else a, k, w) in seconds for a, k, w in places):
        samples.append(second)
    for i, (axis, k, warp) in enumerate(places):
        if i == 1 and not any(x.split_store_sectors for x in (*samples, t)):
            return t  # the probe and the sample split nothing: rows on their sectors
        try:
            other = run_warp(ptx, entry, args, block, grid, banks, warp, whole, unroll,
                             next_block=k, merge=merge, along=axis)
        except PtxError:
            continue
        samples.append(other)
    same = [x for x in samples if x.global_stores and (x.complete, x.phases)
            == (first.complete, first.phases)]
    if not same or not any(x.split_store_sectors for x in (*same, t)):
        return t
    split = sum(x.split_store_sectors / x.global_stores for x in same) / len(same)
    opened = sum(x.open_store_sectors / x.global_stores for x in same) / len(same)
    return replace(t, split_store_sectors=split * t.global_stores,
                   open_store_sectors=opened * t.global_stores)


def _panel_shares(t: Traffic, first_bytes: Mapping[int, int], ptx: str, entry: str,
                  args: Sequence[float | int], block: Sequence[int], grid: Sequence[int],
                  banks: int, whole: bool, unroll: int, merge: tuple[bool, ...]) -> Traffic:
    """`t` with `x_shared` and `y_shared`: the shares of the bytes warp 0 of the middle block
    touches that warp 0 of the last block of its row (along x) and of its column (along y)
    touch too: a GEMM's A panel, which every block of a row loads, and its B panel, which
    every block of a column does (a stencil's halo, shared with the next block only, is
    not). A byte both touch counts along x. reuse.panel_hit_share turns them into the share
    of the tile loads L2 holds (docs/model.md item 38)."""
    from occupancy.tune.ptxsim import PtxError, run_warp

    total = sum(m.bit_count() for m in first_bytes.values())
    shares, counted = [0.0, 0.0], dict(first_bytes)
    for axis in range(min(2, len(grid))):
        far = grid[axis] - 1 - (grid[axis] - 1) // 2  # the last block, from the middle one
        if far < 1 or not total:
            continue
        other: dict[int, int] = {}
        try:
            run_warp(ptx, entry, args, block, grid, banks, 0, whole, unroll, next_block=far,
                     merge=merge, touched=other, along=axis)
        except PtxError:
            continue
        both = {x: m & other.get(x, 0) for x, m in counted.items()}
        shares[axis] = sum(m.bit_count() for m in both.values()) / total
        counted = {x: m & ~both[x] for x, m in counted.items()}  # counted along x already
    return replace(t, x_shared=shares[0], y_shared=shares[1])


def _contended(t: Traffic, ptx: str, entry: str, args: Sequence[float | int],
               block: Sequence[int], grid: Sequence[int], banks: int, whole: bool, unroll: int,
               first_log: list[tuple[int, bool]], last_log: list[tuple[int, bool]],
               warps: int, merge: tuple[bool, ...]) -> Traffic:
    """The warp's atomics whose address every block shares: warp 0 of block 0 is run too,
    and an address both blocks update is one counter the whole grid updates (an address
    that moves with the block index is not). Per block, warp 0 counts once and the last
    warp stands for the others (the usual pattern: thread 0 adds the block's partial sum)."""
    from occupancy.tune.ptxsim import PtxError, run_warp

    other: list[tuple[int, bool]] = []
    try:
        run_warp(ptx, entry, args, block, grid, banks, 0, whole, unroll, first_block=True,
                 atomic_log=other, merge=merge)
    except PtxError:
        return t
    shared = {a for a, _ in other}

    def count(log: list[tuple[int, bool]], flt: bool) -> int:
        return sum(1 for a, f in log if a in shared and f == flt)

    per_block = {flt: count(first_log, flt) + (warps - 1) * count(last_log, flt)
                 for flt in (True, False)}
    addresses = {a for a, _ in first_log + last_log if a in shared}
    return replace(t, contended_float_atomics=per_block[True] / warps,
                   contended_int_atomics=per_block[False] / warps,
                   contended_addresses=float(len(addresses)))


def _job(args: tuple[Any, ...]) -> Traffic | None:
    build, entry, values, block, grid, banks, whole, sass_ffma, merge, share = args
    return warp_traffic(build, entry, values, block, grid, banks, whole, sass_ffma, merge, share)


PARALLEL_FROM = 16  # warp runs; fewer run here (a worker interpreter costs ~0.3 s to start)


def warp_traffic_many(jobs: Sequence[tuple[Any, ...] | None]) -> list[Traffic | None]:
    """warp_traffic for each job (None: no run), in worker processes when there are many
    not yet cached; a job whose worker dies gives None, as a PTX ptxsim cannot follow."""
    from occupancy.build.workers import run_jobs

    real = [(i, j) for i, j in enumerate(jobs) if j is not None]
    out: list[Traffic | None] = [None] * len(jobs)
    if len(real) < PARALLEL_FROM or (os.cpu_count() or 1) < 3:
        for i, j in real:
            out[i] = _job(j)
        return out
    got = run_jobs("occupancy.tune.traffic:_job", [j for _, j in real], timeout=300,
                   on_lost=lambda job, reason: None)
    for (i, _), t in zip(real, got, strict=True):
        out[i] = t
    return out
