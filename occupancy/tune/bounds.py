"""How much work one tuning space may ask for, counted before anything is compiled.

The point cap alone does not bound the work: 2,000 points with 2,000 distinct define sets
are 2,000 compiler runs, and 10,000 template instances in one build keep nvcc busy for
minutes. Each bound is an error (exit 2) naming the key that drives it, the limit, and
the option that raises it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from occupancy.core.errors import OccupancyError
from occupancy.inputs.expr import Expr, ExprError
from occupancy.inputs.safety import define_value, inert

if TYPE_CHECKING:
    from occupancy.tune.spaces import Point, TuneSpec

MAX_COMPILES = 64  # distinct define sets: one compiler run each
MAX_INSTANCES = 256  # template instances of one compile (name expressions)


@dataclass(frozen=True)
class WorkLimits:
    compiles: int = MAX_COMPILES
    instances: int = MAX_INSTANCES


def check_work(spec: TuneSpec, pts: Sequence[Point], limits: WorkLimits | None = None) -> None:
    """Refuse a space whose points need more compiles, or more instances in one compile,
    than the limits allow."""
    lim = limits or WorkLimits()
    groups: dict[tuple[tuple[str, str], ...], set[str]] = {}
    for p in pts:
        groups.setdefault(p.defines, set()).add(p.function)
    where = f"{spec.manifest}: kernel '{inert(spec.name)}'"
    if len(groups) > lim.compiles:
        raise OccupancyError(f"{where}: defines: the space needs {len(groups):,} separate "
                             f"compiles (one per distinct set of defines), over {lim.compiles:,}: "
                             "narrow the space, add restrict, or raise --max-compiles")
    most = max((len(v) for v in groups.values()), default=0)
    if most > lim.instances:
        raise OccupancyError(f"{where}: function: one compile would instantiate {most:,} "
                             f"template instances, over {lim.instances:,}: narrow the space, "
                             "add restrict, or raise --max-instances")


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
