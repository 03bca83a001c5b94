"""Which points of a ranked space to time, and when to stop: `measure --budget N`.

The model ranks every point; measuring them all is what tuners do and what this avoids.
The search is a Bayesian optimisation whose prior is the model: a point's log time is its
predicted log time plus an error the model makes, and that error is a Gaussian process
over the points' parameters. Its prior spread is the model's error band on the validation
corpus; half of it is shared by every point of the kernel (the model reads a whole kernel
too fast or too slow) and half is shared by neighbours only, falling by RHO for each
parameter in which two points differ (a power-of-two step of a numeric parameter counts
as one difference, a larger step too). Each measured time updates every point's expected
time and doubt; the next point timed is the one whose optimistic time (expected less Z
standard deviations) is lowest: first the predicted best, then the point the measurements
leave most room to beat the best so far, which is often one unlike those timed. It stops
when no unmeasured point's optimistic time beats the best measured within the timing
noise, or at the budget.

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

# The model's error band on the validation corpus (tune/model.py), as a log: the prior
# spread of its error. The timing noise within which two medians are the same (repeat runs
# on the H200: 1-2%).
MODEL_BAND = math.log(BAND_RATIO)
NOISE = 0.02
Z = 2.0  # standard deviations of optimism: a point is skipped only when it is that sure to lose
SHARED = 0.5  # the part of the model's error (as a variance) every point of a kernel shares
RHO = 0.7  # how much of the rest two points share, per parameter in which they differ
LEAD = 0.5  # the share of the budget spent on the predicted leaders before the process picks
MAX_FIT = 64  # measured points the process is fitted on (later ones still count as timed)


@dataclass(frozen=True)
class Candidate:
    key: str  # the point's parameters, as text
    predicted_ms: float
    params: Mapping[str, Any] = field(default_factory=dict)  # name -> value: its neighbours


def distance(a: Mapping[str, Any], b: Mapping[str, Any]) -> float:
    """How many parameters two points differ in: a positive number's step counts by its
    log2 ratio, at most 1 (64 -> 128 is 1, 64 -> 96 is 0.58); any other change counts 1."""
    d = 0.0
    for name in a.keys() | b.keys():
        x, y = a.get(name), b.get(name)
        if x == y:
            continue
        d += _step(x, y)
    return d


def _step(x: Any, y: Any) -> float:
    """One parameter's share of a distance: min(1, |log2(x / y)|) for two positive
    numbers, else 1 (text, flags, a value missing on one side, a number too large)."""
    if all(isinstance(v, (int, float)) and not isinstance(v, bool) and v > 0 for v in (x, y)):
        try:
            return min(1.0, abs(math.log2(x) - math.log2(y)))
        except (OverflowError, ValueError):
            return 1.0
    return 1.0


class _Posterior:
    """The Gaussian process on log(measured / predicted), updated one measurement at a time
    (a Cholesky factor grown by a row): for every candidate j, v[j] = L^-1 k(fitted, j)."""

    def __init__(self, candidates: Sequence[Candidate]) -> None:
        self.cands = candidates
        self.prior = MODEL_BAND ** 2
        self.fitted: list[int] = []
        self.rows: list[list[float]] = []  # L, lower triangular
        self.w: list[float] = []  # L^-1 y
        self.v: list[list[float]] = [[] for _ in candidates]

    def kernel(self, i: int, j: int) -> float:
        near = RHO ** distance(self.cands[i].params, self.cands[j].params)
        return self.prior * (SHARED + (1 - SHARED) * near)

    def add(self, i: int, log_ratio: float) -> None:
        if len(self.fitted) >= MAX_FIT:
            return
        li = list(self.v[i])  # a copy: v[i] itself grows in the loop below
        diag = math.sqrt(max(self.prior + NOISE ** 2 - _dot(li, li), 1e-12))
        self.w.append((log_ratio - _dot(li, self.w)) / diag)
        self.rows.append(li + [diag])
        for j, vj in enumerate(self.v):
            vj.append((self.kernel(i, j) - _dot(vj, li)) / diag)
        self.fitted.append(i)

    def log_ms(self, j: int) -> tuple[float, float]:
        """(expected log time, its standard deviation) of candidate j."""
        vj = self.v[j]
        predicted = self.cands[j].predicted_ms
        if not predicted > 0:
            return math.inf, 0.0  # no prediction to start from: timed last
        mean = math.log(predicted) + _dot(vj, self.w)
        return mean, self.scale() * math.sqrt(max(self.prior - _dot(vj, vj), 0.0))

    def scale(self) -> float:
        """How much wider the model's error is on this kernel than its band: the amplitude
        the timings so far make likeliest (y' K^-1 y / n), never below the band's."""
        n = len(self.w)
        return math.sqrt(max(1.0, _dot(self.w, self.w) / n)) if n else 1.0


def _dot(a: Sequence[float], b: Sequence[float]) -> float:
    return math.fsum(x * y for x, y in zip(a, b, strict=True))


@dataclass
class Search:
    """The state of one budgeted search over `candidates` (ranked by prediction)."""

    candidates: Sequence[Candidate]
    budget: int
    measured: dict[str, float] = field(default_factory=dict)  # key -> measured ms
    stopped: str = ""  # why it ended ("" while it goes on)

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
        if len(self.measured) < LEAD * self.budget:
            return min(todo, key=lambda c: c.predicted_ms)
        pick = min(todo, key=self.optimistic_ms)
        best = self.best()
        if best is not None and self.optimistic_ms(pick) >= best[1] * (1 - NOISE):
            self.stopped = "no unmeasured point can beat the best measured (within the noise)"
            return None
        return pick

    def record(self, key: str, ms: float) -> None:
        """A point's measured time; one that failed to verify or run never wins and teaches
        the process nothing."""
        if not (ms > 0 and math.isfinite(ms)):
            self.measured[key] = math.inf
            return
        self.measured[key] = ms
        i = self._index[key]
        predicted = self.candidates[i].predicted_ms
        if predicted > 0 and math.isfinite(predicted):
            self._post.add(i, math.log(ms / predicted))


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
