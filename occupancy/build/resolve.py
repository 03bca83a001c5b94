"""From a manifest entry to a kernel's resources on a device: the compiler, a ptxas log or a
binary per kernel x device (check's resolver), and the `resources` listing."""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace

from occupancy.build.batch import compile_builds
from occupancy.build.binaries import arch_number, kind_of
from occupancy.build.builds import _estimate_label, arch_of, compile_build, device_build, with_names
from occupancy.build.compilers import Build, make_build
from occupancy.build.images import (
    BinaryImage,
    jit_ptx,
    loadable_ptx,
    loaded_sass,
    nothing_loads,
    read_binary,
    resources_for_device,
)
from occupancy.build.resources import KernelResources, log_section, parse_ptxas_log
from occupancy.core.device import Device
from occupancy.core.errors import FileError, OccupancyError
from occupancy.inputs.flags import RDC_LOG_ERROR, is_rdc
from occupancy.inputs.manifest import KernelSpec
from occupancy.inputs.safety import inert


class CheckResolver:
    """check's resolver: the compiler, a ptxas log or a binary, per kernel x device.
    `prepare` compiles every distinct (source, flags, arch) of a manifest in parallel."""

    def __init__(self) -> None:
        self._builds: dict[Build, dict[str, KernelResources] | BaseException] = {}
        self._files: dict[str, object] = {}

    def _build(self, spec: KernelSpec, dev: Device) -> Build:
        assert spec.source is not None
        fn = spec.function or spec.name
        exprs = (fn,) if "<" in fn and not fn.startswith("_Z") else ()
        b = make_build(spec.source, arch_of(dev), shown=spec.shown_source or spec.source,
                       include_dirs=spec.include_dirs, flags=spec.flags, defines=spec.defines,
                       name_expressions=exprs, link=spec.link,
                       nvcc=spec.compilers.get(arch_of(dev)))
        return device_build(b)

    def prepare(self, pairs: Sequence[tuple[KernelSpec, Device]]) -> None:
        todo: list[Build] = []
        for spec, dev in pairs:
            if getattr(spec, "source", None):
                try:
                    b = self._build(spec, dev)
                except OccupancyError:
                    continue  # reported per verdict when resolved
                if b not in self._builds and b not in todo:
                    todo.append(b)
        # check reads no SASS loop mix (the time model's): no nvdisasm here
        for b, res in zip(todo, compile_builds(todo, loop_mix=False), strict=True):
            self._builds[b] = res

    def _compiled(self, b: Build) -> dict[str, KernelResources]:
        if b not in self._builds:
            self._builds[b] = compile_builds([b], loop_mix=False)[0]
        res = self._builds[b]
        if isinstance(res, BaseException):
            raise res
        return res

    def _macros(self, spec: KernelSpec) -> dict[str, str]:
        """The entry's defines over the object-like #defines of its source and the headers
        it includes from its folders (a launch's `k<WARP_SIZE>` names k<32>)."""
        from occupancy.build.builds import scan_includes
        from occupancy.build.names import source_macros
        found: dict[str, str] = {}
        if spec.source:
            key = f"macros:{spec.source}:{spec.include_dirs}"
            if key not in self._files:
                files = scan_includes(spec.source, [os.path.dirname(spec.source),
                                                    *spec.include_dirs])[:200]
                self._files[key] = source_macros([_head(f) for f in files])
            cached = self._files[key]
            assert isinstance(cached, dict)
            found.update(cached)
        return {**found, **spec.defines}

    def _file(self, path: str, shown: str, kind: str) -> object:
        from occupancy.inputs.files import LOG_CAP, read_bytes

        if path not in self._files:
            data = read_bytes(path, FileError, LOG_CAP, "check the manifest's path", kind)
            if kind == "ptxas log":
                self._files[path] = parse_ptxas_log(data.decode("utf-8", errors="replace"),
                                                    label=f"ptxas log {inert(shown)}")
            else:
                self._files[path] = read_binary(path, shown, data)
        return self._files[path]

    def __call__(self, spec: KernelSpec, dev: Device) -> KernelResources:
        from occupancy.build.names import match_kernel
        from occupancy.build.resources import log_section

        assert isinstance(spec, KernelSpec)
        arch = arch_of(dev)
        where = f"kernel '{inert(spec.name)}'"
        if spec.source:
            b = self._build(spec, dev)
            found = _estimate_label(self._compiled(b), arch, b)
            where += f" ({inert(b.shown)} for {b.arch})"
        elif spec.ptxas_log:
            shown = _shown(spec.ptxas_log)
            sections = self._file(spec.ptxas_log, shown, "ptxas log")
            assert isinstance(sections, dict)
            found = log_section(sections, arch, f"ptxas log {inert(shown)}")
            where += f" (ptxas log {inert(shown)}, {arch})"
        elif spec.cubin:
            shown = _shown(spec.cubin)
            img = self._file(spec.cubin, shown, "binary")
            assert isinstance(img, BinaryImage)
            found = resources_for_device(img, dev, shown)
            where += f" ({inert(shown)} for {arch})"
        else:
            return given_resources(spec)
        found = with_names(found)  # the callees a verdict names too
        names = {k: (v.demangled or k) for k, v in found.items()}
        mangled = match_kernel(spec.function or spec.name, names, where, self._macros(spec))
        # a log with -rdc in the entry's flags, or one that reads as a relocatable compile's
        # (functions compiled on their own, no kernel's cumulative stack, no nvlink report),
        # unless the flags say -G (whose kernels that call no function with a frame print
        # no cumulative stack either)
        seems = found[mangled].before_link and not {"-G", "--device-debug"} & set(spec.flags)
        if spec.ptxas_log and (is_rdc(spec.flags) or seems) and not found[mangled].linked:
            raise OccupancyError(f"{where}: {RDC_LOG_ERROR}")
        return replace(found[mangled], demangled=names[mangled])


def _head(path: str) -> str:
    """A source's first MB as text ('' if it cannot be read)."""
    try:
        with open(path, encoding="utf-8", errors="replace") as fh:
            return fh.read(1_000_000)
    except OSError:
        return ""


def _shown(path: str) -> str:
    try:
        return os.path.relpath(path)
    except ValueError:
        return path


# --- `occupancy resources` -------------------------------------------------------------------


@dataclass(frozen=True)
class ListedKernel:
    """One kernel of one file for one arch, as `occupancy resources` lists it."""

    file: str
    arch: str
    resources: KernelResources


SOURCE_SUFFIXES = (".cu", ".cuh", ".h", ".cpp", ".cc")  # what `resources` compiles; else read


def list_resources(path: str, archs: Sequence[str], *, include_dirs: Sequence[str] = (),
                   flags: Sequence[str] = (), defines: Mapping[str, str] | None = None,
                   link: Sequence[str] = (), failed: list[str] | None = None, asked: bool = True
                   ) -> list[ListedKernel]:
    """Every kernel in a .cu (compiled for each arch), a ptxas log (each section), or a
    cubin / fatbin / executable / library (each SASS arch, and PTX JIT-compiled for the
    archs asked for that have no SASS the driver would load). With `failed`, an arch a .cu
    does not compile for, or a binary cannot give (its relocatable code does not link;
    nothing loads on an arch `asked` for: not the default), adds its error there and the
    others are still listed (the first error is raised where nothing is listed)."""
    from occupancy.inputs.files import LOG_CAP, read_bytes

    shown = path
    if path.endswith(SOURCE_SUFFIXES):
        def compiled(arch: str) -> list[ListedKernel]:
            build = device_build(make_build(path, arch, shown=shown, include_dirs=include_dirs,
                                            flags=flags, defines=defines, link=link))
            found = _estimate_label(compile_build(build), arch, build)  # as check builds it
            return [ListedKernel(shown, arch, r) for r in found.values()]

        out = _settle(*_each_arch(archs, compiled), failed)
        if not out:  # as a binary without kernels is: said, not an empty table
            raise OccupancyError(f"{inert(shown)}: no kernels found (no __global__ function "
                                 "compiled): give the file that defines them")
        return out
    data = read_bytes(path, FileError, LOG_CAP, "give a .cu, ptxas log, cubin, fatbin, "
                      "executable or library", "file")
    kind = kind_of(data)
    out = []
    if kind in ("cubin", "fatbin", "host", "ptx"):
        out = _settle(*_binary_rows(read_binary(path, shown, data), shown, archs, asked), failed)
        if not out:
            raise OccupancyError(f"{inert(shown)}: no kernels in it (device functions only?): "
                                 "give the object or library that defines them")
    else:
        sections = parse_ptxas_log(data.decode("utf-8", errors="replace"),
                                   label=f"ptxas log {inert(shown)}")
        if not sections:
            raise OccupancyError(f"{inert(shown)}: no kernels found: give a .cu, a `ptxas -v` "
                                 "log, a cubin, fatbin, executable or library")
        if asked:  # each arch asked, as check reads it; one the log lacks is an error
            out = _settle(*_each_arch(archs, lambda a: [
                ListedKernel(shown, a, r)
                for r in log_section(sections, a, f"ptxas log {inert(shown)}").values()]), failed)
        else:
            out += [ListedKernel(shown, arch or "?", r)
                    for arch in sorted(sections, key=arch_number) for r in sections[arch].values()]
    named = {a: with_names({k.resources.function: k.resources for k in out if k.arch == a})
             for a in dict.fromkeys(k.arch for k in out)}
    return [replace(k, resources=named[k.arch][k.resources.function]) for k in out]


def _each_arch(archs: Sequence[str], rows: Callable[[str], list[ListedKernel]]
               ) -> tuple[list[ListedKernel], list[OccupancyError]]:
    """`rows` of every arch, and the errors of those that give none."""
    out: list[ListedKernel] = []
    errors: list[OccupancyError] = []
    for arch in archs:
        try:
            out += rows(arch)
        except OccupancyError as exc:  # noqa: PERF203 (an error an arch, said after the rest)
            errors.append(exc)
    return out, errors


def _settle(out: list[ListedKernel], errors: Sequence[OccupancyError], failed: list[str] | None
            ) -> list[ListedKernel]:
    """`out`, with the errors added to `failed`; the first error raised where nothing is
    listed or no `failed` takes them."""
    if errors and (failed is None or not out):
        raise errors[0]
    if failed is not None:
        failed += [str(e) for e in errors]
    return out


def _binary_rows(img: BinaryImage, shown: str, archs: Sequence[str], asked: bool
                 ) -> tuple[list[ListedKernel], list[OccupancyError]]:
    """A binary's kernels per SASS arch, and per arch of `archs` the driver would JIT its
    PTX for (no SASS of that major at or under it); the errors: relocatable code that does
    not link, and an `asked` arch on which nothing loads."""
    out = [ListedKernel(shown, a, r) for a in sorted(img.sass, key=arch_number)
           for r in img.sass[a].values()]
    errors = [OccupancyError(img.unlinked[a]) for a in sorted(img.unlinked, key=arch_number)]
    for arch in archs:
        if loaded_sass((*img.sass, *img.unlinked), arch) is not None:
            continue  # the driver loads that SASS: listed, or its link error said
        src = loadable_ptx(img.ptx, arch)
        if src is not None:
            out += [ListedKernel(shown, arch, r)
                    for r in jit_ptx(img.ptx[src], src, arch, shown).values()]
        elif asked:
            errors.append(OccupancyError(nothing_loads(img, shown, arch)))
    if not out and not errors and img.ptx:  # PTX above the default arch, and none asked
        low = min(img.ptx, key=arch_number)
        above = "" if low.endswith("a") else " or above"
        errors.append(OccupancyError(
            f"{inert(shown)}: it holds PTX only (compute_{low[3:]}, no SASS), which is compiled "
            f"for the arch asked: give --arch {low}{above} (the default, {archs[0]}, is not one)"))
    return out, errors


def given_resources(spec: KernelSpec) -> KernelResources:
    """Resources written in the manifest as numbers."""
    return KernelResources(spec.function or spec.name, spec.registers or 0,
                           spec.static_shared_memory or 0, spec.barriers if spec.barriers is not None else 1,
                           0, spec.spill_stores_bytes, spec.spill_loads_bytes,
                           spec.max_threads_per_block, "manifest")
