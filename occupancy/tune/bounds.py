"""How much work one tuning space may ask for, counted before anything is compiled.

The point cap alone does not bound the work: 2,000 points with 2,000 distinct define sets
are 2,000 compiler runs, and 10,000 template instances in one build keep nvcc busy for
minutes. Each bound is an error (exit 2) naming the key that drives it, the limit, and
the option that raises it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

from occupancy.core.errors import OccupancyError
from occupancy.inputs.expr import Expr, ExprError
from occupancy.inputs.safety import define_value, inert

if TYPE_CHECKING:
    from occupancy.inputs.manifest.tuning import TuneSpec

MAX_COMPILES = 64  # compiler runs: one per distinct define set and chunk of instances
MAX_INSTANCES = 256  # template instances of one compile (name expressions)
INSTANCES_PER_BUILD = 24  # instances one compile holds (a compile is serial inside)


class Point(Protocol):  # a point of the space (tune/spaces.py), as far as its build goes
    @property
    def defines(self) -> tuple[tuple[str, str], ...]: ...
    @property
    def function(self) -> str: ...


@dataclass(frozen=True)
class WorkLimits:
    compiles: int = MAX_COMPILES
    instances: int = MAX_INSTANCES


def check_work(spec: TuneSpec, pts: Sequence[Point], limits: WorkLimits | None = None) -> None:
    """Refuse a space whose points need more compiles, or more instances in one compile,
    than the limits allow. A compile holds one set of defines and up to
    INSTANCES_PER_BUILD of its template instances."""
    lim = limits or WorkLimits()
    groups: dict[tuple[tuple[str, str], ...], set[str]] = {}
    for p in pts:
        groups.setdefault(p.defines, set()).add(p.function)
    where = f"{spec.manifest}: kernel '{inert(spec.name)}'"
    per = min(INSTANCES_PER_BUILD, lim.instances)
    compiles = sum(-(-len(v) // per) for v in groups.values())
    if compiles > lim.compiles:
        raise OccupancyError(f"{where}: defines: the space needs {compiles:,} separate "
                             f"compiles (one per set of defines and {per} template instances), "
                             f"over {lim.compiles:,}: narrow the space, add restrict, or raise "
                             "--max-compiles")


def point_defines(spec: TuneSpec, env: Mapping[str, Any], where: str
                  ) -> tuple[tuple[str, str], ...]:
    """The -D pairs of one point: an expression's value (a number, true/false or a word of
    the space) checked as any define value."""
    out = []
    for k, v in spec.defines.items():
        if isinstance(v, Expr):
            try:
                v = define_value(v(env), f"{where}: defines.{k}")
            except ExprError as exc:
                raise OccupancyError(f"{where}: defines.{k}: {exc}") from None
        out.append((k, v))
    return tuple(sorted(out))
