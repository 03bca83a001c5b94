"""The compilers and CUDA tools: where they are, which one builds an arch, which flags they take.

- nvcc (the user's: PATH, $CUDA_HOME/bin or /usr/local/cuda/bin) for every arch its
  version targets (13.x: sm_75+, 12.x: sm_50+);
- NVRTC 12.9 + ptxas 12.9 from the PyPI wheels (the `compiler` extra) for sm_50-sm_72
  when no nvcc targets them (device code only);
- cuobjdump, nvdisasm and a demangler. Flags come from a whitelist; nothing reaches a shell.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from collections.abc import Callable, Iterable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import TypeVar

from occupancy.core.errors import OccupancyError
from occupancy.inputs.flags import check_flags, is_rdc
from occupancy.inputs.safety import check_define_name, define_value, inert, safe_path

COMPILER_HINT = ("install a compiler: nvcc (CUDA 13 covers sm_75+, CUDA 12 sm_50+) on PATH or "
                 "in $CUDA_HOME, or pip install 'occupancy[compiler]' (NVRTC + ptxas 12.9 for "
                 "sm_50-sm_72)")
TIMEOUT_S = 300  # one compile; a hung compiler must not hang CI forever

# --- compilers ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class Compiler:
    kind: str  # "nvcc" or "nvrtc"
    path: str  # nvcc, or libnvrtc.so
    ptxas: str
    version: str  # "13.0"

    @property
    def label(self) -> str:
        return f"{self.kind} {self.version}"

    def targets(self, cc: int) -> bool:
        major = int(self.version.split(".")[0]) if self.version[:1].isdigit() else 0
        lowest = 75 if major >= 13 else 50 if major >= 12 else 35 if major >= 11 else 30
        return cc >= lowest


@cache
def nvcc_path() -> str | None:
    """The user's nvcc: PATH first, then $CUDA_HOME/bin, then /usr/local/cuda/bin."""
    roots = (os.environ.get("CUDA_HOME"), os.environ.get("CUDA_PATH"), "/usr/local/cuda")
    cands = [shutil.which("nvcc"), *[os.path.join(r, "bin", "nvcc") for r in roots if r]]
    for c in cands:
        if c and os.path.isfile(c) and os.access(c, os.X_OK):
            return os.path.abspath(c)
    return None


@cache
def tool_version(exe: str) -> str:
    try:
        from occupancy.build.run import run_tool

        out = run_tool([exe, "--version"], timeout=60).stdout
    except (OSError, subprocess.TimeoutExpired):
        return "?"
    m = re.search(r"release (\d+\.\d+)", out)
    return m.group(1) if m else "?"


def _wheel_dir(package: str) -> Path | None:
    try:
        import importlib.util

        spec = importlib.util.find_spec(package)
    except (ImportError, ValueError):
        return None
    if spec is None or not spec.submodule_search_locations:
        return None
    return Path(list(spec.submodule_search_locations)[0])


def _executable(p: Path) -> bool:
    if not p.is_file():
        return False
    if not os.access(p, os.X_OK):
        try:
            p.chmod(0o755)  # some wheel installers drop the executable bit
        except OSError:
            return False
    return True


@cache
def nvcc_compiler() -> Compiler | None:
    nvcc = nvcc_path()
    return None if nvcc is None else nvcc_at(nvcc)


@cache
def nvcc_at(nvcc: str) -> Compiler | None:
    """The nvcc at this path with the ptxas beside it, or None."""
    ptxas = os.path.join(os.path.dirname(nvcc), "ptxas")
    if not (os.path.isfile(nvcc) and os.access(nvcc, os.X_OK) and os.path.isfile(ptxas)):
        return None
    return Compiler("nvcc", nvcc, ptxas, tool_version(nvcc))


CUDA_ROOTS = "/usr/local/cuda-*"  # where CUDA's installers put each version


@cache
def other_nvccs() -> tuple[Compiler, ...]:
    """Every other CUDA install's nvcc (/usr/local/cuda-12.4/bin/nvcc, ...), newest first: a
    machine with CUDA 13 and CUDA 12 builds sm_75+ with 13 and sm_50-72 with 12."""
    import glob

    main = nvcc_path()
    seen = {os.path.realpath(main)} if main else set()
    found = []
    for path in sorted(glob.glob(os.path.join(CUDA_ROOTS, "bin", "nvcc"))):
        real = os.path.realpath(path)
        c = nvcc_at(path) if real not in seen else None
        seen.add(real)
        if c is not None:
            found.append(c)
    return tuple(sorted(found, key=lambda c: [int(x) for x in re.findall(r"\d+", c.version)],
                        reverse=True))


@cache
def nvrtc_compiler() -> Compiler | None:
    """NVRTC 12.9 and ptxas 12.9 from the nvidia-cuda-nvrtc-cu12 / -nvcc-cu12 wheels."""
    nvrtc, nvcc = _wheel_dir("nvidia.cuda_nvrtc"), _wheel_dir("nvidia.cuda_nvcc")
    if not nvrtc or not nvcc:
        return None
    lib, ptxas = nvrtc / "lib" / "libnvrtc.so.12", nvcc / "bin" / "ptxas"
    if not lib.is_file() or not _executable(ptxas):
        return None
    return Compiler("nvrtc", str(lib), str(ptxas), tool_version(str(ptxas)))


@cache
def nvrtc_include_dirs() -> tuple[str, ...]:
    """The CUDA 12 headers that match NVRTC 12.9: runtime, CCCL, and nvcc's crt/."""
    out = []
    for pkg in ("nvidia.cuda_runtime", "nvidia.cuda_cccl", "nvidia.cuda_nvcc"):
        d = _wheel_dir(pkg)
        if d and (d / "include").is_dir():
            out.append(str(d / "include"))
    return tuple(out)


def compiler_for(arch: str, nvcc: str | None = None) -> Compiler | None:
    """The compiler that builds this arch: the nvcc the manifest names for it; else the
    user's nvcc where it can, another installed nvcc that can (CUDA 12 for sm_50-72), else
    NVRTC."""
    cc = int(re.sub(r"\D", "", arch) or 0)
    if nvcc:
        chosen = nvcc_at(nvcc)
        return chosen if chosen is not None and chosen.targets(cc) else None
    for c in (nvcc_compiler(), *other_nvccs(), nvrtc_compiler()):
        if c is not None and c.targets(cc) and (c.kind == "nvcc" or 50 <= cc):
            return c
    return None


# --- a build request ---------------------------------------------------------------------------


@dataclass(frozen=True)
class Build:
    """One source to compile for one architecture, as the project builds it."""

    source: str  # absolute, safe
    shown: str  # as the user wrote it, for messages
    arch: str  # "sm_61"
    include_dirs: tuple[str, ...] = ()
    flags: tuple[str, ...] = ()
    defines: tuple[tuple[str, str], ...] = ()
    name_expressions: tuple[str, ...] = ()  # template instances NVRTC must instantiate
    # other sources device-linked with this one (-rdc: functions it calls live there)
    link: tuple[str, ...] = ()
    nvcc: str = ""  # the nvcc the manifest's `compilers:` names for this arch ("": found here)

    @property
    def rdc(self) -> bool:
        return is_rdc(self.flags)


def make_build(source: str | os.PathLike[str], arch: str, *, shown: str | None = None,
               include_dirs: Iterable[str] = (), flags: Sequence[object] = (),
               defines: Mapping[str, object] | Mapping[object, object] | None = None,
               name_expressions: Iterable[str] = (), link: Iterable[str] = (),
               nvcc: str | None = None) -> Build:
    """Validate everything that will reach a compiler's command line."""
    where = shown or os.fspath(source)
    src = safe_path(source, f"{inert(where)}: source")
    incs = tuple(safe_path(d, f"{inert(where)}: include_dirs") for d in include_dirs)
    fl, from_flags = check_flags(flags, f"{inert(where)}: flags")
    defs: dict[str, str] = dict(from_flags)
    for k, v in (defines or {}).items():
        defs[check_define_name(k, f"{inert(where)}: defines")] = define_value(
            v, f"{inert(where)}: defines.{k}")
    # each file once, and never the source itself ("./b.cu" beside "b.cu" is one file)
    linked = tuple({os.path.realpath(p): p for p in (safe_path(f, f"{inert(where)}: link")
                                                     for f in link)
                    if os.path.realpath(p) != os.path.realpath(src)}.values())
    if linked and not is_rdc(fl):
        raise OccupancyError(f"{inert(where)}: 'link:' device-links other sources, which needs "
                             "relocatable device code: add -rdc=true to the flags")
    chosen = safe_path(nvcc, f"{inert(where)}: compilers.{arch}") if nvcc else ""
    return Build(src, where, arch, incs, fl, tuple(sorted(defs.items())),
                 tuple(sorted(set(name_expressions))), linked, chosen)


# --- cache ---------------------------------------------------------------------------------------



@cache
def cuda_tool(name: str) -> str | None:
    """A CUDA binary tool (cuobjdump, nvdisasm) from PATH, beside nvcc, or an nvidia-cuda-*
    wheel (the compiler extra)."""
    exe = shutil.which(name)
    if exe:
        return exe
    nvcc = nvcc_path()
    cands = [Path(os.path.dirname(nvcc), name)] if nvcc else []
    root = _wheel_dir("nvidia")
    if root:
        cands += sorted(root.glob(f"cu*/bin/{name}"))
    return next((str(c) for c in cands if _executable(c)), None)


def nvdisasm_path() -> str | None:
    return cuda_tool("nvdisasm")


T = TypeVar("T")
R = TypeVar("R")


def parallel_map(fn: Callable[[T], R], items: Sequence[T]) -> list[R | BaseException]:
    """fn over items, one worker per core (compilers are separate processes); an item's
    exception is returned in its place, so one bad entry never stops the others."""
    def safe(x: T) -> R | BaseException:
        try:
            return fn(x)
        except Exception as exc:  # noqa: BLE001 - handed back to the caller per item
            return exc

    if len(items) <= 1:
        return [safe(x) for x in items]
    with ThreadPoolExecutor(max_workers=max(1, os.cpu_count() or 1)) as pool:
        return list(pool.map(safe, items))


# --- names -------------------------------------------------------------------------------------


@cache
def _demangler() -> str | None:
    for name in ("cu++filt", "c++filt"):
        exe = shutil.which(name)
        if exe:
            return exe
    nvcc = nvcc_path()
    if nvcc and os.path.isfile(os.path.join(os.path.dirname(nvcc), "cu++filt")):
        return os.path.join(os.path.dirname(nvcc), "cu++filt")
    return None


# nvcc's name for a function local to its file (`static`, an anonymous namespace; the
# device runtime's kernels a -rdc link brings): __nv_static_<n>__<hash>_<file>__<mangled>
_NV_STATIC = "__nv_static_"


def device_runtime(name: str) -> bool:
    """A kernel of CUDA's device runtime (libcudadevrt: memset_3d_device, memcpy_3d_device),
    which an -rdc link of dynamic parallelism brings into an executable: file-local kernels
    of its cuda_device_runtime.cu."""
    at = name.find("__Z", len(_NV_STATIC)) if name.startswith(_NV_STATIC) else -1
    return at > 0 and "_cuda_device_runtime_cu_" in name[:at]


def _file_local(name: str) -> str | None:
    """The mangled part of a file-local function's name (one scan: a symbol is input)."""
    at = name.find("__Z", len(_NV_STATIC)) if name.startswith(_NV_STATIC) else -1
    return name[at + 1:] if at > 0 else None


# nvcc puts a static or anonymous-namespace function of an -rdc compile in a namespace named
# for its file: _INTERNAL_<hash>_<n>_<file>_<ext>_<hash>::heavy(float const*, int) (a .cu's
# `_a_cu_`, a .cuh's `_a_b_cuh_`)
_INTERNAL = re.compile(r"^_INTERNAL_[0-9a-f]{1,16}_\d{1,4}_\w{1,200}?_[0-9a-f]{1,16}::")


def _internal_named(demangled: str) -> str:
    """A demangled name without the file's namespace an -rdc compile gives a file-local
    function (one scan: a symbol is input), marked `[file-local]`."""
    plain = _INTERNAL.sub("", demangled, count=1)
    if plain == demangled or not plain or plain.startswith(":"):  # a name, not a `::x` line
        return demangled
    return f"{plain} [file-local]"


DEMANGLED_LIMIT = 16 << 20  # bytes of demangled names a run may write


def demangle(names: Sequence[str]) -> dict[str, str]:
    """Mangled -> demangled, with a real demangler (cu++filt or c++filt) reading stdin, so a
    hostile symbol is never an argument. Without one, names stay as they are. A file-local
    function's name (_NV_STATIC..., or an -rdc compile's _INTERNAL_..._cu_...:: namespace) is
    its own part demangled, marked `[file-local]`."""
    local = {n: m for n in names if (m := _file_local(n))}
    todo = [local.get(n, n) for n in names if local.get(n, n).startswith("_Z") and "\n" not in n]
    out = {n: n for n in names}
    exe = _demangler()
    if not todo or exe is None:
        return out
    try:
        from occupancy.build.run import run_tool

        # a name of a few hundred bytes whose back-references nest demangles to gigabytes:
        # a small share of time, memory and output, else the names stay as they are
        r = run_tool([exe], stdin="\n".join(todo) + "\n", timeout=5, memory=512 << 20,
                     output=DEMANGLED_LIMIT)
    except (OSError, subprocess.TimeoutExpired):
        return out
    lines = [_internal_named(x) for x in r.stdout.splitlines()]
    if len(lines) == len(todo):
        got = dict(zip(todo, lines, strict=True))
        out.update({n: got[n] for n in names if n in got})
        out.update({n: f"{got[m]} [file-local]" for n, m in local.items() if m in got})
    return out


# --- binaries ------------------------------------------------------------------------------------


def cuobjdump_path() -> str | None:
    return cuda_tool("cuobjdump")
