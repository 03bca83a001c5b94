"""What separates the leaders a tie leaves (issue 18, item 3).

When several points are predicted within the model's error of the best, a bare "a tie"
leaves the user to guess what to try. Among the tied points: which parameters they all
share (the model is sure of those), and for each parameter they differ in, the best
predicted time per value: the one whose values move the time most is what a measurement
should settle first. Only the model's predictions are used; the text says so.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Separation:
    param: str
    best_ms: tuple[tuple[str, float], ...]  # value -> best predicted time among the ties with it
    spread: float  # (slowest of those bests) / (fastest) - 1


@dataclass(frozen=True)
class Leaders:
    agreed: tuple[tuple[str, str], ...]  # parameters every tied point has the same value of
    separations: tuple[Separation, ...]  # the others, the largest spread first

    def to_dict(self) -> dict[str, Any]:
        return {"agreed": dict(self.agreed),
                "separations": [{"param": s.param, "spread": s.spread,
                                 "best_predicted_ms": dict(s.best_ms)}
                                for s in self.separations]}


def leaders(points: Sequence[tuple[dict[str, Any], float]]) -> Leaders | None:
    """(params, predicted ms) of the tied points -> what they share and what separates
    them; None for fewer than two."""
    if len(points) < 2:
        return None
    # the parameters every tied point has (a shipped family's entries have different ones)
    names = [k for k in points[0][0] if all(k in params for params, _ in points)]
    agreed, seps = [], []
    for name in names:
        best: dict[str, float] = {}
        for params, ms in points:
            v = str(params.get(name))
            best[v] = min(ms, best.get(v, ms))
        if len(best) == 1:
            agreed.append((name, next(iter(best))))
            continue
        lo, hi = min(best.values()), max(best.values())
        seps.append(Separation(name, tuple(sorted(best.items(), key=lambda kv: kv[1])),
                               hi / lo - 1 if lo > 0 else 0.0))
    seps.sort(key=lambda s: -s.spread)
    return Leaders(tuple(agreed), tuple(seps))


def describe(lead: Leaders, count: int, error: float) -> str:
    """One paragraph: what the tied points share, which parameter moves the predicted time
    most and by how much, which move it little."""
    parts = []
    if lead.agreed:
        parts.append("all have " + ", ".join(f"{k}={v}" for k, v in lead.agreed))
    if lead.separations:
        top = lead.separations[0]
        values = ", ".join(f"{top.param}={v} {ms:.3g} ms" for v, ms in top.best_ms)
        parts.append(f"{top.param} moves the predicted time most ({values}: "
                     f"{top.spread:.1%} apart)")
        small = [s.param for s in lead.separations[1:] if s.spread < 0.01]
        if small:
            parts.append(", ".join(small) + " change it by under 1%")
    return (f"The {count} tied points: " + "; ".join(parts)
            + f". The model cannot order them closer than its error ({error:.0%}): "
            "measure them (`occupancy measure ... --budget N`).")
