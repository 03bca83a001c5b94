"""Which points of a ranked space to time, and when to stop: `measure --budget N`.

The model ranks every point; measuring them all is what tuners do and what this avoids.
The search is a Bayesian optimisation whose prior is the model: a point's log time is its
predicted log time plus an error the model makes, and that error is a Gaussian process
over the points' parameters. Part of it every point of the kernel shares (the model reads
the whole kernel too fast or too slow: a wide prior, OFFSET, which the first timing
settles); the rest, of the size of the model's error band on the validation corpus, a
point shares with its neighbours, falling by RHO for each parameter in which two points
differ (a power-of-two step of a numeric parameter counts as one difference, a larger
step too). A cost the model names but does not price (a point's `doubts`: tune/ranked.py,
e.g. a k loop ptxas kept rolled) is a further error of the band's size, shared by the points
left with the same doubts and by no other: where the leaders all have one, what they measure
says little about the points without it, which stay to be tested. Where the timings show
the model's error wider than the band, the spread widens with it. The first half of the
budget goes to the predicted leaders; then, one at a time, the point whose optimistic
time (expected less Z standard deviations) is lowest: the point the measurements leave
most room to beat the best so far, often one unlike those timed. Points with no usable
prediction come after every point that could still win, in the order given. It stops when
no unmeasured point's optimistic time beats the best measured within the timing noise, or
at the budget.

Pure: the caller times the points (gpu/measure.py on a GPU, or a record of measured times
in `simulate`, which replays a tuning space's ground truth for the comparison with other
tuners in bench/budget_compare.py).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from occupancy.tune.model import BAND_RATIO
from occupancy.tune.records import SearchSummary

# The model's error band on the validation corpus (tune/model.py), as a log: the prior
# spread of its error. The timing noise within which two medians are the same (repeat runs
# on the H200: 1-2%).
MODEL_BAND = math.log(BAND_RATIO)
NOISE = 0.02
Z = 2.0  # standard deviations of optimism: a point is skipped only when it is that sure to lose
# The error every point of a kernel shares (the model reads the whole kernel too fast or too
# slow, as on a device whose constants were never measured): a prior twice the band's, so
# that the first timing sets it and a bias up to ~2x widens no point's doubt (a larger one
# does: a model that far off here is likely off between points too).
OFFSET = 2 * MODEL_BAND
RHO = 0.7  # how much of the rest of the error two points share, per parameter they differ in
LEAD = 0.5  # the share of the budget spent on the predicted leaders before the process picks
MAX_FIT = 64  # measured points the process is fitted on (later ones still count as timed)


@dataclass(frozen=True)
class Candidate:
    key: str  # the point's parameters, as text
    predicted_ms: float
    # name -> value: who its neighbours are (not part of its identity: the key is)
    params: Mapping[str, Any] = field(default_factory=dict, compare=False, hash=False)
    # the costs the model names for this point and does not price (tune/ranked.doubts)
    doubts: tuple[str, ...] = field(default=(), compare=False, hash=False)


def distance(a: Mapping[str, Any], b: Mapping[str, Any]) -> float:
    """How many parameters two points differ in: a positive number's step counts by its
    log2 ratio, at most 1 (64 -> 128 is 1, 64 -> 96 is 0.58); any other change counts 1
    (text, flags, a value missing on one side)."""
    names = sorted(a.keys() | b.keys())
    return _apart(_coords(a, names), _coords(b, names))


_MISSING = object()


def _coords(params: Mapping[str, Any], names: Sequence[str]) -> tuple[Any, ...]:
    """A point's parameters as distance() compares them: log2 of a positive number, else
    the value itself (boxed, so that it never equals a number)."""
    out: list[Any] = []
    for n in names:
        v = params.get(n, _MISSING)
        if isinstance(v, (int, float)) and not isinstance(v, bool) and v > 0:
            try:
                out.append(float(math.log2(v)))
                continue
            except (OverflowError, ValueError):
                pass
        out.append((v,))
    return tuple(out)


def _apart(a: tuple[Any, ...], b: tuple[Any, ...]) -> float:
    d = 0.0
    for x, y in zip(a, b, strict=True):
        if x == y:
            continue
        both = isinstance(x, float) and isinstance(y, float)
        d += min(1.0, abs(x - y)) if both else 1.0
    return d


def _log_predicted(c: Candidate) -> float:
    """log of a usable prediction; inf for none (0, negative, NaN, inf): timed last."""
    p = c.predicted_ms
    return math.log(p) if p > 0 and math.isfinite(p) else math.inf


class _Posterior:
    """The Gaussian process on log(measured) - log(predicted), updated one measurement at a
    time (a Cholesky factor grown by a row): for every candidate j, v[j] = L^-1 k(fitted, j),
    and w = L^-1 y. Its covariance: OFFSET^2 (the kernel's shared error), plus MODEL_BAND^2
    where two points have the same doubts (the error of what the model leaves unpriced for
    them; only where the points with a prediction have two or more sets of doubts), plus
    MODEL_BAND^2 RHO^distance (a point's own, shared with its neighbours; differing doubts
    count as one more parameter), the timing noise on the diagonal. A set of doubts is one
    class: {rolled, walked} shares nothing with {rolled} (no corpus space has both)."""

    def __init__(self, candidates: Sequence[Candidate]) -> None:
        self.cands = candidates
        names = sorted({n for c in candidates for n in c.params})
        self.coords = [_coords(c.params, names) for c in candidates]
        classes: dict[frozenset[str], int] = {}  # each set of doubts, numbered once
        self.doubts = [classes.setdefault(frozenset(c.doubts), len(classes)) for c in candidates]
        seen = {d for d, c in zip(self.doubts, candidates, strict=True)
                if math.isfinite(_log_predicted(c))}
        self.local = MODEL_BAND ** 2
        self.doubt = MODEL_BAND ** 2 if len(seen) > 1 else 0.0
        self.prior = OFFSET ** 2 + self.doubt + self.local
        self.fitted: list[int] = []
        self.w: list[float] = []
        self.v: list[list[float]] = [[] for _ in candidates]
        self.scale = 1.0

    def kernel(self, i: int, j: int) -> float:
        apart = _apart(self.coords[i], self.coords[j])
        if self.doubts[i] == self.doubts[j]:
            return OFFSET ** 2 + self.doubt + self.local * RHO ** apart
        return OFFSET ** 2 + self.local * RHO ** (apart + 1)

    def add(self, i: int, error: float) -> None:
        if len(self.fitted) >= MAX_FIT:
            return
        li = list(self.v[i])  # a copy: v[i] itself grows in the loop below
        diag = math.sqrt(max(self.prior + NOISE ** 2 - _dot(li, li), 1e-12))
        self.w.append((error - _dot(li, self.w)) / diag)
        for j, vj in enumerate(self.v):
            vj.append((self.kernel(i, j) - _dot(vj, li)) / diag)
        self.fitted.append(i)
        # How much wider the model's error is on this kernel than its band: the amplitude
        # the timings so far make likeliest (y' K^-1 y / n), never below the band's. The
        # shared offset's wide prior keeps a kernel-wide bias out of it.
        self.scale = math.sqrt(max(1.0, _dot(self.w, self.w) / len(self.w)))

    def log_ms(self, j: int) -> tuple[float, float]:
        """(expected log time, its standard deviation) of candidate j."""
        vj = self.v[j]
        mean = _log_predicted(self.cands[j]) + _dot(vj, self.w)
        return mean, self.scale * math.sqrt(max(self.prior - _dot(vj, vj), 0.0))


def _dot(a: Sequence[float], b: Sequence[float]) -> float:
    return math.fsum(x * y for x, y in zip(a, b, strict=True))


@dataclass
class Search:
    """The state of one budgeted search over `candidates` (ranked by prediction)."""

    candidates: Sequence[Candidate]
    budget: int
    measured: dict[str, float] = field(default_factory=dict)  # key -> measured ms
    stopped: str = ""  # why it ended ("" while it goes on)
    picks: list[tuple[str, str]] = field(default_factory=list)  # (key, why it was timed)

    def __post_init__(self) -> None:
        self._post = _Posterior(self.candidates)
        self._index = {c.key: i for i, c in enumerate(self.candidates)}

    def optimistic_ms(self, c: Candidate) -> float:
        """The time `c` could plausibly take: expected less Z standard deviations."""
        mean, sd = self._post.log_ms(self._index[c.key])
        return math.exp(mean - Z * sd)

    def expected_ms(self, c: Candidate) -> float:
        return math.exp(self._post.log_ms(self._index[c.key])[0])

    def best(self) -> tuple[str, float] | None:
        if not self.measured:
            return None
        key = min(self.measured, key=lambda k: self.measured[k])
        return key, self.measured[key]

    def next(self) -> Candidate | None:
        """The point to time next, or None (and `stopped` says why)."""
        todo = [c for c in self.candidates if c.key not in self.measured]
        if not todo:
            self.stopped = "every point measured"
            return None
        if len(self.measured) >= self.budget:
            self.stopped = f"budget of {self.budget} runs spent"
            return None
        if len(self.measured) < min(LEAD * self.budget, MAX_FIT // 2):
            lead = min(todo, key=_log_predicted)  # the leaders (at most half of what is fitted)
            return self._pick(lead, "a leader" if math.isfinite(_log_predicted(lead)) else
                              "a leader, in order (no prediction)")
        pick = min(todo, key=self.optimistic_ms)
        best = self.best()
        if best is None or self.optimistic_ms(pick) < best[1] * (1 - NOISE):
            why = (f"could beat the best so far ({best[1]:.4g} ms): expected "
                   f"{self.expected_ms(pick):.4g} ms, {self.optimistic_ms(pick):.4g} ms at best"
                   if best else "a leader")
            if self._post.doubt and self._untested(pick):
                why += f"; no point timed has its doubts ({', '.join(pick.doubts) or 'none'})"
            return self._pick(pick, why)
        unknown = [c for c in todo if not math.isfinite(_log_predicted(c))]
        if unknown:  # nothing predicted can win; what has no prediction might: in order
            return self._pick(unknown[0], "no prediction, and no predicted point can win")
        self.stopped = "no unmeasured point can beat the best measured (within the noise)"
        return None

    def _untested(self, c: Candidate) -> bool:
        """Whether no point the process was fitted on has `c`'s doubts (what the model leaves
        unpriced): one that failed, or had no prediction, taught it nothing."""
        post = self._post
        mine = post.doubts[self._index[c.key]]
        return all(post.doubts[i] != mine for i in post.fitted)

    def summary(self) -> SearchSummary:
        """What a record keeps of the search: budget, runs, why it stopped, and its picks."""
        return {"budget": self.budget, "runs": len(self.picks), "stopped": self.stopped,
                "picks": [{"point": k, "why": w} for k, w in self.picks]}

    def _pick(self, c: Candidate, why: str) -> Candidate:
        self.picks.append((c.key, why))
        return c

    def record(self, key: str, ms: float) -> None:
        """A point's measured time; one that failed to verify or run never wins and teaches
        the process nothing."""
        if not (ms > 0 and math.isfinite(ms)):
            self.measured[key] = math.inf
            return
        self.measured[key] = ms
        i = self._index[key]
        predicted = _log_predicted(self.candidates[i])
        if math.isfinite(predicted):
            self._post.add(i, math.log(ms) - predicted)


def run(candidates: Sequence[Candidate], budget: int,
        time_point: Callable[[Candidate], float]) -> Search:
    """Drive a search to its end, timing each chosen point with `time_point`."""
    s = Search(list(candidates), max(1, budget))
    while (c := s.next()) is not None:
        s.record(c.key, time_point(c))
    return s


def simulate(candidates: Sequence[Candidate], truth: Mapping[str, float], budget: int) -> Search:
    """The search replayed on measured times (a point missing from `truth` failed)."""
    return run(candidates, budget, lambda c: truth.get(c.key, math.inf))
