"""Launch entries of a manifest (what `check` judges), validated with exact node positions:
every message names the file, the line and the key. A whole-file problem stops the read; a
problem with one entry becomes that entry's `error`, and every other entry is still read."""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from occupancy.core.device import Device
from occupancy.core.errors import OccupancyError
from occupancy.core.limits import INT32_MAX
from occupancy.inputs.files import YamlDoc, beside, read_yaml, regular_file
from occupancy.inputs.manifest.keys import (
    LAUNCH,
    MAX_KERNELS,
    TOP_KEYS,
    TRITON,
    Defaults,
    EntryError,
    ManifestError,
    device_names,
    entry_kind,
    fraction,
    integer,
    keys_of,
    parse_defines,
    parse_flags,
    parse_folders,
    tuning_entry,
    unknown_key,
)
from occupancy.inputs.manifest.triton import TritonSpec, read_entry
from occupancy.inputs.profiles import load_device
from occupancy.inputs.safety import check_function, inert

LAUNCH_KEYS = keys_of(LAUNCH)

MAX_FILES = 64  # a list of files an entry names (link:): each one is compiled


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
    triton: tuple[TritonSpec, ...] = ()  # `triton:` entries (one that cannot be read is
    # an error entry of `kernels`)


class _Entry:
    """Reads one kernel entry; every error names the manifest line of the offending key."""

    def __init__(self, doc: YamlDoc, index: int, base: Path) -> None:
        self.doc, self.index, self.base = doc, index, base
        self.entry: dict[str, Any] = doc.data["kernels"][index]
        self.start = doc.line("kernels", index) or 1

    def line(self, key: str) -> int:
        return self.doc.line("kernels", self.index, key) or self.start

    def fail(self, msg: str, key: str) -> EntryError:
        return EntryError(msg, self.line(key))

    def optinteger(self, key: str, minimum: int = 0) -> int | None:
        return integer(self.entry[key], key, self.line(key), minimum) if key in self.entry else None

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
        return integer(v, key, self.line(key))

    def rel(self, key: str) -> tuple[str, str] | None:
        """(absolute path, as written) of a file the entry names."""
        v = self.entry.get(key)
        if v is None:
            return None
        if not isinstance(v, str) or not v or "\x00" in v:
            raise self.fail(f"{key} must be a file path", key)
        q = beside(self.base, v)
        if not regular_file(q):
            raise self.fail(f"{key}: no such file {inert(str(q))}", key)
        return str(q), v

    def files(self, key: str) -> tuple[str, ...]:
        """Absolute paths of a list of files the entry names (relative to the manifest)."""
        v = self.entry.get(key, [])
        if not isinstance(v, list) or not all(isinstance(f, str) and f and "\x00" not in f
                                              for f in v):
            raise self.fail(f"{key} must be a list of file paths", key)
        if len(v) > MAX_FILES:  # each one a compile: no input decides how many run
            raise self.fail(f"{key} lists {len(v)} files; at most {MAX_FILES}", key)
        out = []
        for f in v:
            q = beside(self.base, f)
            if not regular_file(q):
                raise self.fail(f"{key}: no such file {inert(str(q))}", key)
            out.append(str(q))
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
             defaults: Defaults) -> KernelSpec:
        entry = self.entry
        for key in entry:
            if key not in LAUNCH_KEYS:
                raise EntryError(unknown_key(key, LAUNCH_KEYS), self.line(str(key)))
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
        devs = (device_names(entry["devices"], self.line("devices"))
                if "devices" in entry else default_devices)
        if not devs:
            raise self.fail("no devices: add 'devices:' at the top of the manifest or to this "
                            "kernel", "name")
        kfloor = (fraction(entry["min_occupancy"], "min_occupancy", self.line("min_occupancy"))
                  if "min_occupancy" in entry else floor)
        defines = {**defaults.defines,
                   **parse_defines(entry.get("defines", {}), self.line("defines"))}
        include_dirs = (*parse_folders(entry.get("include_dirs", []), self.base, self.line("include_dirs")),
                        *defaults.include_dirs)
        flags = (*defaults.flags, *parse_flags(entry.get("flags", []), self.line("flags")))
        function = entry.get("function")
        if function is not None:
            try:
                check_function(function, "function")
            except OccupancyError as exc:
                raise self.fail(str(exc).removeprefix("function: "), "function") from None
        carveout = self.optinteger("carveout")
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
            registers=self.optinteger("registers"),
            static_shared_memory=self.size("static_shared_memory"),
            dynamic_shared_memory=self.size("dynamic_shared_memory") or 0,
            opt_in_shared_memory=self.flag("opt_in_shared_memory"),
            max_threads_per_block=self.optinteger("max_threads_per_block", 1),
            max_registers=self.optinteger("max_registers", 1),
            no_spills=self.flag("no_spills"),
            spill_stores_bytes=self.optinteger("spill_stores_bytes") or 0,
            spill_loads_bytes=self.optinteger("spill_loads_bytes") or 0,
            source=source[0] if source else None, shown_source=source[1] if source else None,
            function=function, defines=defines, include_dirs=include_dirs, flags=flags, link=link,
            compilers=defaults.compilers,
            ptxas_log=(self.rel("ptxas_log") or (None, None))[0],
            cubin=(self.rel("cubin") or (None, None))[0], carveout=carveout,
            barriers=self.optinteger("barriers"),
            cluster=None if c3 is None else (c3[0], c3[1], c3[2]), grid=self.dims("grid"),
            virtual_resources=self.optinteger("virtual_resources") or 0,
        )


def _broken_spec(entry: Any, index: int, line: int, message: str,
                 default_devices: tuple[str, ...] | None) -> KernelSpec:
    name = entry.get("name") if isinstance(entry, dict) else None
    label = name if isinstance(name, str) and name else f"entry {index + 1}"
    devs = default_devices or ()
    if isinstance(entry, dict) and "devices" in entry:
        try:
            devs = device_names(entry["devices"], None)
        except EntryError:
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
        empty = "the file holds no YAML (a `resources --manifest > FILE` that failed leaves it empty); " \
            if data is None else ""
        raise ManifestError(f"{empty}a manifest is a mapping with 'kernels:' (and optional "
                            "'devices:', 'min_occupancy:', 'include_dirs:', 'flags:', 'defines:')",
                            spath, 1)
    for key in data:
        if key not in TOP_KEYS:
            raise ManifestError(unknown_key(key, TOP_KEYS), spath, doc.line(key))
    try:
        default_devices = (device_names(data["devices"], doc.line("devices"))
                           if "devices" in data else None)
        floor = (fraction(data["min_occupancy"], "min_occupancy", doc.line("min_occupancy"))
                 if "min_occupancy" in data else 0.0)
        defaults = Defaults(doc, p.parent)
    except EntryError as exc:
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
    tritons: list[TritonSpec] = []
    where: dict[int, int] = {}  # id of a spec -> its entry's index
    for i, entry in enumerate(kernels):
        start = doc.line("kernels", i) or 1
        if tuning_entry(entry):
            continue  # `occupancy tile MANIFEST --kernel NAME` ranks it (or checks with it)
        try:
            if not isinstance(entry, dict):
                raise EntryError(f"kernel entry {i + 1} must be a mapping with at least name and "
                                  "block", start)
            if entry_kind(entry) == TRITON:
                t = read_entry(doc, p, i, default_devices or (), floor)
                if not t.devices:
                    raise EntryError("no devices: add 'devices:' at the top of the manifest or "
                                     "to this kernel", start)
                tritons.append(t)
                where[id(t)] = i
                continue
            specs.append(_Entry(doc, i, p.parent).spec(default_devices, floor, defaults))
        except EntryError as exc:
            name = entry.get("name") if isinstance(entry, dict) else None
            label = f"kernel '{inert(name)}': " if isinstance(name, str) and name else ""
            specs.append(_broken_spec(entry, i, exc.line or start, f"{label}{exc}",
                                      default_devices))
        where[id(specs[-1])] = i
    devices, errors = _load_devices(doc, p, [*specs, *tritons], where)
    return Manifest(spath, tuple(specs), devices, errors, tuple(tritons))


def _load_devices(doc: YamlDoc, p: Path, specs: list[KernelSpec | TritonSpec],
                  where: dict[int, int]) -> tuple[dict[str, Device], dict[str, tuple[str, int]]]:
    """Every device the entries name, loaded once; one that cannot be read is its reason and
    the line that named it (the entry's own devices, or the top level's)."""
    kernels = doc.data["kernels"]
    devices: dict[str, Device] = {}
    errors: dict[str, tuple[str, int]] = {}
    for spec in specs:
        index = where[id(spec)]
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
    return devices, errors
