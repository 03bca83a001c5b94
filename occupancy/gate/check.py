"""`occupancy check`: a launch manifest in, one verdict per kernel x device out.

The manifest is validated here with exact node positions (file:line in every message).
A whole-file problem (not YAML, no `kernels:` list) stops the run; a problem with one
entry, one device or one compile becomes an `error` verdict for that entry or pair while
every other pair is still judged. Resources come from a resolver the caller passes
(numbers from the manifest, or the toolchain), so the verdict logic itself is pure.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from occupancy.build.resolve import given_resources
from occupancy.build.resources import KernelResources
from occupancy.core.device import Device
from occupancy.core.errors import OccupancyError
from occupancy.gate.judge import Verdict, error_verdict, verdict
from occupancy.inputs.manifest import KernelSpec, Manifest

__all__ = ["Resolver", "Verdict", "error_verdict", "evaluate", "exit_code", "tally", "verdict"]


Resolver = Callable[[KernelSpec, Device], KernelResources]


def evaluate(manifest: Manifest, resolve: Resolver | None = None,
             prepare: Callable[[list[tuple[KernelSpec, Device]]], None] | None = None
             ) -> list[Verdict]:
    """Every kernel on every device it targets, in manifest order; an entry, device or
    compile that fails is an error verdict, and the others are still judged.
    `prepare` sees every (spec, device) pair first (the toolchain compiles them in parallel).
    Triton entries give one verdict per config x device (gate/triton_check.py)."""
    pairs = [(s, manifest.devices[d]) for s in manifest.kernels if s.error is None
             for d in s.devices if d in manifest.devices]
    if prepare is not None:
        prepare(pairs)
    out = []
    for spec in manifest.kernels:
        if spec.error is not None:
            out += [error_verdict(spec, d, spec.error) for d in spec.devices]
            continue
        for name in spec.devices:
            if name in manifest.device_errors:
                out.append(error_verdict(spec, name, *manifest.device_errors[name]))
                continue
            dev = manifest.devices[name]
            try:
                res = given_resources(spec) if resolve is None else resolve(spec, dev)
                out.append(verdict(spec, dev, res))
            except OccupancyError as exc:
                out.append(error_verdict(spec, dev.key, str(exc)))
    if manifest.triton:
        from occupancy.gate.triton_check import triton_verdicts

        out += triton_verdicts(manifest)
        out.sort(key=lambda v: v.line)  # stable: manifest order, each entry's own order kept
    return out


def exit_code(verdicts: list[Verdict]) -> int:
    """2 if any verdict is an error, else 1 if any failed, else 0."""
    if any(v.status == "error" for v in verdicts):
        return 2
    return 0 if all(v.ok for v in verdicts) else 1


def tally(verdicts: Sequence[Verdict]) -> tuple[int, int, int]:
    """(passed, failed, errors)."""
    passed = sum(v.status == "pass" for v in verdicts)
    errors = sum(v.status == "error" for v in verdicts)
    return passed, len(verdicts) - passed - errors, errors
