"""`occupancy check`: a launch manifest in, one verdict per kernel x device out.

The manifest is validated here (file:line errors); resources are resolved by a function
the caller passes (numbers from the manifest, or the compiler / a ptxas log / a cubin, in
resources.py), so the verdict logic itself is pure.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .device import Device
from .errors import OccupancyError
from .files import read_yaml
from .profiles import load_device
from .resources import KernelResources
from .solver import LIMIT_NAMES, OccupancyResult, cliffs, solve


class ManifestError(OccupancyError):
    """A manifest that cannot be read: the message names file, line and key."""

    def __init__(self, message: str, path: str, line: int | None = None) -> None:
        super().__init__(f"{path}: " + (f"line {line}: " if line else "") + message)
        self.path, self.line = path, line


_TOP_KEYS = {"devices", "min_occupancy", "kernels"}
_KERNEL_KEYS = {
    "name", "block", "registers", "static_shared_memory", "dynamic_shared_memory",
    "opt_in_shared_memory", "max_threads_per_block", "min_occupancy", "devices",
    "max_registers", "no_spills", "source", "function", "defines", "ptxas_log", "cubin",
    "carveout", "barriers", "spill_stores_bytes", "spill_loads_bytes",
}


@dataclass(frozen=True)
class KernelSpec:
    """One manifest entry."""

    name: str
    line: int
    block: tuple[int, ...]
    devices: tuple[str, ...]
    min_occupancy: float
    registers: int | None = None
    static_shared_memory: int | None = None
    dynamic_shared_memory: int = 0
    opt_in_shared_memory: bool = False
    max_threads_per_block: int | None = None
    max_registers: int | None = None
    no_spills: bool = False
    spill_stores_bytes: int = 0
    spill_loads_bytes: int = 0
    source: str | None = None
    function: str | None = None
    defines: Mapping[str, Any] = field(default_factory=dict)
    ptxas_log: str | None = None
    cubin: str | None = None
    carveout: int | None = None
    barriers: int | None = None

    @property
    def threads(self) -> int:
        n = 1
        for d in self.block:
            n *= d
        return n


@dataclass(frozen=True)
class Manifest:
    path: str
    kernels: tuple[KernelSpec, ...]
    devices: dict[str, Device]  # every device any kernel targets, by the name used


@dataclass(frozen=True)
class Verdict:
    kernel: str
    device: str
    line: int
    ok: bool
    problems: tuple[str, ...]
    active_blocks_per_sm: int
    occupancy: float
    limiters: tuple[str, ...]
    registers_per_thread: int
    registers_source: str
    result: OccupancyResult


def _find_line(lines: list[str], pattern: str, start: int = 0) -> int | None:
    rx = re.compile(pattern)
    for i in range(start, len(lines)):
        if rx.search(lines[i]):
            return i + 1
    return None


def _int(v: Any, key: str, fail: Callable[[str, str], ManifestError], minimum: int = 0) -> int:
    if isinstance(v, bool) or not isinstance(v, int) or v < minimum:
        raise fail(f"{key} must be an integer >= {minimum}, got {v!r}", key)
    return v


def _size(v: Any, key: str, fail: Callable[[str, str], ManifestError]) -> int:
    if isinstance(v, str):
        from .units import parse_bytes

        try:
            return parse_bytes(v)
        except OccupancyError as exc:
            raise fail(f"{key}: {exc}", key) from None
    return _int(v, key, fail)


def _block(v: Any, fail: Callable[[str, str], ManifestError]) -> tuple[int, ...]:
    dims = [v] if isinstance(v, int) and not isinstance(v, bool) else v
    if (not isinstance(dims, list) or not 1 <= len(dims) <= 3
            or not all(isinstance(d, int) and not isinstance(d, bool) and d > 0 for d in dims)):
        raise fail(f"block must be a positive integer or a list [x, y, z] of 1-3, got {v!r}",
                   "block")
    return tuple(dims)


def _devices(v: Any, key_line: int | None, path: str) -> tuple[str, ...]:
    if isinstance(v, str):
        v = [v]
    if not isinstance(v, list) or not v or not all(isinstance(d, str) and d for d in v):
        raise ManifestError(f"devices must be a non-empty list of device names or profile paths, "
                            f"got {v!r}", path, key_line)
    return tuple(v)


def _fraction(v: Any, key: str, fail: Callable[[str, str], ManifestError]) -> float:
    if isinstance(v, bool) or not isinstance(v, (int, float)) or not 0 <= v <= 1:
        raise fail(f"{key} must be a fraction 0-1 (0.5 = 50%), got {v!r}", key)
    return float(v)


class _Entry:
    """Reads one kernel entry; every error names the manifest line of the offending key."""

    def __init__(self, entry: dict[str, Any], start: int, index: int, lines: list[str],
                 path: str, base: Path) -> None:
        self.entry, self.start, self.lines, self.path, self.base = entry, start, lines, path, base
        self.label = entry.get("name") or index + 1

    def fail(self, msg: str, key: str) -> ManifestError:
        line = _find_line(self.lines, rf"^\s*(-\s*)?{re.escape(key)}\s*:", self.start - 1)
        return ManifestError(f"kernel '{self.label}': {msg}", self.path, line or self.start)

    def opt_int(self, key: str, minimum: int = 0) -> int | None:
        return _int(self.entry[key], key, self.fail, minimum) if key in self.entry else None

    def flag(self, key: str) -> bool:
        v = self.entry.get(key, False)
        if not isinstance(v, bool):
            raise self.fail(f"{key} must be true or false, got {v!r}", key)
        return v

    def size(self, key: str) -> int | None:
        return _size(self.entry[key], key, self.fail) if key in self.entry else None

    def rel(self, key: str) -> str | None:
        v = self.entry.get(key)
        if v is None:
            return None
        if not isinstance(v, str):
            raise self.fail(f"{key} must be a path", key)
        q = Path(v) if os.path.isabs(v) else self.base / v
        if "\x00" in v or not q.is_file():
            raise self.fail(f"{key}: no such file {q}", key)
        return str(q)

    def spec(self, default_devices: tuple[str, ...] | None, floor: float) -> KernelSpec:
        import difflib

        entry = self.entry
        for key in entry:
            if key not in _KERNEL_KEYS:
                near = difflib.get_close_matches(str(key), _KERNEL_KEYS, n=1)
                raise self.fail(f"unknown key '{key}'" + (f"; did you mean '{near[0]}'?" if near else ""),
                                str(key))
        name = entry.get("name")
        if not isinstance(name, str) or not name:
            raise self.fail("needs a 'name:' (a non-empty string)", "name")
        if "block" not in entry:
            raise self.fail("needs 'block:' (threads per block: 256 or [x, y, z])", "name")
        block = _block(entry["block"], self.fail)
        if not any(k in entry for k in ("registers", "source", "ptxas_log", "cubin")):
            raise self.fail("give its resources: 'registers:' (and the smem sizes), or 'source:' "
                            "to compile, or 'ptxas_log:' / 'cubin:'", "name")
        if sum(k in entry for k in ("source", "ptxas_log", "cubin")) > 1:
            raise self.fail("give one of 'source:', 'ptxas_log:' or 'cubin:', not several", "source")
        devs = (_devices(entry["devices"], self.fail("", "devices").line, self.path)
                if "devices" in entry else default_devices)
        if not devs:
            raise self.fail("no devices: add 'devices:' at the top of the manifest or to this kernel",
                            "name")
        kfloor = (_fraction(entry["min_occupancy"], "min_occupancy", self.fail)
                  if "min_occupancy" in entry else floor)
        defines = entry.get("defines", {})
        if not isinstance(defines, dict):
            raise self.fail("defines must be a mapping, e.g. {TILE: 32}", "defines")
        function = entry.get("function")
        if function is not None and not isinstance(function, str):
            raise self.fail("function must be the kernel's name in the source", "function")
        carveout = self.opt_int("carveout")
        if carveout is not None and carveout > 100:
            raise self.fail(f"carveout is a percentage 0-100, got {carveout}", "carveout")
        return KernelSpec(
            name=name, line=self.start, block=block, devices=devs, min_occupancy=kfloor,
            registers=self.opt_int("registers"),
            static_shared_memory=self.size("static_shared_memory"),
            dynamic_shared_memory=self.size("dynamic_shared_memory") or 0,
            opt_in_shared_memory=self.flag("opt_in_shared_memory"),
            max_threads_per_block=self.opt_int("max_threads_per_block", 1),
            max_registers=self.opt_int("max_registers", 1),
            no_spills=self.flag("no_spills"),
            spill_stores_bytes=self.opt_int("spill_stores_bytes") or 0,
            spill_loads_bytes=self.opt_int("spill_loads_bytes") or 0,
            source=self.rel("source"), function=function, defines=defines,
            ptxas_log=self.rel("ptxas_log"), cubin=self.rel("cubin"), carveout=carveout,
            barriers=self.opt_int("barriers"),
        )


def load_manifest(path: str | os.PathLike[str]) -> Manifest:
    """Read and validate a launch manifest; relative paths in it are relative to its file."""
    p = Path(path)
    data, text = read_yaml(p, ManifestError, "give the path of a launch manifest (see README, "
                           "'occupancy check')")
    lines = text.splitlines()
    spath = str(p)
    if not isinstance(data, dict):
        raise ManifestError("a manifest is a mapping with 'kernels:' (and optional 'devices:', "
                            "'min_occupancy:')", spath, 1)
    import difflib

    for key in data:
        if key not in _TOP_KEYS:
            near = difflib.get_close_matches(str(key), _TOP_KEYS, n=1)
            raise ManifestError(f"unknown key '{key}'" + (f"; did you mean '{near[0]}'?" if near else
                                f"; allowed: {', '.join(sorted(_TOP_KEYS))}"), spath,
                                _find_line(lines, rf"^{re.escape(str(key))}\s*:"))
    default_devices = (_devices(data["devices"], _find_line(lines, r"^devices\s*:"), spath)
                       if "devices" in data else None)
    floor = 0.0
    if "min_occupancy" in data:
        floor = _fraction(data["min_occupancy"], "min_occupancy",
                          lambda m, k: ManifestError(m, spath, _find_line(lines, r"^min_occupancy")))
    kernels = data.get("kernels")
    if not isinstance(kernels, list) or not kernels:
        raise ManifestError("'kernels:' must be a non-empty list of kernel entries", spath,
                            _find_line(lines, r"^kernels\s*:"))
    specs: list[KernelSpec] = []
    cursor = 0
    for i, entry in enumerate(kernels):
        start = _find_line(lines, r"^\s*-\s", cursor) or 1
        cursor = start
        if not isinstance(entry, dict):
            raise ManifestError(f"kernel entry {i + 1} must be a mapping with at least name and block",
                                spath, start)
        specs.append(_Entry(entry, start, i, lines, spath, p.parent).spec(default_devices, floor))
    devices: dict[str, Device] = {}
    for spec in specs:
        for d in spec.devices:
            if d in devices:
                continue
            ref = d
            if (d.endswith((".yaml", ".yml")) or "/" in d) and not os.path.isabs(d):
                ref = str(p.parent / d)
            try:
                devices[d] = load_device(ref)
            except OccupancyError as exc:
                line = _find_line(lines, re.escape(d)) or spec.line
                raise ManifestError(str(exc), spath, line) from None
    return Manifest(spath, tuple(specs), devices)


Resolver = Callable[[KernelSpec, Device], KernelResources]


def given_resources(spec: KernelSpec) -> KernelResources:
    """Resources written in the manifest as numbers."""
    return KernelResources(spec.function or spec.name, spec.registers or 0,
                           spec.static_shared_memory or 0, spec.barriers if spec.barriers is not None else 1,
                           0, spec.spill_stores_bytes, spec.spill_loads_bytes,
                           spec.max_threads_per_block, "manifest")


def _pct(x: float) -> str:
    return f"{x * 100:.1f}%".replace(".0%", "%")


def verdict(spec: KernelSpec, dev: Device, res: KernelResources) -> Verdict:
    """Can it launch, does it reach its floor, does it keep the register / spill rules."""
    bound = spec.max_threads_per_block or res.max_threads_per_block
    static = spec.static_shared_memory if spec.static_shared_memory is not None \
        else res.static_shared_memory
    regs = res.registers_per_thread  # the manifest's number when no binary or source is given
    barriers = spec.barriers if spec.barriers is not None else max(res.barriers, 1)
    r = solve(dev, spec.threads, regs, static, spec.dynamic_shared_memory, spec.carveout, bound,
              barriers, opt_in=spec.opt_in_shared_memory)
    problems = list(r.cannot_launch)
    if r.launchable and r.occupancy < spec.min_occupancy:
        limiter = ", ".join(n.replace("_", " ") for n in LIMIT_NAMES if n in r.limiters)
        fix = ""
        reg_cliff, smem_cliff = cliffs(dev, r)
        if "registers" in r.limiters and reg_cliff.gain_at is not None:
            fix = (f": use <= {reg_cliff.gain_at} registers for {reg_cliff.gain_blocks} "
                   f"block{'s' if reg_cliff.gain_blocks != 1 else ''}")
        elif "shared_memory" in r.limiters and smem_cliff.gain_at is not None:
            fix = (f": use <= {smem_cliff.gain_at:,} B of shared memory per block for "
                   f"{smem_cliff.gain_blocks} blocks")
        elif "warps" in r.limiters or "blocks" in r.limiters:
            fix = ": change the block size"
        problems.append(f"occupancy {_pct(r.occupancy)} is below the floor of "
                        f"{_pct(spec.min_occupancy)} (limited by {limiter}{fix})")
    if spec.max_registers is not None and regs > spec.max_registers:
        problems.append(f"{regs} registers per thread exceed max_registers {spec.max_registers}"
                        f" ({res.source})")
    if spec.no_spills and res.spills:
        problems.append(f"spills {res.spill_stores_bytes} B stored / {res.spill_loads_bytes} B "
                        f"loaded per thread ({res.source}); no_spills is set")
    return Verdict(spec.name, dev.key, spec.line, not problems, tuple(problems),
                   r.active_blocks_per_sm, r.occupancy,
                   tuple(n for n in LIMIT_NAMES if n in r.limiters), regs, res.source, r)


def evaluate(manifest: Manifest, resolve: Resolver | None = None) -> list[Verdict]:
    """Every kernel on every device it targets, in manifest order."""
    out = []
    for spec in manifest.kernels:
        for name in spec.devices:
            dev = manifest.devices[name]
            res = given_resources(spec) if resolve is None else resolve(spec, dev)
            out.append(verdict(spec, dev, res))
    return out
