"""`occupancy check`: a launch manifest in, one verdict per kernel x device out.

The manifest is validated here with exact node positions (file:line in every message).
A whole-file problem (not YAML, no `kernels:` list) stops the run; a problem with one
entry, one device or one compile becomes an `error` verdict for that entry or pair while
every other pair is still judged. Resources come from a resolver the caller passes
(numbers from the manifest, or the toolchain), so the verdict logic itself is pure.
"""

from __future__ import annotations

import difflib
import os
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from occupancy.build.resources import KernelResources
from occupancy.core.device import Device
from occupancy.core.errors import FileError, OccupancyError
from occupancy.core.solver import LIMIT_NAMES, OccupancyResult, cliffs, solve
from occupancy.core.words import limiters, pct
from occupancy.inputs.files import YamlDoc, read_yaml
from occupancy.inputs.profiles import load_device
from occupancy.inputs.safety import INT32_MAX, check_define_name, define_value, inert


class ManifestError(FileError):
    """A manifest that cannot be read: the message names file, line and key."""


_DEFAULT_KEYS = {"include_dirs", "flags", "defines"}
_TOP_KEYS = {"devices", "min_occupancy", "kernels", "compilers", *_DEFAULT_KEYS}
_KERNEL_KEYS = {
    "name", "block", "registers", "static_shared_memory", "dynamic_shared_memory",
    "opt_in_shared_memory", "max_threads_per_block", "min_occupancy", "devices",
    "max_registers", "no_spills", "source", "function", "defines", "ptxas_log", "cubin",
    "carveout", "barriers", "spill_stores_bytes", "spill_loads_bytes", "include_dirs", "flags",
    "cluster", "grid", "virtual_resources", "link",
}
MAX_KERNELS = 10_000
MAX_DEVICES = 64


@dataclass(frozen=True)
class KernelSpec:
    """One manifest entry; `error` set when the entry itself cannot be read."""

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
    source: str | None = None  # absolute path
    function: str | None = None
    defines: Mapping[str, str] = field(default_factory=dict)  # typed: true -> "1"
    include_dirs: tuple[str, ...] = ()  # absolute paths
    flags: tuple[str, ...] = ()
    link: tuple[str, ...] = ()  # other sources device-linked with `source` (-rdc)
    compilers: Mapping[str, str] = field(default_factory=dict)  # arch -> nvcc (the manifest's)
    ptxas_log: str | None = None
    cubin: str | None = None
    carveout: int | None = None
    barriers: int | None = None
    cluster: tuple[int, int, int] | None = None
    grid: tuple[int, ...] | None = None
    virtual_resources: int = 0
    shown_source: str | None = None  # as written in the manifest, for messages
    error: str | None = None

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
    devices: dict[str, Device]  # every device that loaded, by the name used
    device_errors: dict[str, tuple[str, int]] = field(default_factory=dict)  # why, line


@dataclass(frozen=True)
class Verdict:
    kernel: str
    device: str
    line: int
    status: str  # "pass", "fail" or "error"
    problems: tuple[str, ...]
    result: OccupancyResult | None = None
    resources: KernelResources | None = None

    @property
    def ok(self) -> bool:
        return self.status == "pass"

    @property
    def active_blocks_per_sm(self) -> int:
        return self.result.active_blocks_per_sm if self.result else 0

    @property
    def occupancy(self) -> float:
        return self.result.occupancy if self.result else 0.0

    @property
    def limiters(self) -> tuple[str, ...]:
        return tuple(n for n in LIMIT_NAMES if self.result and n in self.result.limiters)

    @property
    def registers_per_thread(self) -> int | None:
        return self.resources.registers_per_thread if self.resources else None

    @property
    def registers_source(self) -> str:
        return self.resources.source if self.resources else ""


class _EntryError(OccupancyError):
    def __init__(self, message: str, line: int | None) -> None:
        super().__init__(message)
        self.line = line


def _int(v: Any, what: str, line: int | None, minimum: int = 0) -> int:
    if isinstance(v, bool) or not isinstance(v, int) or not minimum <= v <= INT32_MAX:
        raise _EntryError(f"{what} must be an integer {minimum}..{INT32_MAX:,}, got "
                          f"{inert(repr(v)[:40])}", line)
    return v


def _fraction(v: Any, what: str, line: int | None) -> float:
    if isinstance(v, bool) or not isinstance(v, (int, float)) or not 0 <= v <= 1:
        raise _EntryError(f"{what} must be a fraction 0-1 (0.5 = 50%), got {inert(repr(v)[:40])}",
                          line)
    return float(v)


def _device_names(v: Any, line: int | None) -> tuple[str, ...]:
    if isinstance(v, str):
        v = [v]
    if (not isinstance(v, list) or not v or len(v) > MAX_DEVICES
            or not all(isinstance(d, str) and d for d in v)):
        raise _EntryError(f"devices must be a list of 1-{MAX_DEVICES} device names or profile "
                          f"paths, got {inert(repr(v)[:60])}", line)
    return tuple(v)


def tuning_entry(entry: object) -> bool:
    """An entry for `tile` and `measure`, not `check`: it has a tuning space, or launch
    arguments (a reference kernel that another entry's `reference:` names)."""
    return isinstance(entry, dict) and ("space" in entry or "args" in entry)


def _unknown_key(key: object, allowed: set[str]) -> str:
    near = difflib.get_close_matches(str(key), allowed, n=1)
    return f"unknown key '{inert(str(key))}'" + (f"; did you mean '{near[0]}'?" if near else
                                                  f"; allowed: {', '.join(sorted(allowed))}")


class _Defaults:
    """Top-level include_dirs / flags / defines, applied to every kernel."""

    def __init__(self, doc: YamlDoc, base: Path) -> None:
        self.include_dirs = _dirs(doc.data.get("include_dirs", []), base, doc.line("include_dirs"))
        self.flags = _flags(doc.data.get("flags", []), doc.line("flags"))
        self.defines = _defines(doc.data.get("defines", {}), doc.line("defines"))
        self.compilers = _compilers(doc.data.get("compilers", {}), base, doc.line("compilers"))


def _compilers(v: Any, base: Path, line: int | None) -> dict[str, str]:
    """`compilers: {sm_61: /usr/local/cuda-12.4/bin/nvcc}`: the nvcc that builds an arch."""
    if not isinstance(v, dict) or not all(isinstance(k, str) and re.fullmatch(r"sm_\d{2,3}[af]?", k)
                                          and isinstance(p, str) and p and "\x00" not in p
                                          for k, p in v.items()):
        raise _EntryError("compilers maps an arch to an nvcc, e.g. {sm_61: "
                          "/usr/local/cuda-12.4/bin/nvcc}", line)
    out = {}
    for arch, path in v.items():
        q = Path(path) if os.path.isabs(path) else base / path
        if not q.is_file():
            raise _EntryError(f"compilers.{arch}: no such file {inert(str(q))}", line)
        out[arch] = os.path.abspath(q)
    return out


def _dirs(v: Any, base: Path, line: int | None) -> tuple[str, ...]:
    if not isinstance(v, list) or not all(isinstance(d, str) and d for d in v) or len(v) > 256:
        raise _EntryError("include_dirs must be a list of folders (relative to the manifest)", line)
    out = []
    for d in v:
        if "\x00" in d:
            raise _EntryError("include_dirs: a path contains a NUL byte", line)
        p = Path(d) if os.path.isabs(d) else base / d
        if not p.is_dir():
            raise _EntryError(f"include_dirs: no such folder {inert(str(p))}", line)
        out.append(os.path.abspath(p))
    return tuple(out)


def _flags(v: Any, line: int | None) -> tuple[str, ...]:
    if not isinstance(v, list) or len(v) > 256:
        raise _EntryError("flags must be a list, e.g. [-std=c++17, -rdc=true]", line)
    from occupancy.build.compilers import check_flags

    try:
        fl, defs = check_flags(v, "flags")
    except OccupancyError as exc:
        raise _EntryError(str(exc), line) from None
    return (*fl, *[f"-D{k}={val}" for k, val in defs.items()])


def _defines_raw(v: Any, line: int | None) -> dict[str, Any]:
    """A defines mapping with C-identifier names; values as written (typed later)."""
    if not isinstance(v, dict) or len(v) > 1024:
        raise _EntryError("defines must be a mapping, e.g. {TILE: 32, USE_FAST: true}", line)
    try:
        return {check_define_name(k, "defines"): val for k, val in v.items()}
    except OccupancyError as exc:
        raise _EntryError(str(exc), line) from None


def _defines(v: Any, line: int | None) -> dict[str, str]:
    """Defines typed as the compiler gets them: true/false -> 1/0, numbers and words as is."""
    try:
        return {k: define_value(val, f"defines.{k}") for k, val in _defines_raw(v, line).items()}
    except OccupancyError as exc:  # a bad value; a bad mapping or name is already one
        raise _EntryError(str(exc), line) from None


class _Entry:
    """Reads one kernel entry; every error names the manifest line of the offending key."""

    def __init__(self, doc: YamlDoc, index: int, base: Path) -> None:
        self.doc, self.index, self.base = doc, index, base
        self.entry: dict[str, Any] = doc.data["kernels"][index]
        self.start = doc.line("kernels", index) or 1

    def line(self, key: str) -> int:
        return self.doc.line("kernels", self.index, key) or self.start

    def fail(self, msg: str, key: str) -> _EntryError:
        return _EntryError(msg, self.line(key))

    def opt_int(self, key: str, minimum: int = 0) -> int | None:
        return _int(self.entry[key], key, self.line(key), minimum) if key in self.entry else None

    def flag(self, key: str) -> bool:
        v = self.entry.get(key, False)
        if not isinstance(v, bool):
            raise self.fail(f"{key} must be true or false, got {inert(repr(v)[:40])}", key)
        return v

    def size(self, key: str) -> int | None:
        if key not in self.entry:
            return None
        v = self.entry[key]
        if isinstance(v, str):
            from occupancy.inputs.units import parse_bytes

            try:
                v = parse_bytes(v)
            except OccupancyError as exc:
                raise self.fail(f"{key}: {exc}", key) from None
        return _int(v, key, self.line(key))

    def rel(self, key: str) -> tuple[str, str] | None:
        """(absolute path, as written) of a file the entry names."""
        v = self.entry.get(key)
        if v is None:
            return None
        if not isinstance(v, str) or not v or "\x00" in v:
            raise self.fail(f"{key} must be a file path", key)
        q = Path(v) if os.path.isabs(v) else self.base / v
        if not q.is_file():
            raise self.fail(f"{key}: no such file {inert(str(q))}", key)
        return os.path.abspath(q), v

    def files(self, key: str) -> tuple[str, ...]:
        """Absolute paths of a list of files the entry names (relative to the manifest)."""
        v = self.entry.get(key, [])
        if not isinstance(v, list) or not all(isinstance(f, str) and f and "\x00" not in f
                                              for f in v):
            raise self.fail(f"{key} must be a list of file paths", key)
        out = []
        for f in v:
            q = Path(f) if os.path.isabs(f) else self.base / f
            if not q.is_file():
                raise self.fail(f"{key}: no such file {inert(str(q))}", key)
            out.append(os.path.abspath(q))
        return tuple(out)

    def block(self) -> tuple[int, ...]:
        v = self.entry["block"]
        dims = [v] if isinstance(v, int) and not isinstance(v, bool) else v
        if (not isinstance(dims, list) or not 1 <= len(dims) <= 3
                or not all(isinstance(d, int) and not isinstance(d, bool) and 0 < d <= INT32_MAX
                           for d in dims)):
            raise self.fail(f"block must be a positive integer or a list [x, y, z] of 1-3, got "
                            f"{inert(repr(v)[:40])}", "block")
        return tuple(dims)

    def dims(self, key: str) -> tuple[int, ...] | None:
        """A cluster or grid: an integer or a list of 1-3 positive integers."""
        if key not in self.entry:
            return None
        v = self.entry[key]
        dims = [v] if isinstance(v, int) and not isinstance(v, bool) else v
        if (not isinstance(dims, list) or not 1 <= len(dims) <= 3
                or not all(isinstance(d, int) and not isinstance(d, bool) and 0 < d <= INT32_MAX
                           for d in dims)):
            raise self.fail(f"{key} must be a positive integer or a list [x, y, z] of 1-3, got "
                            f"{inert(repr(v)[:40])}", key)
        return tuple(dims)

    def spec(self, default_devices: tuple[str, ...] | None, floor: float,
             defaults: _Defaults) -> KernelSpec:
        entry = self.entry
        for key in entry:
            if key not in _KERNEL_KEYS:
                raise _EntryError(_unknown_key(key, _KERNEL_KEYS), self.line(str(key)))
        name = entry.get("name")
        if not isinstance(name, str) or not name:
            raise self.fail("needs a 'name:' (a non-empty string)", "name")
        if "block" not in entry:
            raise self.fail("needs 'block:' (threads per block: 256 or [x, y, z])", "name")
        block = self.block()
        if not any(k in entry for k in ("registers", "source", "ptxas_log", "cubin")):
            raise self.fail("give its resources: 'registers:' (and the smem sizes), or 'source:' "
                            "to compile, or 'ptxas_log:' / 'cubin:'", "name")
        if sum(k in entry for k in ("source", "ptxas_log", "cubin")) > 1:
            raise self.fail("give one of 'source:', 'ptxas_log:' or 'cubin:', not several", "source")
        devs = (_device_names(entry["devices"], self.line("devices"))
                if "devices" in entry else default_devices)
        if not devs:
            raise self.fail("no devices: add 'devices:' at the top of the manifest or to this "
                            "kernel", "name")
        kfloor = (_fraction(entry["min_occupancy"], "min_occupancy", self.line("min_occupancy"))
                  if "min_occupancy" in entry else floor)
        defines = {**defaults.defines,
                   **_defines(entry.get("defines", {}), self.line("defines"))}
        include_dirs = (*_dirs(entry.get("include_dirs", []), self.base, self.line("include_dirs")),
                        *defaults.include_dirs)
        flags = (*defaults.flags, *_flags(entry.get("flags", []), self.line("flags")))
        function = entry.get("function")
        if function is not None and (not isinstance(function, str) or not function):
            raise self.fail("function must be the kernel's name in the source (plain, "
                            "ns::qualified, a template instance like k<32>, or mangled)",
                            "function")
        carveout = self.opt_int("carveout")
        if carveout is not None and carveout > 100:
            raise self.fail(f"carveout is a percentage 0-100, got {carveout}", "carveout")
        source = self.rel("source")
        link = self.files("link")
        if link and not source:
            raise self.fail("'link:' lists sources device-linked with 'source:'; give 'source:'",
                            "link")
        cluster = self.dims("cluster")
        if cluster is not None and any(c > 64 for c in cluster):
            raise self.fail(f"cluster {list(cluster)} is far over any GPU's limit (16)", "cluster")
        c3 = None if cluster is None else (*cluster, 1, 1)
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
            source=source[0] if source else None, shown_source=source[1] if source else None,
            function=function, defines=defines, include_dirs=include_dirs, flags=flags, link=link,
            compilers=defaults.compilers,
            ptxas_log=(self.rel("ptxas_log") or (None, None))[0],
            cubin=(self.rel("cubin") or (None, None))[0], carveout=carveout,
            barriers=self.opt_int("barriers"),
            cluster=None if c3 is None else (c3[0], c3[1], c3[2]), grid=self.dims("grid"),
            virtual_resources=self.opt_int("virtual_resources") or 0,
        )


def _broken_spec(entry: Any, index: int, line: int, message: str,
                 default_devices: tuple[str, ...] | None) -> KernelSpec:
    name = entry.get("name") if isinstance(entry, dict) else None
    label = name if isinstance(name, str) and name else f"entry {index + 1}"
    devs = default_devices or ()
    if isinstance(entry, dict) and "devices" in entry:
        try:
            devs = _device_names(entry["devices"], None)
        except _EntryError:
            devs = ()
    return KernelSpec(name=label, line=line, block=(1,), devices=devs or ("-",),
                      min_occupancy=0.0, error=message)


def load_manifest(path: str | os.PathLike[str]) -> Manifest:
    """Read and validate a launch manifest; relative paths in it are relative to its file."""
    p = Path(path)
    spath = str(p)
    doc = read_yaml(p, ManifestError, "give the path of a launch manifest (see README, "
                    "'occupancy check')", what="manifest")
    data = doc.data
    if not isinstance(data, dict):
        raise ManifestError("a manifest is a mapping with 'kernels:' (and optional 'devices:', "
                            "'min_occupancy:', 'include_dirs:', 'flags:', 'defines:')", spath, 1)
    for key in data:
        if key not in _TOP_KEYS:
            raise ManifestError(_unknown_key(key, _TOP_KEYS), spath, doc.line(key))
    try:
        default_devices = (_device_names(data["devices"], doc.line("devices"))
                           if "devices" in data else None)
        floor = (_fraction(data["min_occupancy"], "min_occupancy", doc.line("min_occupancy"))
                 if "min_occupancy" in data else 0.0)
        defaults = _Defaults(doc, p.parent)
    except _EntryError as exc:
        raise ManifestError(str(exc), spath, exc.line) from None
    kernels = data.get("kernels")
    if isinstance(kernels, list) and kernels and all(tuning_entry(k) for k in kernels):
        raise ManifestError("every kernel here is a tuning entry (it has 'space:' or 'args:'): "
                            "rank one with "
                            "occupancy tile MANIFEST --kernel NAME -d DEVICE", spath,
                            doc.line("kernels"))
    if not isinstance(kernels, list) or not kernels:
        raise ManifestError("'kernels:' must be a non-empty list of kernel entries", spath,
                            doc.line("kernels"))
    if len(kernels) > MAX_KERNELS:
        raise ManifestError(f"more than {MAX_KERNELS:,} kernel entries: split the manifest", spath,
                            doc.line("kernels"))
    specs: list[KernelSpec] = []
    for i, entry in enumerate(kernels):
        start = doc.line("kernels", i) or 1
        if tuning_entry(entry):
            continue  # `occupancy tile MANIFEST --kernel NAME` ranks it (or checks with it)
        try:
            if not isinstance(entry, dict):
                raise _EntryError(f"kernel entry {i + 1} must be a mapping with at least name and "
                                  "block", start)
            specs.append(_Entry(doc, i, p.parent).spec(default_devices, floor, defaults))
        except _EntryError as exc:
            name = entry.get("name") if isinstance(entry, dict) else None
            label = f"kernel '{inert(name)}': " if isinstance(name, str) and name else ""
            specs.append(_broken_spec(entry, i, exc.line or start, f"{label}{exc}",
                                      default_devices))
    devices: dict[str, Device] = {}
    errors: dict[str, tuple[str, int]] = {}
    for index, spec in enumerate(specs):
        for j, d in enumerate(spec.devices):
            if d in devices or d in errors or d == "-":
                continue
            ref = d
            if (d.endswith((".yaml", ".yml")) or "/" in d) and not os.path.isabs(d):
                ref = str(p.parent / d)
            try:
                devices[d] = load_device(ref)
            except OccupancyError as exc:
                own = isinstance(kernels[index], dict) and "devices" in kernels[index]
                line = (doc.line("kernels", index, "devices", j) if own
                        else doc.line("devices", j)) or spec.line
                errors[d] = (str(exc), line)
    return Manifest(spath, tuple(specs), devices, errors)


Resolver = Callable[[KernelSpec, Device], KernelResources]


def given_resources(spec: KernelSpec) -> KernelResources:
    """Resources written in the manifest as numbers."""
    return KernelResources(spec.function or spec.name, spec.registers or 0,
                           spec.static_shared_memory or 0, spec.barriers if spec.barriers is not None else 1,
                           0, spec.spill_stores_bytes, spec.spill_loads_bytes,
                           spec.max_threads_per_block, "manifest")



def verdict(spec: KernelSpec, dev: Device, res: KernelResources) -> Verdict:
    """Can it launch, does it reach its floor, does it keep the register / spill rules."""
    bound = spec.max_threads_per_block or res.max_threads_per_block
    if spec.max_threads_per_block and res.max_threads_per_block:
        bound = min(spec.max_threads_per_block, res.max_threads_per_block)
    static = spec.static_shared_memory if spec.static_shared_memory is not None \
        else res.static_shared_memory
    regs = res.registers_per_thread  # the manifest's number when no binary or source is given
    barriers = spec.barriers if spec.barriers is not None else max(res.barriers, 1)
    r = solve(dev, spec.threads, regs, static, spec.dynamic_shared_memory, spec.carveout, bound,
              barriers, opt_in=spec.opt_in_shared_memory, virtual_resources=spec.virtual_resources,
              cluster=spec.cluster or res.cluster_dims, grid=spec.grid)
    problems = list(r.cannot_launch)
    if r.launchable and r.occupancy < spec.min_occupancy:
        limiter = limiters(r.limiters)
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
        problems.append(f"occupancy {pct(r.occupancy)} is below the floor of "
                        f"{pct(spec.min_occupancy)} (limited by {limiter}{fix})")
    if spec.max_registers is not None and regs > spec.max_registers:
        problems.append(f"{regs} registers per thread exceed max_registers {spec.max_registers}"
                        f" ({res.source})")
    if spec.no_spills and res.spills:
        problems.append(f"spills {res.spill_stores_bytes} B stored / {res.spill_loads_bytes} B "
                        f"loaded per thread ({res.source}); no_spills is set")
    elif spec.no_spills and res.spills_unknown and res.stack_frame_bytes > 0:
        problems.append(f"a {res.stack_frame_bytes} B stack frame per thread ({res.source}): "
                        "local memory, from spills or local arrays (a binary does not tell them "
                        "apart); no_spills is set")
    return Verdict(spec.name, dev.key, spec.line, "fail" if problems else "pass",
                   tuple(problems), r, res)


def error_verdict(spec: KernelSpec, device: str, message: str, line: int | None = None
                  ) -> Verdict:
    return Verdict(spec.name, device, line or spec.line, "error", (inert(message),))


def evaluate(manifest: Manifest, resolve: Resolver | None = None,
             prepare: Callable[[list[tuple[KernelSpec, Device]]], None] | None = None
             ) -> list[Verdict]:
    """Every kernel on every device it targets, in manifest order; an entry, device or
    compile that fails is an error verdict, and the others are still judged.
    `prepare` sees every (spec, device) pair first (the toolchain compiles them in parallel)."""
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
