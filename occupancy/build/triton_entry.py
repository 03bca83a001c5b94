"""A manifest's `triton:` entry compiled: every config, for every problem point whose call
specializes differently (M = 1 becomes a constant, 16-divisible sizes get tt.divisibility),
for every target. `tile` ranks the result, `check` gates it.

The arguments' values come from the entry (`problem:` and `values:` expressions); configs
whose calls specialize alike are compiled together (build/triton.py: in parallel, cached).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from occupancy.build.triton import (
    CompileStats,
    TritonKernel,
    canonical_dtype,
    compile_configs,
    triton_version,
)
from occupancy.build.triton_spec import call_from_signature
from occupancy.core.errors import OccupancyError
from occupancy.inputs.manifest.triton import TritonSpec

INSTALL = "needs pip install 'occupancy[triton]' (Triton is not installed)"


@dataclass
class EntryKernels:
    """What compile_entry gives: the kernel of each (config index, point index, cc)."""

    spec: TritonSpec
    ccs: tuple[str, ...]
    triton_version: str
    kernels: dict[tuple[int, int, str], TritonKernel] = field(default_factory=dict)
    stats: CompileStats = field(default_factory=CompileStats)

    def at(self, config: int, point: int, cc: str) -> TritonKernel:
        return self.kernels[(config, point, cc)]


def triton_constexprs(constexprs: Mapping[str, Any]) -> dict[str, Any]:
    """A manifest's constexprs as the launch passes them: a dtype name (fp16, bfloat16)
    becomes Triton's dtype (tl.float16); every other value stays as written."""
    import triton.language as tl

    out: dict[str, Any] = {}
    for k, v in constexprs.items():
        if isinstance(v, str):
            try:
                v = tl.dtype(canonical_dtype(v))
            except (OccupancyError, ValueError, TypeError, AssertionError):
                pass
        out[k] = v
    return out


def describe_calls(spec: TritonSpec) -> dict[str, tuple[dict[str, Any], list[tuple[int, int]]]]:
    """The distinct calls of an entry (as specialize_call takes them) and the (config,
    point) pairs that make each."""
    groups: dict[str, tuple[dict[str, Any], list[tuple[int, int]]]] = {}
    points = spec.points()
    for ci, cfg in enumerate(spec.configs):
        for pi, point in enumerate(points):
            try:
                values = spec.call_values(cfg, point)
            except OccupancyError as exc:
                raise OccupancyError(f"kernel '{spec.name}': values: {exc}") from None
            call = call_from_signature(spec.signature, values, spec.unaligned)
            key = repr(sorted(call.items()))
            groups.setdefault(key, (call, []))[1].append((ci, pi))
    return groups


def _load(spec: TritonSpec) -> None:
    """Import the entry's module here first, so that a module that does not import is one
    line naming it, not a traceback (build/triton.py keeps the loaded module)."""
    from occupancy.build.triton import KernelRef, import_error

    try:
        KernelRef(spec.function, "", spec.module).load()
    except OccupancyError:
        raise
    except Exception as exc:  # noqa: BLE001 - whatever the user's module raises
        raise import_error(f"kernel '{spec.name}': {spec.shown_module}", exc) from None


def compile_entry(spec: TritonSpec, ccs: Sequence[str], *, jobs: int | None = None,
                  cache: bool = True, timeout: float | None = 600) -> EntryKernels:
    """Every config of the entry for every target cc ('9.0'); CompilerUnavailable (one
    line: pip install 'occupancy[triton]') where Triton is not installed."""
    version = triton_version()
    _load(spec)
    consts = triton_constexprs(spec.constexprs)
    ccs = tuple(dict.fromkeys(ccs))
    out = EntryKernels(spec, ccs, version)
    for call, members in describe_calls(spec).values():
        configs = sorted({ci for ci, _ in members})
        built = compile_configs(spec.ref, call, [spec.configs[ci] for ci in configs], ccs,
                                constexprs=consts, jobs=jobs, cache=cache, stats=out.stats,
                                timeout=timeout)
        at = {(ci, cc): built[n * len(ccs) + m] for n, ci in enumerate(configs)
              for m, cc in enumerate(ccs)}
        for ci, pi in members:
            for cc in ccs:
                out.kernels[(ci, pi, cc)] = at[(ci, cc)]
    return out
