"""How the core's results are said in every output: percentages and limiter names, in the
solver's order (one place, so text, Markdown, HTML and check messages agree)."""

from __future__ import annotations

from collections.abc import Iterable

from occupancy.core.solver import LIMIT_NAMES

LIMITER_LABELS = {"warps": "warps", "registers": "registers", "shared_memory": "shared memory",
                  "blocks": "blocks", "barriers": "barriers",
                  "virtual_resources": "virtual resources"}


def pct(x: float) -> str:
    """0.125 -> '12.5%', 0.5 -> '50%'."""
    return f"{x * 100:.1f}%".replace(".0%", "%")


def limiters(names: Iterable[str]) -> str:
    """The limiters in the solver's order, as people read them ('shared memory')."""
    chosen = set(names)  # any iterable: a result's frozenset, a JSON list
    return ", ".join(LIMITER_LABELS[n] for n in LIMIT_NAMES if n in chosen)
