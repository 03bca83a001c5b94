"""Reading built binaries into resources per device: cubins, fatbins, executables and
libraries (the SASS the driver would load, else their PTX compiled with ptxas for the device)."""

from __future__ import annotations

import os
import re
import subprocess
import tempfile
from collections.abc import Iterable
from dataclasses import dataclass, field, replace
from pathlib import Path

from occupancy.build.binaries import (
    arch_number,
    check_fatbin_sizes,
    check_ptx_size,
    cubin_arch,
    elf_arch,
    is_relocatable,
    kind_of,
    parse_cubin,
    ptx_target,
    static_shared_from_cubin,
)
from occupancy.build.builds import _combine, _run
from occupancy.build.compilers import COMPILER_HINT, Build, compiler_for, cuda_tool
from occupancy.build.link import device_link
from occupancy.build.resources import CompilerUnavailable, KernelResources
from occupancy.build.run import run_tool
from occupancy.core.device import Device
from occupancy.core.errors import OccupancyError
from occupancy.inputs.safety import inert


def cuobjdump_path() -> str | None:
    return cuda_tool("cuobjdump")


@dataclass(frozen=True)
class BinaryImage:
    """What a cubin, fatbin, executable or library holds: SASS per arch, PTX per arch."""

    path: str
    sass: dict[str, dict[str, KernelResources]] = field(default_factory=dict)
    ptx: dict[str, str] = field(default_factory=dict)  # compute arch ("sm_80") -> PTX text
    # SASS arch -> why its relocatable code could not be linked (a verdict on that arch
    # says so; another arch of the same file still answers)
    unlinked: dict[str, str] = field(default_factory=dict)


def _cubin_resources(data: bytes, label: str, reserved: int = 1024
                     ) -> tuple[str, dict[str, KernelResources]]:
    """Kernels of a linked cubin (a relocatable one is never read as final: see link.py)."""
    cub = parse_cubin(data)
    if cub.relocatable:
        raise OccupancyError(f"{label}: a relocatable cubin (built with -rdc=true / -dc) is not "
                             "final before the device link")
    out = {}
    for name, k in cub.kernels.items():
        out[name] = KernelResources(name, k.registers, static_shared_from_cubin(k, cub.arch, reserved),
                                    k.barriers, k.stack_frame_bytes, 0, 0, k.max_threads,
                                    f"{label} {cub.arch}", spills_unknown=True,
                                    cluster_dims=k.cluster_dims)
    return cub.arch, out


def _linked(objects: list[bytes], arch: str, shown: str) -> bytes:
    what = (f"{inert(shown)} holds relocatable device code for {arch} (-rdc=true / -dc), whose "
            "static shared memory is only fixed by the device link")
    return device_link(objects, arch, what)


def _link_arch(objects: list[bytes], arch: str, shown: str, label: str
               ) -> dict[str, KernelResources] | str:
    """The kernels of one arch's relocatable objects, linked; or why they cannot be."""
    try:
        return _cubin_resources(_linked(objects, arch, shown),
                                label + " (relocatable, device-linked here)")[1]
    except OccupancyError as exc:
        return str(exc)


def read_binary(path: str, shown: str, data: bytes) -> BinaryImage:
    """Take a binary apart: a bare cubin is read here; anything else through cuobjdump."""
    kind = kind_of(data)
    label = f"binary {inert(shown)}"
    if kind == "cubin":
        try:
            if is_relocatable(data):
                data = _linked([data], elf_arch(data), shown)
                label += " (relocatable, device-linked here)"
            arch, res = _cubin_resources(data, label)
        except OccupancyError as exc:  # a malformed ELF says so without a name: add the file's
            if inert(shown) in str(exc):
                raise
            raise OccupancyError(f"{inert(shown)}: {exc}") from None
        return BinaryImage(path, {arch: res})
    if kind == "ptx":
        text = data.decode("utf-8", errors="replace")
        return BinaryImage(path, {}, {ptx_target(text) or "sm_52": text})
    if kind not in ("fatbin", "host"):
        raise OccupancyError(f"{inert(shown)}: not a cubin, fatbin, PTX file, executable or "
                             "library")
    try:
        check_fatbin_sizes(data)
    except OccupancyError as exc:
        raise OccupancyError(f"{inert(shown)}: {exc}") from None
    exe = cuobjdump_path()
    if exe is None:
        raise CompilerUnavailable(f"{inert(shown)}: reading a fatbin needs cuobjdump: pip install "
                                  "'occupancy[compiler]' or put the CUDA toolkit's bin/ on PATH")
    sass: dict[str, dict[str, KernelResources]] = {}
    ptx: dict[str, str] = {}
    relocatable: dict[str, list[bytes]] = {}
    with tempfile.TemporaryDirectory(prefix="occupancy-") as tmp:
        # A copy under a plain name: the user's file name never reaches an argument slot.
        local = os.path.join(tmp, "input.bin")
        Path(local).write_bytes(data)
        out_dir = os.path.join(tmp, "x")
        os.mkdir(out_dir)
        try:
            for flag in ("-xelf", "-xptx"):
                run_tool([exe, flag, "all", local], cwd=out_dir, timeout=120)
        except (OSError, subprocess.TimeoutExpired) as exc:
            raise OccupancyError(f"{inert(shown)}: cuobjdump failed: {exc}") from None
        for f in sorted(os.listdir(out_dir))[:512]:
            p = os.path.join(out_dir, f)
            if f.endswith(".cubin"):
                elf = Path(p).read_bytes()
                try:
                    # cuobjdump names sm_90a's cubin so; its e_flags say sm_90 as sm_90's do
                    named = _NAMED_ARCH.search(f)
                    arch = named.group(1) if named and arch_number(named.group(1)) == arch_number(
                        cubin_arch(elf)) else cubin_arch(elf)
                    if is_relocatable(elf):  # an object or library of -dc code: link per arch
                        relocatable.setdefault(arch, []).append(elf)
                        continue
                    res = _cubin_resources(elf, label)[1]
                except OccupancyError:
                    continue
                sass.setdefault(arch, {}).update(
                    {k: replace(v, source=f"{label} {arch}") for k, v in res.items()})
            elif f.endswith(".ptx"):
                text = Path(p).read_text(errors="replace")
                m = re.search(r"\.(sm_\d+)\.ptx$", f)
                arch = ptx_target(text) or (m.group(1) if m else "sm_52")
                ptx[arch] = text
    unlinked: dict[str, str] = {}
    for arch, objects in relocatable.items():
        res_or_why = _link_arch(objects, arch, shown, label)
        if isinstance(res_or_why, str):
            unlinked[arch] = res_or_why
        else:
            sass.setdefault(arch, {}).update(res_or_why)
    if not sass and not ptx and not unlinked:
        raise OccupancyError(f"{inert(shown)}: no CUDA kernels in it (no SASS and no PTX)")
    return BinaryImage(path, sass, ptx, unlinked)


def resources_for_device(img: BinaryImage, dev: Device, shown: str
                         ) -> dict[str, KernelResources]:
    """What the driver would load on this device: SASS of the same major with the highest
    minor <= the device's; else the newest PTX <= the device's arch, JIT-compiled here with
    ptxas for it; else an error that names the file."""
    want = dev.cc_major * 10 + dev.cc_minor
    arch = loaded_sass((*img.sass, *img.unlinked), f"sm_{want}")
    if arch is not None:
        if arch in img.unlinked:
            raise OccupancyError(img.unlinked[arch])
        return img.sass[arch]
    src_arch = loadable_ptx(img.ptx, f"sm_{want}")
    if src_arch is not None:
        return jit_ptx(img.ptx[src_arch], src_arch, f"sm_{want}", shown)
    raise OccupancyError(nothing_loads(img, shown, f"sm_{want}", f"{dev.name} (sm_{want})"))


_NAMED_ARCH = re.compile(r"\.(sm_\d{2,3}[af]?)\.cubin$")


def loaded_sass(have: Iterable[str], arch: str) -> str | None:
    """The SASS the driver loads on `arch`: the same major's, the highest minor at or under
    it; an arch-specific one (sm_90a) only on that very arch, where it is taken before the
    plain one (the more specific build; which one the driver takes where a binary holds
    both is not documented)."""
    want = arch_number(arch)
    fits = [a for a in have if arch_number(a) // 10 == want // 10 and arch_number(a) <= want
            and (not a.endswith("a") or arch_number(a) == want)]
    return max(fits, key=lambda a: (arch_number(a), a.endswith("a"))) if fits else None


def loadable_ptx(have: Iterable[str], arch: str) -> str | None:
    """The PTX the driver JIT-compiles on `arch`: the newest at or under it; an arch-specific
    one (compute_90a) only on that very arch."""
    want = arch_number(arch)
    fits = [a for a in have
            if arch_number(a) <= want and (not a.endswith("a") or arch_number(a) == want)]
    return max(fits, key=lambda a: (arch_number(a), a.endswith("a"))) if fits else None


def nothing_loads(img: BinaryImage, shown: str, arch: str, on: str = "") -> str:
    """Why a binary gives nothing on `arch`: what it has, and the build flag that would."""
    have = ", ".join([f"SASS {a}" for a in sorted(img.sass, key=arch_number)]
                     + [f"SASS {a} (relocatable, not linked)" for a in sorted(img.unlinked, key=arch_number)]
                     + [f"PTX compute_{a[3:]}" for a in sorted(img.ptx, key=arch_number)]) or "nothing"
    return (f"{inert(shown)}: nothing the driver can load on {on or arch}: it has {have}; "
            f"build with -gencode arch=compute_{arch[3:]},code={arch}")


def jit_ptx(ptx: str, src_arch: str, arch: str, shown: str) -> dict[str, KernelResources]:
    """Compile a binary's PTX with ptxas for the device, as the driver's JIT would."""
    try:
        check_ptx_size(ptx)
    except OccupancyError as exc:
        raise OccupancyError(f"{inert(shown)}: {exc}") from None
    cc = arch_number(arch)
    # arch-specific PTX (.target sm_90a) compiles for that arch only, by its own name
    target = src_arch if src_arch.endswith("a") and arch_number(src_arch) == cc else f"sm_{cc}"
    c = compiler_for(arch)
    if c is None:
        raise CompilerUnavailable(f"{inert(shown)}: JIT of its PTX for {arch} needs ptxas: "
                                  f"{COMPILER_HINT}")
    build = Build(source="", shown=shown, arch=arch)
    with tempfile.TemporaryDirectory(prefix="occupancy-") as tmp:
        ptx_path, cubin = os.path.join(tmp, "k.ptx"), os.path.join(tmp, "k.cubin")
        Path(ptx_path).write_text(ptx)
        r = _run([c.ptxas, f"-arch={target}", "-v", ptx_path, "-o", cubin], build,
                 f"ptxas {c.version} (JIT of compute_{src_arch[3:]})", cwd=tmp)
        data = Path(cubin).read_bytes()
    label = f"binary {inert(shown)} JIT from compute_{src_arch[3:]} by ptxas {c.version} for"
    return _combine(r.stderr + r.stdout, data, replace(build, arch=arch), f"{label} {arch}", ptx)
