"""Compiling the builds of a whole manifest: in parallel, and each translation unit once.

Entries often build one source with different defines (a VARIANT per entry, a tile size per
launch), and a define the code never reads leaves the translation unit as it was. Builds
that differ only in their defines (nvcc, no -rdc) are therefore preprocessed first (`nvcc -E`
with the same flags, include folders, defines and source: the device preprocessing nvcc
-cubin runs before cicc, byte for byte), and builds whose translation units are identical
share one compile: cicc and ptxas see the same input, so the cubin, the PTX and every number
are the same. A shared result still goes into each build's own cache entry, under its own
key and with the files its own preprocessing read. NVRTC has no preprocess-only mode: its
builds are all compiled.
"""

from __future__ import annotations

import hashlib
import os
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path

from occupancy.build.builds import (
    _cached,
    _compile,
    _instantiating_wrapper,
    _nvcc_source_args,
    _run,
    compiler_of,
    preprocessed_files,
    scan_includes,
    store_build,
)
from occupancy.build.cache import _key
from occupancy.build.compilers import Build, Compiler, parallel_map
from occupancy.build.resources import CompileTimeout, KernelResources
from occupancy.core.errors import OccupancyError
from occupancy.inputs.safety import inert

Result = dict[str, KernelResources] | BaseException


@dataclass
class _Unit:
    """A compile whose translation unit other builds may share: its result and its probe
    (the TU's SHA-256, cubin and PTX, filled when it compiled rather than hit the cache)."""

    build: Build
    result: Result | None = None
    probe: dict[str, object] = field(default_factory=dict)


def compile_builds(builds: Sequence[Build], loop_mix: bool = True) -> list[Result]:
    """compile_build over every build, an exception in the place of a build that fails."""
    groups: dict[tuple[Build, Compiler], list[int]] = {}
    for i, b in enumerate(builds):
        c = _shareable(b)
        if c is not None:
            groups.setdefault((replace(b, defines=()), c), []).append(i)
    lead = {i: g[0] for g in groups.values() if len(g) > 1 for i in g[1:]}  # follower: leader
    units = {i: _Unit(b) for i, b in enumerate(builds) if i not in lead}

    def first(i: int) -> Result | tuple[str, list[str]]:
        if i in units:
            return _compile_result(units[i].build, loop_mix, units[i].probe)
        return _hit_or_preprocess(builds[i], loop_mix)

    out: dict[int, Result] = {}
    pending: dict[int, tuple[str, list[str]]] = {}
    todo = [*units, *lead]  # the compiles first, then the short preprocessing
    for i, got in zip(todo, parallel_map(first, todo), strict=True):
        if isinstance(got, tuple):
            pending[i] = got
        else:
            out[i] = got
            if i in units:
                units[i].result = got
    # a translation unit no compile had yet: compiled once, by the first build that has it
    fresh: dict[tuple[int, str], int] = {}
    for i, (tu, _) in pending.items():
        if _match(units[lead[i]], tu) is None:
            fresh.setdefault((lead[i], tu), i)
    for i, led in zip(fresh.values(), parallel_map(lambda j: _lead(builds[j], loop_mix),
                                                   list(fresh.values())), strict=True):
        if isinstance(led, _Unit) and led.result is not None:
            units[i], out[i] = led, led.result
        else:
            out[i] = led if isinstance(led, BaseException) else OccupancyError("no result")
    alone = []
    for i, (tu, files) in pending.items():
        if i in out:
            continue
        unit = _match(units[lead[i]], tu)
        if unit is None and fresh[(lead[i], tu)] in units:
            unit = _match(units[fresh[(lead[i], tu)]], tu)
        if unit is None:
            alone.append(i)  # it failed, or compiled another unit (a retry without instances)
        else:
            out[i] = _share(unit, builds[i], files, loop_mix)
    out.update(zip(alone, parallel_map(lambda j: _compile_result(builds[j], loop_mix), alone),
                   strict=True))
    return [out[i] for i in range(len(builds))]


def _shareable(b: Build) -> Compiler | None:
    """The nvcc that builds b, where a compile of it may be shared (not -rdc: a link)."""
    if b.rdc or b.link:
        return None
    try:
        c = compiler_of(b)
    except OccupancyError:
        return None
    return c if c.kind == "nvcc" else None


def _lead(b: Build, loop_mix: bool) -> _Unit:
    unit = _Unit(b)
    unit.result = _compile_result(b, loop_mix, unit.probe)
    return unit


def _compile_result(b: Build, loop_mix: bool, probe: dict[str, object] | None = None) -> Result:
    try:
        return _compile(b, loop_mix=loop_mix, probe=probe)[0]
    except Exception as exc:  # noqa: BLE001 - handed back per build, as parallel_map does
        return exc


def _match(unit: _Unit, tu: str) -> _Unit | None:
    """The unit, if it compiled (successfully) exactly this translation unit."""
    ok = unit.probe.get("tu") == tu and isinstance(unit.result, dict)
    return unit if ok and isinstance(unit.probe.get("cubin"), bytes) else None


def _share(unit: _Unit, b: Build, files: list[str], loop_mix: bool) -> Result:
    """The unit's compile as b's result, stored under b's own key with b's own files."""
    assert isinstance(unit.result, dict)
    cubin, ptx = unit.probe["cubin"], unit.probe["ptx"]
    assert isinstance(cubin, bytes) and isinstance(ptx, str)
    store_build(b, _key(b, compiler_of(b)), unit.result, [b.source, *files], cubin, ptx, loop_mix)
    return dict(unit.result)


def _hit_or_preprocess(b: Build, loop_mix: bool) -> Result | tuple[str, list[str]]:
    """The cached result, or (the SHA-256 of b's translation unit, the files it read);
    a build that cannot be preprocessed is compiled (its error is then the compile's)."""
    try:
        c = compiler_of(b)
        hit = _cached(_key(b, c), None, loop_mix)
        if hit is not None:
            return hit[0]
        if not os.path.isfile(b.source):
            raise OccupancyError(f"{inert(b.shown)}: no such file")
        scan_includes(b.source, [os.path.dirname(b.source), *b.include_dirs])
        source = _instantiating_wrapper(b) if b.name_expressions else b.source
        with tempfile.TemporaryDirectory(prefix="occupancy-") as tmp:
            out = os.path.join(tmp, "k.ii")
            _run([c.path, "-E", f"-arch={b.arch}", *_nvcc_source_args(b, source), "-o", out],
                 b, c.label, cwd=tmp)
            text = Path(out).read_bytes()
        return hashlib.sha256(text).hexdigest(), preprocessed_files(text, tmp)
    except CompileTimeout as exc:
        return exc
    except Exception:  # noqa: BLE001 - compiled instead; the compile reports what is wrong
        return _compile_result(b, loop_mix)
