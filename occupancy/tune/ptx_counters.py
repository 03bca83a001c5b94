"""What a warp's run through its PTX counts (ptxsim): the counters, the Traffic of one unit
of work (the warp's whole run, or one iteration of its hottest loop), how the loops a run
went through become that unit, and a block's sample of two warps."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import astuple, dataclass

# Counters, in this order, for a unit of work (one warp's run, or one loop iteration).
FIELDS = ("steps", "flops", "ffma", "shared_wavefronts", "shared_ideal", "shared_accesses",
          "global_loads", "global_load_lines", "global_load_sectors", "load_bytes",
          "global_stores", "global_store_lines", "global_store_sectors",
          "partial_store_sectors", "split_store_sectors", "barriers", "load_cover", "covered_loads",
          "reread_lines", "reread_distance", "near_reread_lines", "near_reread_distance",
          "far_l2_distance", "far_l2_sq", "far_reread_sectors", "far_rewrite_sectors",
          "far_rewrite_distance", "open_store_sectors")
COUNTER = {f: i for i, f in enumerate(FIELDS)}  # a counter's place in a run's list of them
# the last fields: where lines and sectors meet again, not work an iteration must repeat
REUSE = ("reread_lines", "reread_distance", "near_reread_lines", "near_reread_distance",
         "far_l2_distance", "far_l2_sq", "far_reread_sectors", "far_rewrite_sectors",
         "far_rewrite_distance", "open_store_sectors")
assert FIELDS[-len(REUSE):] == REUSE


@dataclass(frozen=True)
class Traffic:
    """What one warp does per unit: its whole run (`complete`), else one iteration of its
    hottest loop. Shared wavefronts include bank conflicts; global lines are 128-byte
    lines (L1 wavefronts), sectors 32-byte ones."""

    complete: bool
    lanes: int  # active lanes of the warp emulated
    steps: float
    flops: float  # lane FLOPs (an FMA is 2)
    ffma: float
    shared_wavefronts: float
    shared_ideal: float  # the same accesses without conflicts
    shared_accesses: float
    global_loads: float
    global_load_lines: float
    global_load_sectors: float
    load_bytes: float
    global_stores: float
    global_store_lines: float
    global_store_sectors: float
    partial_store_sectors: float
    # of those, the ends of a store that also fills whole sectors (a row off its lines
    # written a warp's 128 B at a time), whoever completes them: L2 merges each
    split_store_sectors: float
    barriers: float
    load_cover: float  # warp instructions between global loads and the first use of their data
    covered_loads: float  # the loads load_cover sums over
    inner_ffma: float = 0.0  # FFMAs per iteration of the innermost loop that repeated
    # lane atomics to global memory whose address every block of the grid shares (a norm's
    # or a total's one counter), floating-point and integer, per warp; and how many such
    # addresses there are. Set by tune/traffic.py, which runs a second block to tell them
    # from per-block addresses; one warp's run alone leaves them 0.
    contended_float_atomics: float = 0.0
    contended_int_atomics: float = 0.0
    contended_addresses: float = 0.0
    # bytes both warps of the block's sample touch (a layernorm's weights, which every warp
    # reads): held once for all of them, left out of each one's reuse distances (Distinct's
    # `foreign`); set by tune/traffic.py
    shared_bytes: float = 0.0
    # lines the warp loads again that an earlier instruction of its own already loaded or
    # stored (a softmax's second pass over its row), and the sum over them of the bytes the
    # warp loaded and stored in between: their reuse distance in the warp's own stream
    reread_lines: float = 0.0
    reread_distance: float = 0.0
    # those of them at a reuse distance of at most NEAR_REREAD_BYTES (ptx_warp): a line that
    # the warp's previous accesses just touched (a row that does not start on a 128-B line
    # has its loads straddle two lines, the second loaded again by the next load)
    near_reread_lines: float = 0.0
    near_reread_distance: float = 0.0
    # the far ones' distances as L2 sees them, summed, and their squares (their spread: a
    # warp that reads its row, then reads and writes it, then reads the output back re-reads
    # each line between one row and two apart, by where the line sits): streaming stores
    # (.cs, __stcs: the first lines L2 evicts) take no room there; L1, where stores are
    # not kept, is judged on the distances above (model.l1_reread_loads)
    far_l2_distance: float = 0.0
    far_l2_sq: float = 0.0
    # and the 32-B sectors the warp's loads touch that it touched further back than a near
    # re-read (decided per sector, by its share of bytes; the lines above, per line): what
    # a miss brings
    far_reread_sectors: float = 0.0
    # sectors the warp stores again, further back than a near re-read from its last store to
    # them (a softmax writes its output, then scales it in place), and their summed
    # distances as L2 sees them (far_l2_distance's): where L2 wrote the first back before
    # the second, DRAM takes both
    far_rewrite_sectors: float = 0.0
    far_rewrite_distance: float = 0.0
    # 32-B sectors the warp's stores leave partly written for another warp to complete: the
    # ends of a warp store that also fills whole sectors (a row off its lines written a
    # warp's 128 B at a time), less those its own later stores complete
    open_store_sectors: float = 0.0
    # the shares of the bytes the warp touches that the same warp of the last block of its
    # row (x) and of its column (y) touches too (a GEMM's A and B panels): set by
    # tune/traffic.py for a loop that loads and waits at a barrier
    x_shared: float = 0.0
    y_shared: float = 0.0
    # 1 where a cut run's unit is the run so far, across FP loops side by side (loop_unit),
    # not one loop's iteration (a block's sample keeps its first warp where they differ)
    phases: float = 0.0

    @property
    def far_rereads(self) -> tuple[float, float]:
        """(lines, summed reuse distance) of the re-reads beyond NEAR_REREAD_BYTES."""
        return (self.reread_lines - self.near_reread_lines,
                self.reread_distance - self.near_reread_distance)

    @property
    def far_l2(self) -> tuple[float, float]:
        """(mean, standard deviation) of the far re-reads' distances as L2 sees them (0, 0
        without any)."""
        lines = self.far_rereads[0]
        if lines <= 0:
            return 0.0, 0.0
        mean = self.far_l2_distance / lines
        return mean, math.sqrt(max(0.0, self.far_l2_sq / lines - mean * mean))

    @property
    def cover(self) -> float:
        """Instructions a global load's latency overlaps before the warp needs its data."""
        return self.load_cover / self.covered_loads if self.covered_loads else 0.0

    @property
    def conflict_factor(self) -> float:
        return self.shared_wavefronts / self.shared_ideal if self.shared_ideal else 1.0



def block_sample(first: Traffic, last: Traffic | None) -> Traffic:
    """A block's warps from two of them, its first and its last: their mean where both are
    the same unit (whole runs, or loop iterations of the same work). One warp alone cannot
    show how rows fall on 128-B lines: at n = 5000 floats a row starts 32 B further into a
    line than the one before, and warp 0 of a 4-row block reads only the aligned rows."""
    if last is None or last.complete != first.complete or last.flops != first.flops \
            or last.phases != first.phases:
        return first
    mean = [(a + b) / 2 for a, b in zip(astuple(first)[2:], astuple(last)[2:], strict=True)]
    return Traffic(first.complete, first.lanes, *mean)


class Distinct:
    """The bytes a warp's own global accesses touched since a moment, in 32-B sectors (an
    LRU stack distance: a line L2 still holds is the same line however often the warp
    touches it), each sector weighed by the share of its bytes the warp ever touched: a
    sector the block's next warp shares (the end of a warp load on a row off its lines)
    is that much of the L2 the warps hold between them. Each access is a moment; a
    Fenwick tree over the moments sums the weights of the sectors whose last touch came
    after one. Counted per 128-B line instead, the bytes between a pass and the next over
    a row off its lines were twice the row (llm.c's softmax at C = 50,257)."""

    def __init__(self, foreign: Mapping[int, int] | None = None) -> None:
        self.now = 0
        self.last: dict[int, int] = {}  # sector -> the moment it was last touched
        self.bytes: dict[int, int] = {}  # sector -> the bytes of it touched (bit b: byte b)
        # sector -> the bytes another warp of the sample touches too (a layernorm's weights,
        # read by every warp): L2 holds one copy for all of them, so they weigh nothing here
        self.foreign: Mapping[int, int] = foreign or {}
        self.tree = [0.0] * 1024
        self.total = 0.0  # the weights of every sector touched so far

    def _weight(self, sector: int, touched: int) -> float:
        return (touched & ~self.foreign.get(sector, 0)).bit_count() / 32

    def touch(self, masks: Mapping[int, int]) -> int:
        """One access to these sectors (their bytes touched, as masks): its moment."""
        self.now += 1
        if self.now >= len(self.tree):
            self._grow()
        for sector, mask in masks.items():
            old = self.last.get(sector)
            before = self.bytes.get(sector, 0)
            if old is not None:
                self._add(old, -self._weight(sector, before))
            union = before | mask
            self.bytes[sector] = union
            self.total += self._weight(sector, union) - self._weight(sector, before)
            self.last[sector] = self.now
            self._add(self.now, self._weight(sector, union))
        return self.now

    def since(self, moment: int) -> float:
        """The sectors touched after `moment` (not again at it or before), by their weights."""
        i, before = moment, 0.0
        while i > 0:
            before += self.tree[i]
            i -= i & -i
        return max(0.0, self.total - before)

    def _add(self, i: int, v: float) -> None:
        while i < len(self.tree):
            self.tree[i] += v
            i += i & -i

    def _grow(self) -> None:
        n = 2 * len(self.tree)
        tree = [0.0] * n
        for sector, t in self.last.items():
            tree[t] += self._weight(sector, self.bytes[sector])
        for i in range(1, n):
            j = i + (i & -i)
            if j < n:
                tree[j] += tree[i]
        self.tree = tree


# --- loops: when a run may stop, and which loop's iteration is its unit -----------------------


def enclosed(start: int, end: int, loops: list[tuple[int, int]]) -> bool:
    """Another loop of the code holds the loop [start, end] inside its own body."""
    return any(s <= start and end <= e and (s, e) != (start, end) for s, e in loops)


def steady(rows: list[list[float]]) -> bool:
    """The last three iterations of a loop did the same work, floating-point work among it:
    more of them would only repeat it."""
    if len(rows) < 4:
        return False
    # (the reuse counters may alternate between iterations, a 64-B tile row re-reading
    # the other half of a line every second k step: they do not make the work differ)
    work = len(FIELDS) - len(REUSE)
    d = [[b - a for a, b in zip(rows[i - 1][:work], rows[i][:work], strict=True)]
         for i in (-3, -2, -1)]
    return d[0] == d[1] == d[2] and d[2][COUNTER["flops"]] > 0


def loop_unit(counters: list[float], finished: bool, snaps: dict[int, list[list[float]]],
              spans: dict[int, int], jumped: Mapping[int, int] | None = None,
              code_loops: Sequence[tuple[int, int]] = (), at_max: bool = False
              ) -> tuple[list[float], float, bool]:
    """The counters of the run's unit, the FFMAs of one iteration of its innermost loop with
    floating-point work (0 without one), and whether the unit is the run so far across FP
    loops side by side (`phases`). `snaps`: per loop start, the counters at each of its back
    edges; `spans`: per loop start, its backward branch; `jumped`: per loop start, the back
    edges a skip-ahead went past without noting them (ptx_skip); `code_loops`: the code's
    loops, (start, backward branch); `at_max`: the run was cut at MAX_STEPS. A finished run
    is its own unit; a cut one, one iteration of a loop that repeated."""
    unit = counters
    # per iteration of each loop that repeated: the unit is the outermost one doing FP work
    # (a tiled kernel's tile loop: its loads, barriers and every FMA of the tile), else the
    # one that ran the most FP work; the innermost one's FFMAs say how far ptxas unrolled
    per_loop = []
    jumped = jumped or {}
    for tgt, rows in snaps.items():
        if len(rows) >= 2:
            iters = len(rows) - 1 + jumped.get(tgt, 0)
            delta = [b - a for a, b in zip(rows[0], rows[-1], strict=True)]
            # one iteration's FFMAs: the fewest between two back edges (the mean over
            # several also holds the enclosing loop's work between its runs)
            ffma = min(b[COUNTER["ffma"]] - a[COUNTER["ffma"]]
                       for a, b in zip(rows, rows[1:], strict=False))
            per_loop.append((spans[tgt] - tgt, [x / iters for x in delta], iters, ffma, tgt))
    fp = [x for x in per_loop if x[1][COUNTER["flops"]] > 0]
    inner = min(fp, key=lambda x: x[0])[3] if fp else 0.0
    phases = False
    if not finished and per_loop:
        top = max(fp or per_loop, key=lambda x: (x[0], x[1][COUNTER["flops"]] * x[2]))
        unit = top[1]
        if at_max and any(_side_by_side(top[4], spans[top[4]], x[4], spans[x[4]], code_loops)
                          for x in fp):
            # FP loops side by side (successive phases of a loop that did not repeat before
            # the cut: flash attention's S = QK^T, then P V, at 33 and 9 wavefronts an FFMA
            # with Bc = 16): no one iteration stands for the work; the run so far does
            unit, phases = counters, True
    return unit, inner, phases


def _side_by_side(a: int, a_end: int, b: int, b_end: int,
                  code_loops: Sequence[tuple[int, int]]) -> bool:
    """Loops [a, a_end] and [b, b_end] are apart (neither holds the other) inside one loop
    of the code that holds both: two phases of its body."""
    if a <= b <= a_end or b <= a <= b_end:
        return False
    return enclosed(min(a, b), max(a_end, b_end), list(code_loops))
