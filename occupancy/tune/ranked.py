"""One ranking for every tile question: a user's tuning entry and a shipped family alike.

Points that launch are ordered by predicted time (then occupancy); one tie rule: every point
with `t <= best * (1 + MODEL_ERROR)` ties with the best, and `measure` decides. The
recommendation's reasons and the findings that set points apart (bank conflicts,
uncoalesced loads, fewer loads than the naive kernel) are part of the result, so the JSON
carries what the terminal shows.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from occupancy.core.device import Device
from occupancy.core.solver import OccupancyResult
from occupancy.core.words import limiters, pct
from occupancy.inputs.manifest.tuning import TuneSpec
from occupancy.inputs.safety import inert
from occupancy.tune.constwalk import unpriced_walk
from occupancy.tune.inflight import SHORTEST_RUN_BYTES, row_run_bytes, row_run_latency_factor
from occupancy.tune.leaders import describe, leaders
from occupancy.tune.model import (
    MEASURED_ON,
    MEMORY_ROOFS,
    MODEL_ERROR,
    RESOLUTION,
    ROOF_NAMES,
    Prediction,
    work_ffma,
)
from occupancy.tune.shipped import Candidate, Counts

# The costs the model names for a point and does not price (`doubts`): measure --budget
# takes the points that share them as sharing that error (tune/budget.py)
ROLLED_LOOP = "rolled k loop"
WALKED_TABLE = "walked constant table"

# the registers of a shipped candidate no compiler here can build (tune/handcounts.py)
ESTIMATE_SOURCE = "estimate (no compiler; pip install 'occupancy[compiler]')"

if TYPE_CHECKING:
    from occupancy.build.resources import KernelResources
    from occupancy.tune.ptxsim import Traffic


@dataclass(frozen=True)
class Point:
    """One configuration of the space, instantiated for a problem."""

    params: dict[str, Any]
    function: str  # the instance, e.g. sgemm<64, 64, 8, 4, 4>
    defines: tuple[tuple[str, str], ...]
    block: tuple[int, ...]
    grid: tuple[int, ...]
    dynamic_shared_memory: int

    @property
    def threads(self) -> int:
        return math.prod(self.block)

    @property
    def grid_blocks(self) -> int:
        return math.prod(self.grid)

    @property
    def label(self) -> str:
        """Its params as `occupancy tile` prints them (`TILE=16 PAD=1`)."""
        return " ".join(f"{k}={v}" for k, v in self.params.items())


@dataclass(frozen=True)
class Ranked:
    point: Point
    resources: KernelResources | None
    occupancy: OccupancyResult | None
    prediction: Prediction | None
    reasons: tuple[str, ...]  # why it is pruned (empty: ranked)
    build: Any = None  # the toolchain Build that compiled it (measure runs its cubin)
    traffic: Traffic | None = None  # one warp of it run on its PTX (ptxsim), None: not run
    # a shipped family's candidate and its hand counts (`hand_counts:` in the manifest)
    candidate: Candidate | None = None
    counts: Counts | None = None

    @property
    def can_launch(self) -> bool:
        return self.occupancy is not None and self.occupancy.launchable

    @property
    def pruned(self) -> bool:
        return bool(self.reasons)

    @property
    def label(self) -> str:
        """The shipped candidate's label (`tiled 16`), else its params (`TILE=16 PAD=1`)."""
        if self.candidate is not None:
            return self.candidate.label
        return self.point.label


@dataclass(frozen=True)
class TuneReport:
    spec: TuneSpec  # the (first) entry ranked
    device: Device
    ranked: tuple[Ranked, ...]  # launchable ones by predicted time, then the pruned
    restricted_out: int  # points `restrict` removed
    ties: tuple[Ranked, ...] = ()
    notes: tuple[str, ...] = field(default=())
    why: tuple[str, ...] = ()  # the recommendation's reasons, the tie among them
    findings: tuple[str, ...] = ()  # what sets points apart (bank conflicts, coalescing)
    family: str | None = None  # a shipped family: all the entries of its manifest, ranked together

    @property
    def recommended(self) -> Ranked | None:
        return next((r for r in self.ranked if not r.pruned), None)

    @property
    def name(self) -> str:
        return self.family or self.spec.name


def order(spec: TuneSpec, dev: Device, out: Sequence[Ranked], restricted_out: int,
          family: str | None = None, occupancy_only: bool = False) -> TuneReport:
    """The ranking: launchable points by predicted time (then occupancy; by occupancy alone
    where nothing predicts a time), then the pruned; the ties, reasons, findings and notes."""
    ok = sorted((r for r in out if not r.pruned),
                key=lambda r: (r.prediction.predicted_ms if r.prediction else 0.0,
                               -(r.occupancy.occupancy if r.occupancy else 0)))
    pruned = [r for r in out if r.pruned]
    notes = []
    if dev.key not in MEASURED_ON:
        notes.append(f"the model's constants were measured on the H200 only; on {inert(dev.name)} "
                     "its times are untested: measure --budget settles the order")
    if any(r.resources is not None and r.resources.source == ESTIMATE_SOURCE for r in out):
        notes.append("registers are estimates: no compiler for the device's architecture; "
                     "pip install 'occupancy[compiler]'")
    if occupancy_only:
        notes.append("no 'work:' given: ranked by occupancy only; add work: {flops, dram_bytes} "
                     "for predicted times")
        ok.sort(key=lambda r: -(r.occupancy.occupancy if r.occupancy else 0))
    ok = _most_resident_first(ok)
    ties: tuple[Ranked, ...] = ()
    if ok and ok[0].prediction:
        best = ok[0].prediction.predicted_ms
        ties = tuple(r for r in ok if r.prediction
                     and r.prediction.predicted_ms <= best * (1 + MODEL_ERROR))
    ties = ties if len(ties) > 1 else ()
    why = tuple(reasons(ok[0], ok, ties, dev.sm_count)) if ok else \
        ("no point can launch on this device",)
    return TuneReport(spec, dev, (*ok, *pruned), restricted_out, ties, tuple(notes), why,
                      tuple(findings(ok, dev)), family)


def _occupancy(r: Ranked) -> float:
    return r.occupancy.occupancy if r.occupancy else 0.0


def _most_resident_first(ok: list[Ranked]) -> list[Ranked]:
    """Where the fastest predicted point is bound by a bandwidth roof: of the points
    predicted within RESOLUTION of it (the same prediction, as far as a measurement can
    tell), the one with the highest occupancy goes first; the rest keep their order."""
    if len(ok) < 2 or ok[0].prediction is None or ok[0].prediction.bound not in MEMORY_ROOFS:
        return ok
    edge = ok[0].prediction.predicted_ms * (1 + RESOLUTION)
    same = [r for r in ok if r.prediction and r.prediction.predicted_ms <= edge]
    pick = max(same, key=_occupancy)  # the first of the highest: the fastest predicted
    if _occupancy(pick) <= _occupancy(ok[0]):
        return ok
    return [pick, *(r for r in ok if r is not pick)]


def reasons(best: Ranked, ok: Sequence[Ranked], ties: Sequence[Ranked],
            sm_count: int = 0) -> list[str]:
    """Why the pick: its time and roof, the tie or the margin over the runner-up, its
    occupancy and limiter, and (hand counts) the loads it saves and its bank conflicts.
    `sm_count`: the device's SMs, for the blocks the grid gives each (0: the occupancy's)."""
    p, occ, res = best.prediction, best.occupancy, best.resources
    assert occ is not None and res is not None
    out = [f"{best.label}: predicted {p.predicted_ms:.3f} ms, bound by {ROOF_NAMES[p.bound]}"
           if p else f"{best.label}: the highest occupancy (no predicted time)"]
    timed = [r for r in ok if r is not best and r.prediction]
    quicker = [r for r in timed if p and r.prediction and r.prediction.predicted_ms < p.predicted_ms]
    if p and quicker and quicker[0].prediction:
        q, qp = quicker[0], quicker[0].prediction
        out.append(f"{q.label} is predicted {p.predicted_ms / qp.predicted_ms - 1:.1%} "
                   f"faster, closer than a measurement tells apart ({RESOLUTION:.0%}); this "
                   f"one keeps more threads resident ({pct(occ.occupancy)} vs "
                   f"{pct(_occupancy(q))})")
    if p and ties:
        others = ", ".join(f"{r.label} ({_ratio(r, p):.2f}x)" for r in ties if r is not best)
        out.append(f"a tie with {others}, within the model's error ({MODEL_ERROR:.0%}): "
                   "`occupancy measure` decides")
        lead = leaders([(dict(r.point.params), r.prediction.predicted_ms)
                        for r in ties if r.prediction])
        if lead is not None and lead.separations:
            out.append(describe(lead, len(ties), MODEL_ERROR))
    elif p and timed:
        out.append(f"{_ratio(timed[0], p):.2f}x faster than the runner-up, {timed[0].label}")
    blocks = occ.active_blocks_per_sm
    out.append(f"occupancy {pct(occ.occupancy)} ({blocks} block{'' if blocks == 1 else 's'} of "
               f"{best.point.threads} threads per SM, limited by {limiters(occ.limiters)}; "
               f"{res.registers_per_thread} registers from {res.source})")
    k = best.counts
    naive = next((r for r in ok if r.candidate is not None and r.candidate.variant == "naive"
                  and r.counts is not None), None)
    if k is not None and naive is not None and naive is not best and naive.counts is not None \
            and k.global_load_elements:
        saved = naive.counts.global_load_elements / k.global_load_elements
        if saved >= 1.5:
            out.append(f"{saved:.0f}x fewer global loads than the naive kernel "
                       f"({k.global_load_elements:.3g} vs "
                       f"{naive.counts.global_load_elements:.3g} elements)")
    if k is not None and k.bank_conflict_ways > 1:
        out.append(f"its shared-memory access has {k.bank_conflict_ways}-way bank conflicts, "
                   "counted in the load/store roof")
    if p and p.bound == "constant":
        held = occ.resident_blocks(best.point.grid_blocks, sm_count) if sm_count else blocks
        out.append(f"its loop reads a __constant__ table through ULDC with {held} blocks an SM: "
                   "each warp's read misses the constant cache, about 32 clocks of the SM each "
                   "(docs/model.md items 29-30); fewer blocks or warps an SM keep the warps "
                   "in step")
    elif p and p.hiding < 0.995:
        out.append(f"the resident warps hide {pct(p.hiding)} of the memory latency"
                   if p.bound in MEMORY_ROOFS else
                   f"the schedulers issue {pct(p.hiding)} of the time: the resident warps do "
                   "not hide all of a warp's waits for its own results")
    return [inert(x) for x in out]


def _ratio(r: Ranked, p: Prediction) -> float:
    assert r.prediction is not None
    return r.prediction.predicted_ms / p.predicted_ms


def findings(ranked: Sequence[Ranked], dev: Device) -> list[str]:
    """What one warp of each point did on its PTX, where it sets points apart: bank
    conflicts (shared passes over the conflict-free count), uncoalesced global loads
    (128-byte lines per load; 1 is a warp of floats in one line) and stores whose ends leave
    sectors partly written (a row off its sectors; docs/model.md item 33); 2-D blocks that
    read 256 B or less of each row where others read twice as much (item 51); and, from the
    SASS, the points with a cost the model names and does not price (`doubts`: a k loop kept
    rolled, a walked __constant__ table)."""
    out = []
    n = len(ranked)

    def worst(per_point: Callable[[Traffic], float | None], least: float
              ) -> tuple[int, Ranked, float] | None:
        """How many points reach `least` by `per_point` of their traffic (None: not
        counted), and the one with the most, with its value."""
        values = [(r, v) for r in ranked if r.traffic and (v := per_point(r.traffic)) is not None]
        hit = [(r, v) for r, v in values if v >= least]
        if not hit:
            return None
        r, v = max(hit, key=lambda x: x[1])
        return len(hit), r, v

    if found := worst(lambda t: t.conflict_factor, 1.5):
        k, r, v = found
        out.append(f"Bank conflicts in {k} of {n} points: up to {v:.1f}x the conflict-free "
                   f"shared-memory passes ({inert(r.label)}), counted in the load/store roof.")
    if found := worst(lambda t: t.global_load_lines / t.global_loads if t.global_loads
                      else None, 4):
        k, r, v = found
        out.append(f"Uncoalesced loads in {k} of {n} points: up to {v:.1f} 128-byte lines per "
                   f"warp load ({inert(r.label)}).")
    if found := worst(lambda t: t.split_store_sectors / t.global_stores if t.global_stores
                      else None, 1):
        k, r, v = found
        out.append(f"Stores off their 32-byte sectors in {k} of {n} points: up to {v:.1f} "
                   f"partly written sectors a warp store ({inert(r.label)}), which L2 merges at "
                   "about a sector's DRAM time each, more where another warp completes them "
                   "(priced in the DRAM roof where the manifest declares dram_bytes). Rows "
                   "whose pitch is a multiple of 32 bytes keep their stores on their sectors, "
                   "all but a row's partial last one.")

    short = [(run, r) for r in ranked
             if (run := row_run_bytes(tuple(r.point.block), r.traffic, least=0)) is not None]
    if short and min(run for run, _ in short) <= 256 \
            and max(run for run, _ in short) >= 2 * min(run for run, _ in short):
        run, r = min(short, key=lambda x: x[0])
        k = sum(1 for v, _ in short if v <= 256)
        least = f" (priced as {SHORTEST_RUN_BYTES} B)" if run < SHORTEST_RUN_BYTES else ""
        out.append(f"Short runs of each row in {k} of {n} points: a block as narrow as "
                   f"{inert(r.label)} reads {run:.0f} B{least} of each row it loads, so more of its "
                   "DRAM requests open a DRAM row and wait longer (priced in the DRAM roof: "
                   f"{row_run_latency_factor(tuple(r.point.block), r.traffic):.2f}x the "
                   "latency; blocks reading 1 KB or more of a row pay nothing; docs/model.md "
                   "item 51).")
    rolled = [r for r in ranked if ROLLED_LOOP in doubts(r, dev)]
    if rolled:
        apart = ("; measure --budget takes the errors of the points with and without it apart"
                 if len(rolled) < n else "")
        out.append(f"The k loop is kept rolled in {len(rolled)} of {n} points (a loop of FFMAs "
                   f"nested in the hot loop, the first {inert(rolled[0].label)}): on the H200 "
                   "such loops ran up to 25% slower than the same work unrolled, which the "
                   f"model does not price (docs/model.md item 45){apart}.")
    walkers = [r for r in ranked if WALKED_TABLE in doubts(r, dev)]
    if walkers:
        up = max((r.prediction.slow_walk_ms / r.prediction.predicted_ms for r in walkers
                  if r.prediction and r.prediction.predicted_ms), default=0.0)
        reach = (f"; their predicted ranges reach the time at the slow regime's floor, up to "
                 f"{up:.1f}x the prediction" if up >= 1.05 else "")
        out.append(f"The hot loop reads a __constant__ table through a uniform register (ULDC) "
                   f"in {len(walkers)} of {n} points where the model does not price "
                   "what that may cost (8 blocks an SM, or more holding fewer than 32 warps, a "
                   "table of 8 KB or more, or a loop whose trips the declared FLOPs do not "
                   f"give), the first {inert(walkers[0].label)}: on the H200 such loops ran at "
                   f"their issue count or up to 12x slower (bench/results/h200-cwalk){reach}: "
                   "measure these points before trusting their rank.")
    return out


def doubts(r: Ranked, dev: Device) -> tuple[str, ...]:
    """The costs the model names for a point and does not price, from its SASS: a k loop
    ptxas kept rolled inside the hot loop (a nested loop of FFMAs: on the H200 such loops ran
    up to 25% slower than the same work unrolled, by a cause not known, docs/model.md items
    43-45) and a walked __constant__ table where the rule does not price it
    (tune/constwalk.unpriced_walk; blocks an SM: as many as the occupancy and the grid give
    each of `dev`'s SMs). None for a point without a build's SASS."""
    if r.resources is None or r.occupancy is None or not r.resources.loop_mix:
        return ()
    mix = dict(r.resources.loop_mix)
    out = []
    if work_ffma(mix, "inner_"):
        out.append(ROLLED_LOOP)
    blocks = r.occupancy.resident_blocks(r.point.grid_blocks, dev.sm_count)
    priced = bool(r.prediction and r.prediction.roofs_ms.get("constant"))
    if unpriced_walk(dev, mix, blocks, priced):
        out.append(WALKED_TABLE)
    return tuple(out)


def read_doubts(value: object) -> tuple[str, ...]:
    """A record's `doubts` read back (a replay of measure --budget): the names `doubts`
    gives, each once, in its order; anything else in the file is dropped (a record is
    hostile input: no other text, and no list of any length, reaches the search)."""
    if not isinstance(value, list):
        return ()  # none, null (not read) or not a list
    return tuple(n for n in (ROLLED_LOOP, WALKED_TABLE) if n in value)
