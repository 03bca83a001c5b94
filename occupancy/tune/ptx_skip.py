"""Skip-ahead through a loop that repeats itself (ptxsim).

A warp that walks a long row in strided loops (llm.c's softmaxes at 50,257 columns: a
max, a sum and a write pass of 1,571 iterations each) runs into MAX_STEPS long before its
end, and the model then sees a cut run: one iteration of one pass, not the kernel. Where
the warp's state moves by the same step at each iteration of a loop, the run jumps ahead
n iterations and goes on, so that such a run ends within the bound with the counters of
the whole kernel.

At each back edge of a loop the warp's state is noted (a Mark). Three marks in a row make
a Template where the two iterations between them went the same way and did the same work:
the lanes at the same places, the same counter deltas (the re-read counters aside, as in
`steady`), the loops inside run as often, the same global accesses at addresses that moved
by the same step per lane, and every register moved by the same per-lane step both times.
That is an affine state: integer registers by their stride; predicates, and float
registers (ptxsim does not compute floating-point arithmetic: they hold loaded zeros and
constants), not at all. Floats are held to the same rule as integers, not left out: a
float compared in a branch could steer the loop. A value that moves otherwise refuses the
skip: an index that doubles, a value loaded from memory that changes, a min() that starts
clamping.

How far to jump: the loop's bound is a register compared somewhere in its body, and each
comparison the template made (setp: its lanes' two operands, moving by their steps) says
at which iteration it would first come out the other way: the loop's exit, a lane past a
row's end, an `if (i == 500)` inside. The jump stops short of the first such iteration
(`_limit`), so that every skipped iteration compares as the template did. A probe then
puts the registers n iterations ahead, runs one iteration and holds where that iteration
did exactly what the template says iteration n + 1 does (the same places, counters, global
accesses and registers); after it every part of the run is put back as it was. That
catches what a comparison cannot show: a value that stops moving by its step (a min() that
starts clamping, a mask or a register that wraps). The limit's probe usually holds; where
it fails, halving finds the largest n that does. That n is jumped: the registers move n
steps, the work counters by n iterations' deltas, and the iterations' global accesses are
replayed at their addresses in order, so the lines, sectors and re-read lines (a softmax's
second pass over its row) are those of the real run. The probes' steps count toward
MAX_STEPS, the skipped ones do not. Every bound is fixed: MAX_SKIP iterations a jump,
MAX_REPLAY replayed accesses, MAX_PROBES probes and MAX_MARKED values copied into marks a
run, so a hostile loop stays bounded (a loop without end jumps until the probes run out,
and the run is cut there as before).

What it takes on trust: a value computed without a comparison that leaves its line
between the template and the probe and is back on it at the probe (no compiler writes
that); shared accesses count n times the template's (their banks repeat for a stride of
128 bytes, not for every stride). A loop whose iterations hold a jump of an inner loop
is not a template (its global accesses were replayed, not noted). Only a `whole` run
skips (see ptx_run). A skipped loop's back edges go to the run's `iters`, which
loop_unit divides by.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

from occupancy.tune.ptx_counters import COUNTER, FIELDS, REUSE

if TYPE_CHECKING:
    from occupancy.tune.ptx_warp import Compare, GlobalAccess, Warp

MAX_SKIP = 1 << 30  # iterations one jump skips at most
MAX_REPLAY = 1 << 15  # global accesses the jumps of one run replay at most
MAX_PROBES = 512  # probe iterations of one run
# probe steps of one run, a budget of their own: counted in the warp's MAX_STEPS, probes
# that fail again and again (a loop whose index wraps, `i & 3`) cut runs that used to end
MAX_PROBE_STEPS = 12_000
# a search that jumps fewer iterations than this cost more probes than it saved: the loop
# waits 2, 4, 8, ... of its back edges (at most 2^20) before it is looked at again
JUMP_WORTH = 8
# values the marks of one run copy at most (a register's lanes count 32): a mark costs
# what the warp holds, and hostile PTX may write tens of thousands of registers
MAX_MARKED = 1 << 24
# the counters count_global adds to: replayed access by access, not scaled
_REPLAYED = frozenset(COUNTER[f] for f in (
    "global_loads", "global_load_lines", "global_load_sectors", "load_bytes", "global_stores",
    "global_store_lines", "global_store_sectors", "partial_store_sectors",
    "split_store_sectors", *REUSE))
_SCALED = tuple(i for i in range(len(FIELDS)) if i not in _REPLAYED)
# the work an iteration must repeat (the re-read counters may alternate: see `steady`)
_WORK = tuple(i for i, f in enumerate(FIELDS) if f not in REUSE)

Lanes = list[float | int]
K = TypeVar("K")
L = TypeVar("L", list[int], list[float | int])  # a register's lanes, or a shared access's


class Walk(Protocol):
    """What a skip reads and moves of ptx_run's lock-step run."""

    w: Warp
    pcs: list[int | None]
    steps: int  # the clock
    skipped: int  # steps jumped (not counted toward MAX_STEPS)
    spent: int  # probe steps (their own budget, MAX_PROBE_STEPS)
    snaps: dict[int, list[list[float]]]
    spans: dict[int, int]
    iters: dict[int, int]  # back edges jumped per loop
    probing: bool

    def step(self) -> bool | None: ...


@dataclass
class Mark:
    """The warp's state at one back edge (what a probe restores, and a template compares)."""

    clock: int  # the lock step's steps
    skips: int  # jumps made so far
    pcs: tuple[int | None, ...]
    counters: list[float]
    regs: dict[str, Lanes]
    shared: dict[int, list[int]]  # Warp.last_shared
    pending: dict[str, float]
    rows: dict[int, int]  # back edges noted per loop
    events: int  # global accesses noted so far
    compares: int  # comparisons noted so far
    streaming: frozenset[int]
    vec_ok: dict[int, bool]


@dataclass
class Template:
    """One iteration of a loop whose state moves affinely: its steps, counter deltas, the
    per-lane steps of the registers (and last shared addresses) that move, the pending
    loads it issues again, the back edges each loop adds, its global accesses (their
    addresses in the last iteration and their step per lane), and the most iterations a
    jump may skip before one of its comparisons would go the other way."""

    steps: int
    work: list[float]
    regs: dict[str, Lanes]
    shared: dict[int, list[int]]
    pending: frozenset[str]
    rows: dict[int, int]
    events: list[tuple[list[int], list[int], int, bool, bool | None, bool]]
    limit: int


def template(a: Mark, b: Mark, c: Mark, events: list[GlobalAccess], compares: list[Compare]
             ) -> Template | None:
    """The iteration that marks a, b, c (consecutive back edges of one loop) show twice;
    None where the two iterations differ, or the state did not move by the same step."""
    if a.skips != c.skips or not a.pcs == b.pcs == c.pcs or not a.streaming == c.streaming \
            or not a.vec_ok == b.vec_ok == c.vec_ok:
        return None
    steps = c.clock - b.clock
    if steps <= 0 or b.clock - a.clock != steps:
        return None
    work = [y - x for x, y in zip(b.counters, c.counters, strict=True)]
    if any(b.counters[i] - a.counters[i] != work[i] for i in _WORK):
        return None
    rows = {t: m - b.rows.get(t, 0) for t, m in c.rows.items()}
    if any(b.rows.get(t, 0) - a.rows.get(t, 0) != k for t, k in rows.items()):
        return None
    regs = _moving(a.regs, b.regs, c.regs)
    shared = _moving(a.shared, b.shared, c.shared)
    pending = _reissued(a.pending, b.pending, c.pending, steps)
    accesses = _accesses(events[a.events:b.events], events[b.events:c.events])
    if regs is None or shared is None or pending is None or accesses is None:
        return None
    limit = _limit(compares[a.compares:b.compares], compares[b.compares:c.compares])
    if limit is None:
        return None
    return Template(steps, work, regs, shared, pending, rows, accesses, limit)


def _moving(a: Mapping[K, L], b: Mapping[K, L], c: Mapping[K, L]) -> dict[K, L] | None:
    """Per key that moved, its per-lane step: the same from a to b as from b to c; None
    where a value moved otherwise (or a key came or went)."""
    if not a.keys() == b.keys() == c.keys():
        return None
    out: dict[K, L] = {}
    for key, z in c.items():
        x, y = a[key], b[key]
        if x == y == z:
            continue
        if not len(x) == len(y) == len(z):
            return None
        step = [q - p for p, q in zip(y, z, strict=True)]
        if step != [q - p for p, q in zip(x, y, strict=True)]:
            return None
        out[key] = step
    return out


def _reissued(a: dict[str, float], b: dict[str, float], c: dict[str, float], steps: int
              ) -> frozenset[str] | None:
    """The pending loads issued again at each iteration (their issue step moves with the
    clock); the others must not move. None where one does otherwise."""
    if not a.keys() == b.keys() == c.keys():
        return None
    out = set()
    for r, z in c.items():
        x, y = a[r], b[r]
        if x == y == z:
            continue
        if z - y != steps or y - x != steps:
            return None
        out.add(r)
    return frozenset(out)


def _accesses(first: list[GlobalAccess], second: list[GlobalAccess]
              ) -> list[tuple[list[int], list[int], int, bool, bool | None, bool]] | None:
    """The second iteration's global accesses with each lane's step from the first; None
    where the two iterations' accesses differ in kind or number."""
    if len(first) != len(second):
        return None
    out = []
    for (p, w1, s1, t1, c1), (q, w2, s2, t2, c2) in zip(first, second, strict=True):
        if (w1, s1, t1, c1) != (w2, s2, t2, c2) or len(p) != len(q):
            return None
        out.append((q, [y - x for x, y in zip(p, q, strict=True)], w2, s2, t2, c2))
    return out


def _limit(first: list[Compare], second: list[Compare]) -> int | None:
    """The most iterations a jump may skip so that every one of them, and the probe's after
    them, compares as the second iteration did (its lanes' operands moving by their step
    from the first); None where the two iterations compare differently."""
    if len(first) != len(second):
        return None
    limit = MAX_SKIP
    for (f1, l1, x1, y1), (f2, l2, x2, y2) in zip(first, second, strict=True):
        if f1 is not f2 or l1 != l2:
            return None
        for p, q, x, y in zip(x1, y1, x2, y2, strict=True):
            j = _flip(f2, x, x - p, y, y - q)
            if j is not None:
                limit = min(limit, j - 2)
    return max(limit, 0)


def _flip(cmp: Callable[[Any, Any], bool], x: float | int, dx: float | int, y: float | int,
          dy: float | int) -> int | None:
    """The first j >= 1 at which comparing x + j dx with y + j dy comes out otherwise than
    comparing x with y; None where it never does (up to MAX_SKIP + 2). The outcome depends
    on the sign of their difference, which changes only where the line crosses 0: at
    j = 1 where it starts there, else at the first integer at or past the root, or the
    one after (the root itself for an equality)."""
    if dx == dy:
        return None
    was = bool(cmp(x, y))
    d, s = x - y, dx - dy
    if isinstance(d, int) and isinstance(s, int):
        f = -d // s
        near = [f, f + 1, f + 2]
    else:
        root = -d / s
        if not math.isfinite(root):
            return 1 if bool(cmp(x + dx, y + dy)) != was else None
        f = math.floor(root)
        near = [f - 1, f, f + 1, f + 2]
    for j in [1] + sorted(j for j in near if 1 < j <= MAX_SKIP + 2):
        if bool(cmp(x + j * dx, y + j * dy)) != was:
            return j
    return None


@dataclass
class _Saved:
    """What a probe changes, to put back: the mark and the rest of the run's state."""

    mark: Mark
    pcs: list[int | None]
    spans: dict[int, int]
    reuse: tuple[Any, ...]  # the warp's past accesses (Warp.save_reuse)
    atomics: int
    streaming: set[int]


class Skipper:
    """The skip-ahead of one lock-step run: the marks of its loops, its jumps and probes."""

    def __init__(self, walk: Walk) -> None:
        self.walk = walk
        self.marks: dict[int, list[Mark]] = {}
        self.skips = 0
        self.replayed = 0
        self.probes = 0
        self.marked = 0
        self.wait: dict[int, int] = {}  # loop -> back edges it waits before the next search
        self.fails: dict[int, int] = {}  # loop -> its searches that jumped too little
        walk.w.events = []
        walk.w.compares = []

    def back_edge(self, tgt: int) -> None:
        """The warp has just taken the back edge of the loop at `tgt`: note its state, and
        where its last two iterations repeat affinely, jump as far as the probes allow."""
        if self.probes >= MAX_PROBES or self.marked >= MAX_MARKED \
                or self.walk.spent >= MAX_PROBE_STEPS:
            return
        if self.wait.get(tgt, 0):
            self.wait[tgt] -= 1
            return
        hist = self.marks.setdefault(tgt, [])
        hist.append(self._mark())
        if len(hist) < 3:
            return
        del hist[:-3]
        events, compares = self.walk.w.events, self.walk.w.compares
        assert events is not None and compares is not None
        tpl = template(hist[0], hist[1], hist[2], events, compares)
        if tpl is None:
            return
        n = self._search(tpl)
        hist.clear()  # (after a jump, or a refused one, the loop's marks start again)
        if n:
            self._jump(tpl, n)
        if n < JUMP_WORTH:
            self.fails[tgt] = self.fails.get(tgt, 0) + 1
            self.wait[tgt] = 1 << min(self.fails[tgt], 20)

    def _mark(self) -> Mark:
        walk, w = self.walk, self.walk.w
        assert w.events is not None and w.compares is not None
        self.marked += 32 * (len(w.regs) + len(w.last_shared)) + len(w.pending) + len(walk.snaps)
        return Mark(walk.steps, self.skips, tuple(walk.pcs), list(w.counters),
                    {r: v[:] for r, v in w.regs.items()}, dict(w.last_shared), dict(w.pending),
                    {t: len(r) for t, r in walk.snaps.items()}, len(w.events), len(w.compares),
                    frozenset(w.streaming), dict(w.vec_ok))

    def _search(self, tpl: Template) -> int:
        """The largest n whose probe holds, up to the template's limit (its comparisons
        usually give the exact count: one probe), else by halving (at most
        log2(MAX_SKIP) + 2 probes, fewer where MAX_PROBES runs out)."""
        cap = min(tpl.limit, MAX_SKIP)
        if tpl.events:
            cap = min(cap, (MAX_REPLAY - self.replayed) // len(tpl.events))
        lo, hi = 0, cap + 1  # n = lo held; n = hi failed (or is past the cap)
        n = cap
        while hi - lo > 1 and self.probes < MAX_PROBES and self.marked < MAX_MARKED \
                and self.walk.spent < MAX_PROBE_STEPS:
            if self._probe(tpl, n):
                lo = n
            else:
                hi = n
            n = (lo + hi) // 2
        return lo

    def _probe(self, tpl: Template, n: int) -> bool:
        """Whether, with the registers n iterations on, the next iteration does what the
        template says iteration n + 1 does. The run's state is put back after, the probe's
        steps are added to `spent` (MAX_PROBE_STEPS bounds them, not MAX_STEPS)."""
        walk, w = self.walk, self.walk.w
        # (the probe's re-reads and open sectors are not compared: its own lines suffice)
        saved = _Saved(self._mark(), list(walk.pcs), dict(walk.spans), w.save_reuse(),
                       len(w.atomic_log), set(w.streaming))
        _advance(w.regs, w.last_shared, tpl, n)
        walk.probing = True
        held = False
        try:
            for _ in range(tpl.steps):
                if walk.step() is not None:
                    break
            else:
                held = self._held(tpl, n + 1, saved.mark)
        except Exception:  # (registers no real run holds may break an op: no jump)
            held = False
        finally:
            walk.probing = False
            spent = walk.steps - saved.mark.clock
            _restore(walk, saved)
            walk.spent += spent
            self.probes += 1
        return held

    def _held(self, tpl: Template, k: int, m: Mark) -> bool:
        """The state after the probe's iteration is the template's k iterations after mark
        m: the same places, k steps of each moving register, the same work."""
        walk, w = self.walk, self.walk.w
        if tuple(walk.pcs) != m.pcs or frozenset(w.streaming) != m.streaming \
                or w.vec_ok != m.vec_ok:
            return False
        if any(w.counters[i] - m.counters[i] != tpl.work[i] for i in _WORK):
            return False
        if {t: len(r) - m.rows.get(t, 0) for t, r in walk.snaps.items()} != \
                {t: tpl.rows.get(t, 0) for t in walk.snaps}:
            return False
        if not _moved(w.regs, m.regs, tpl.regs, k) or \
                not _moved(w.last_shared, m.shared, tpl.shared, k):
            return False
        if w.pending != {r: t + tpl.steps if r in tpl.pending else t for r, t in m.pending.items()}:
            return False
        assert w.events is not None
        got = w.events[m.events:]
        return len(got) == len(tpl.events) and all(
            (g[0], g[1], g[2], g[3], g[4]) == ([a + k * s for a, s in zip(e[0], e[1], strict=True)],
                                               e[2], e[3], e[4], e[5])
            for g, e in zip(got, tpl.events, strict=True))

    def _jump(self, tpl: Template, n: int) -> None:
        """Put the run n iterations on: registers, issue steps of the loads in flight, the
        work counters, the iterations' global accesses replayed in order, the clock, and
        the back edges each loop went past."""
        walk, w = self.walk, self.walk.w
        _advance(w.regs, w.last_shared, tpl, n)
        for r in tpl.pending:
            w.pending[r] += n * tpl.steps
        for i in _SCALED:
            w.counters[i] += n * tpl.work[i]
        if tpl.events:
            events, w.events = w.events, None
            try:
                for j in range(1, n + 1):
                    for addrs, step, width, store, atomic, evict_first in tpl.events:
                        w.count_global([a + j * s for a, s in zip(addrs, step, strict=True)],
                                       width, store, atomic, evict_first)
            finally:
                w.events = events
        walk.steps += n * tpl.steps
        walk.skipped += n * tpl.steps
        for t, k in tpl.rows.items():
            if k:
                walk.iters[t] = walk.iters.get(t, 0) + n * k
        self.skips += 1
        self.replayed += n * len(tpl.events)


def _moved(now: Mapping[K, L], then: Mapping[K, L], steps: Mapping[K, L], k: int) -> bool:
    """Each value of `now` is its value in `then` moved k steps (unmoved where it has none)."""
    if now.keys() != then.keys():
        return False
    for key, v in now.items():
        d = steps.get(key)
        if v != (then[key] if d is None else [x + k * s for x, s in zip(then[key], d, strict=True)]):
            return False
    return True


def _advance(regs: dict[str, Lanes], shared: dict[int, list[int]], tpl: Template, n: int) -> None:
    """The moving registers and last shared addresses n iterations on."""
    for r, d in tpl.regs.items():
        regs[r] = [x + n * s for x, s in zip(regs[r], d, strict=True)]
    for i, e in tpl.shared.items():
        shared[i] = [x + n * s for x, s in zip(shared[i], e, strict=True)]


def _restore(walk: Walk, saved: _Saved) -> None:
    """The run's state as `saved` holds it (its copies become the run's)."""
    w, m = walk.w, saved.mark
    w.regs, w.last_shared, w.pending, w.vec_ok = m.regs, m.shared, m.pending, m.vec_ok
    w.counters = m.counters
    w.streaming = saved.streaming
    w.restore_reuse(saved.reuse)
    del w.atomic_log[saved.atomics:]
    assert w.events is not None and w.compares is not None
    del w.events[m.events:]
    del w.compares[m.compares:]
    walk.pcs, walk.steps, walk.spans = saved.pcs, m.clock, saved.spans
    for t in list(walk.snaps):
        if t in m.rows:
            del walk.snaps[t][m.rows[t]:]
        else:
            del walk.snaps[t]
