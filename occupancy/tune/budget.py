"""Which points of a ranked space to time, and when to stop: `measure --budget N`.

The model ranks every point; measuring them all is what tuners do and what this avoids.
The search times the predicted best first, then, one point at a time, the point that could
most plausibly beat the best measured so far: its prediction, corrected by what the
measurements of its kind (points the model calls bound by the same roof) said of the model,
less the model's doubt about it (the error band; twice that for a kind nothing measured
yet, so a point of another kind gets its chance). It stops when no unmeasured point's
optimistic time beats the best measured within the timing noise, or at the budget.

Pure: the caller times the points (gpu/measure.py on a GPU, or a record of measured times
in `simulate`, which replays a tuning space's ground truth for the comparison with other
tuners in bench/budget_compare.py).
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

from occupancy.tune.model import BAND_RATIO

# The model's error band on the validation corpus (tune/model.py), as a log, and
# the timing noise within which two medians are the same (repeat runs on the H200: 1-2%).
MODEL_BAND = math.log(BAND_RATIO)
NOISE = 0.02
Z = 2.0  # standard errors of optimism: a point is skipped only when it is that sure to lose


@dataclass(frozen=True)
class Candidate:
    key: str  # the point's parameters, as text
    predicted_ms: float
    kind: str  # the roof the model says binds it ("fp32", "lsu", "dram", ...)


@dataclass
class Search:
    """The state of one budgeted search over `candidates` (ranked by prediction)."""

    candidates: Sequence[Candidate]
    budget: int
    measured: dict[str, float] = field(default_factory=dict)  # key -> measured ms
    stopped: str = ""  # why it ended ("" while it goes on)

    def correction(self, kind: str) -> tuple[float, float]:
        """(log correction, log doubt) for a kind: the mean log(measured / predicted) of its
        measured points (else of all), and two standard errors of a point's time: the band
        and the spread the measurements showed around the correction, added in quadrature
        (a kind nothing measured yet counts the band twice)."""
        by_key = {c.key: c for c in self.candidates}
        logs = {k: math.log(ms / by_key[k].predicted_ms) for k, ms in self.measured.items()
                if math.isfinite(ms)}
        own = [v for k, v in logs.items() if by_key[k].kind == kind]
        pool = own or list(logs.values())
        shift = statistics.fmean(pool) if pool else 0.0
        spread = statistics.pstdev(pool) if len(pool) > 1 else 0.0
        band = MODEL_BAND if own else 2 * MODEL_BAND
        return shift, Z * math.hypot(band, spread)

    def optimistic_ms(self, c: Candidate) -> float:
        shift, doubt = self.correction(c.kind)
        return c.predicted_ms * math.exp(shift - doubt)

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
        if len(self.measured) < -(-self.budget // 2):
            return min(todo, key=lambda c: c.predicted_ms)  # the first half: the leaders
        pick = min(todo, key=self.optimistic_ms)
        best = self.best()
        assert best is not None
        if self.optimistic_ms(pick) >= best[1] * (1 - NOISE):
            self.stopped = "no unmeasured point can beat the best measured (within the noise)"
            return None
        return pick

    def record(self, key: str, ms: float) -> None:
        if not (ms > 0 and math.isfinite(ms)):
            ms = math.inf  # a point that failed to verify or run never wins
        self.measured[key] = ms


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
