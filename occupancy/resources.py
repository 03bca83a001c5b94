"""A kernel's resources (registers, smem, spills, barriers, launch bound) from real compilers.

Pipeline: CUDA source -> PTX (nvcc 13 for sm_75 and newer; NVRTC 12.9 from the PyPI
wheel for sm_50 to sm_72, which nvcc 13 no longer targets) -> `ptxas -v` for the
device's architecture, whose report is parsed. Also parses a ptxas log the user kept, and
cubins / fatbins through `cuobjdump --dump-resource-usage`. Results are cached on disk,
keyed by the source text, the defines, the architecture and the compiler.
"""

from __future__ import annotations

import ctypes
import hashlib
import json
import os
import re
import shutil
import subprocess
import tempfile
from collections.abc import Mapping
from dataclasses import asdict, dataclass
from functools import cache
from pathlib import Path

from .device import Device
from .errors import OccupancyError

COMPILER_HINT = ("install the compilers: pip install 'occupancy[compiler]' "
                 "(NVRTC and ptxas 12.9 for sm_50-sm_72); nvcc 13 covers sm_75 and newer")


class CompilerUnavailable(OccupancyError):
    """No compiler for this architecture: callers estimate, or report the hint."""


class CompileError(OccupancyError):
    """The source did not compile: the message carries the compiler's first error."""


@dataclass(frozen=True)
class KernelResources:
    """What the compiler assigned one kernel."""

    function: str
    registers_per_thread: int
    static_shared_memory: int
    barriers: int
    stack_frame_bytes: int
    spill_stores_bytes: int
    spill_loads_bytes: int
    max_threads_per_block: int | None  # __launch_bounds__ (.maxntid), None if unbounded
    source: str  # "ptxas 12.9 sm_61", "cuobjdump sm_90", "ptxas log", or "estimate ..."

    @property
    def spills(self) -> bool:
        return self.spill_stores_bytes > 0 or self.spill_loads_bytes > 0

    @property
    def estimated(self) -> bool:
        return self.source.startswith("estimate")


# --- parsing ---------------------------------------------------------------------------------

_ENTRY = re.compile(r"(?:Compiling entry function|Function properties for) '?([\w$.]+)'?")
_USED = re.compile(r"Used (\d+) registers(.*)")
_SPILL = re.compile(r"(\d+) bytes stack frame, (\d+) bytes spill stores, (\d+) bytes spill loads")
_SMEM = re.compile(r"(\d+) bytes smem")
_BARS = re.compile(r"used (\d+) barriers")
_ARCH = re.compile(r"for '(sm_\d+a?)'")


def parse_ptxas_log(text: str, source: str = "ptxas log") -> dict[str, KernelResources]:
    """Resources per function from `ptxas -v` output (or `nvcc -Xptxas -v`)."""
    found: dict[str, dict[str, int]] = {}
    current: str | None = None
    arch = ""
    for line in text.splitlines():
        m = _ENTRY.search(line)
        if m:
            current = m.group(1)
            found.setdefault(current, {})
            a = _ARCH.search(line)
            arch = a.group(1) if a else arch
            continue
        if current is None:
            continue
        m = _SPILL.search(line)
        if m:
            found[current].update(stack=int(m.group(1)), stores=int(m.group(2)),
                                  loads=int(m.group(3)))
        m = _USED.search(line)
        if m:
            rest = m.group(2)
            smem = _SMEM.search(rest)
            bars = _BARS.search(rest)
            found[current].update(regs=int(m.group(1)), smem=int(smem.group(1)) if smem else 0,
                                  bars=int(bars.group(1)) if bars else 0)
    label = f"{source} {arch}".strip() if source == "ptxas log" else source
    return {
        name: KernelResources(name, v["regs"], v.get("smem", 0), v.get("bars", 0),
                              v.get("stack", 0), v.get("stores", 0), v.get("loads", 0), None, label)
        for name, v in found.items() if "regs" in v
    }


_MAXNTID = re.compile(r"\.entry\s+([\w$]+)\s*\((?:.|\n)*?\)\s*((?:\.\w+[^{]*?)*)\{", re.MULTILINE)


def launch_bounds_from_ptx(ptx: str) -> dict[str, int]:
    """`.maxntid x, y, z` per entry: the kernel's __launch_bounds__ max threads per block."""
    out: dict[str, int] = {}
    for m in _MAXNTID.finditer(ptx):
        d = re.search(r"\.maxntid\s+(\d+)(?:\s*,\s*(\d+))?(?:\s*,\s*(\d+))?", m.group(2))
        if d:
            out[m.group(1)] = int(d.group(1)) * int(d.group(2) or 1) * int(d.group(3) or 1)
    return out


_CUOBJ_FN = re.compile(r"Function ([\w$]+):")
_CUOBJ_RES = re.compile(r"REG:(\d+) STACK:(\d+) SHARED:(\d+)")


def parse_cuobjdump(text: str, dev: Device | None = None, default_arch: str = ""
                    ) -> dict[str, KernelResources]:
    """`cuobjdump --dump-resource-usage` output, for the device's architecture.

    A fatbin holds one section per architecture: we take the device's own, else the
    newest of the same major version below it (what the driver loads). On sm_90 and newer
    the SHARED figure already includes the 1 KB the driver reserves per block, so it is
    subtracted there, and only there (on sm_75-sm_89 it does not include it)."""
    sections: dict[str, dict[str, tuple[int, int, int]]] = {}
    arch = default_arch
    current: str | None = None
    for line in text.splitlines():
        a = re.search(r"arch = (sm_\d+)", line)
        if a:
            arch = a.group(1)
            continue
        m = _CUOBJ_FN.search(line)
        if m:
            current = m.group(1)
            continue
        r = _CUOBJ_RES.search(line)
        if r and current:
            sections.setdefault(arch, {})[current] = (int(r.group(1)), int(r.group(2)),
                                                      int(r.group(3)))
            current = None
    if not sections:
        return {}
    chosen = next(iter(sections))
    if dev is not None and len(sections) > 1:
        want = dev.cc_major * 10 + dev.cc_minor
        same = [a for a in sections if a[3:].isdigit() and int(a[3:]) // 10 == dev.cc_major
                and int(a[3:]) <= want]
        if not same:
            raise OccupancyError(f"no SASS for {dev.name} (sm_{want}) in it: it has "
                                 f"{', '.join(sorted(sections))}")
        chosen = max(same, key=lambda a: int(a[3:]))
    major = int(chosen[3:]) // 10 if chosen[3:].isdigit() else 0
    reserved = dev.reserved_shared_memory_per_block_bytes if dev is not None else 1024
    out = {}
    for fn, (regs, stack, shared) in sections[chosen].items():
        smem = max(shared - reserved, 0) if major >= 9 else shared
        out[fn] = KernelResources(fn, regs, smem, 0, stack, 0, 0, None,
                                  f"cuobjdump {chosen}".strip())
    return out


# --- compilers ---------------------------------------------------------------------------------


def arch_of(dev: Device) -> str:
    return f"sm_{dev.cc_major}{dev.cc_minor}"


@cache
def _nvcc() -> str | None:
    for cand in (shutil.which("nvcc"), os.path.join(os.environ.get("CUDA_HOME", "/usr/local/cuda"),
                                                    "bin", "nvcc")):
        if cand and os.path.isfile(cand):
            return cand
    return None


@cache
def _system_ptxas() -> str | None:
    nvcc = _nvcc()
    if nvcc:
        p = os.path.join(os.path.dirname(nvcc), "ptxas")
        if os.path.isfile(p):
            return p
    return shutil.which("ptxas")


@cache
def _tool_version(exe: str) -> str:
    out = subprocess.run([exe, "--version"], capture_output=True, text=True).stdout
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


@cache
def _wheel_tools() -> tuple[str, str] | None:
    """(libnvrtc.so.12, ptxas) from the nvidia-cuda-nvrtc-cu12 / -nvcc-cu12 wheels."""
    nvrtc = _wheel_dir("nvidia.cuda_nvrtc")
    nvcc = _wheel_dir("nvidia.cuda_nvcc")
    if not nvrtc or not nvcc:
        return None
    lib = nvrtc / "lib" / "libnvrtc.so.12"
    ptxas = nvcc / "bin" / "ptxas"
    if not lib.is_file() or not ptxas.is_file():
        return None
    if not os.access(ptxas, os.X_OK):
        try:
            ptxas.chmod(0o755)
        except OSError:
            return None
    return str(lib), str(ptxas)


def _nvrtc_ptx(lib_path: str, source: str, name: str, arch: str, options: list[str]) -> str:
    lib = ctypes.CDLL(lib_path)
    prog = ctypes.c_void_p()

    def check(status: int, what: str) -> None:
        if status != 0:
            lib.nvrtcGetErrorString.restype = ctypes.c_char_p
            raise CompileError(f"NVRTC {what} failed: {lib.nvrtcGetErrorString(status).decode()}")

    check(lib.nvrtcCreateProgram(ctypes.byref(prog), source.encode(), name.encode(), 0, None, None),
          "create")
    try:
        opts = [f"--gpu-architecture=compute_{arch[3:]}", *options]
        arr = (ctypes.c_char_p * len(opts))(*[o.encode() for o in opts])
        status = lib.nvrtcCompileProgram(prog, len(opts), arr)
        if status != 0:
            size = ctypes.c_size_t()
            lib.nvrtcGetProgramLogSize(prog, ctypes.byref(size))
            buf = ctypes.create_string_buffer(size.value)
            lib.nvrtcGetProgramLog(prog, buf)
            first = next((ln for ln in buf.value.decode(errors="replace").splitlines()
                          if "error" in ln), buf.value.decode(errors="replace")[:300])
            raise CompileError(f"{name}: {first.strip()}")
        size = ctypes.c_size_t()
        check(lib.nvrtcGetPTXSize(prog, ctypes.byref(size)), "PTX size")
        buf = ctypes.create_string_buffer(size.value)
        check(lib.nvrtcGetPTX(prog, buf), "PTX")
        return buf.value.decode()
    finally:
        lib.nvrtcDestroyProgram(ctypes.byref(prog))


def _run(cmd: list[str], what: str) -> subprocess.CompletedProcess[str]:
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        err = next((ln for ln in (r.stderr + r.stdout).splitlines() if "error" in ln.lower()),
                   (r.stderr or r.stdout).strip()[:300])
        raise CompileError(f"{what}: {err.strip()}")
    return r


def compiler_for(arch: str) -> str | None:
    """Which compiler will build this architecture: 'nvcc', 'nvrtc', or None."""
    cc = int(arch[3:].rstrip("a"))
    if cc >= 75 and _nvcc() and _system_ptxas():
        return "nvcc"
    if cc >= 50 and _wheel_tools():
        return "nvrtc"
    return None


def _cache_dir() -> Path:
    base = os.environ.get("OCCUPANCY_CACHE_DIR") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache"),
        "occupancy")
    return Path(base) / "resources"


def compile_resources(source: str | os.PathLike[str], arch: str,
                      defines: Mapping[str, object] | None = None,
                      name: str | None = None) -> dict[str, KernelResources]:
    """Every kernel of a .cu source (path or text) compiled for `arch` (e.g. 'sm_61')."""
    path = Path(source) if not isinstance(source, str) or "\n" not in source else None
    if path is not None:
        try:
            text = path.read_text(encoding="utf-8")
        except OSError as exc:
            raise OccupancyError(f"{path}: cannot read the kernel source: {exc.strerror}") from None
        name = name or path.name
    else:
        text = str(source)
        name = name or "kernel.cu"
    flags = [f"-D{k}={v}" for k, v in sorted((defines or {}).items())]
    tool = compiler_for(arch)
    if tool is None:
        raise CompilerUnavailable(f"no compiler for {arch}: {COMPILER_HINT}")
    ptxas = _system_ptxas() if tool == "nvcc" else _wheel_tools()[1]  # type: ignore[index]
    assert ptxas is not None
    version = _tool_version(ptxas)
    key = hashlib.sha256(json.dumps([text, arch, flags, tool, version]).encode()).hexdigest()
    cache = _cache_dir() / f"{key}.json"
    try:
        data = json.loads(cache.read_text())
        return {k: KernelResources(**v) for k, v in data.items()}
    except (OSError, ValueError, TypeError):
        pass
    with tempfile.TemporaryDirectory(prefix="occupancy-") as tmp:
        ptx_path = os.path.join(tmp, "k.ptx")
        if tool == "nvcc":
            src_path = os.path.join(tmp, name if name.endswith(".cu") else name + ".cu")
            Path(src_path).write_text(text)
            _run([_nvcc() or "nvcc", f"-arch=compute_{arch[3:]}", "-ptx", *flags, src_path,
                  "-o", ptx_path], f"nvcc {name}")
            ptx = Path(ptx_path).read_text()
        else:
            lib = _wheel_tools()[0]  # type: ignore[index]
            ptx = _nvrtc_ptx(lib, text, name, arch, flags)
            Path(ptx_path).write_text(ptx)
        log = _run([ptxas, f"-arch={arch}", "-v", ptx_path, "-o", os.path.join(tmp, "k.cubin")],
                   f"ptxas {name}")
    label = f"ptxas {version} {arch}"
    found = parse_ptxas_log(log.stderr + log.stdout, source=label)
    bounds = launch_bounds_from_ptx(ptx)
    result = {k: KernelResources(**{**asdict(v), "max_threads_per_block": bounds.get(k)})
              for k, v in found.items()}
    try:
        cache.parent.mkdir(parents=True, exist_ok=True)
        tmp_file = cache.with_suffix(f".{os.getpid()}.tmp")
        tmp_file.write_text(json.dumps({k: asdict(v) for k, v in result.items()}))
        os.replace(tmp_file, cache)
    except OSError:
        pass  # a read-only home still works, just without the cache
    return result


def _cuobjdump() -> str | None:
    """cuobjdump from PATH, the CUDA toolkit, or the nvidia-cuda-cuobjdump wheel."""
    exe = shutil.which("cuobjdump")
    if exe:
        return exe
    nvcc = _nvcc()
    cands = [os.path.join(os.path.dirname(nvcc), "cuobjdump")] if nvcc else []
    root = _wheel_dir("nvidia")
    if root:
        cands += [str(p) for p in sorted(root.glob("cu*/bin/cuobjdump"))]
        cands.append(str(root / "cuda_cuobjdump" / "bin" / "cuobjdump"))
    for c in cands:
        if os.path.isfile(c):
            if not os.access(c, os.X_OK):
                try:
                    os.chmod(c, 0o755)
                except OSError:
                    continue
            return c
    return None


def resources_from_binary(path: str | os.PathLike[str], dev: Device | None = None
                          ) -> dict[str, KernelResources]:
    """Resources of every kernel in a cubin or fatbin, through cuobjdump."""
    exe = _cuobjdump()
    if exe is None:
        raise CompilerUnavailable("reading a cubin needs cuobjdump: pip install 'occupancy[compiler]' "
                                  "(nvidia-cuda-cuobjdump) or put the CUDA toolkit's bin/ on PATH")
    r = _run([exe, "--dump-resource-usage", str(path)], f"cuobjdump {path}")
    arch = ""
    if "arch = " not in r.stdout:  # a bare cubin: its one ELF is named after the arch
        elf = _run([exe, "-lelf", str(path)], f"cuobjdump {path}").stdout
        m = re.search(r"\.(sm_\d+)\.cubin", elf)
        arch = m.group(1) if m else ""
    found = parse_cuobjdump(r.stdout, dev, arch)
    if not found:
        raise OccupancyError(f"{path}: cuobjdump found no kernels in it")
    return found


def compile_or_estimate(source: str | os.PathLike[str], dev: Device,
                        defines: Mapping[str, object] | None = None) -> dict[str, KernelResources]:
    """Compile for the device; below sm_50, where no shipped compiler reaches, compile for
    sm_50 and mark every figure as an estimate. No compiler at all: CompilerUnavailable."""
    arch = arch_of(dev)
    try:
        return compile_resources(source, arch, defines)
    except CompilerUnavailable:
        if dev.cc_major >= 5 or compiler_for("sm_50") is None:
            raise
    found = compile_resources(source, "sm_50", defines)
    return {k: KernelResources(**{**asdict(v), "source": f"estimate ({v.source}; no compiler "
                                                           f"targets {arch})"})
            for k, v in found.items()}


def resolve_for_check(spec: object, dev: Device) -> KernelResources:
    """check's resolver: numbers from the manifest, or the compiler, a ptxas log, a cubin."""
    from .check import KernelSpec, given_resources

    assert isinstance(spec, KernelSpec)
    fn = spec.function or spec.name
    if spec.source:
        found = compile_or_estimate(spec.source, dev, spec.defines)
        where = f"{spec.source} compiled for {arch_of(dev)}"
    elif spec.ptxas_log:
        found = parse_ptxas_log(Path(spec.ptxas_log).read_text(errors="replace"))
        where = spec.ptxas_log
    elif spec.cubin:
        found = resources_from_binary(spec.cubin, dev)
        where = spec.cubin
    else:
        return given_resources(spec)
    if fn not in found:
        known = ", ".join(sorted(found)) or "none"
        raise OccupancyError(f"kernel '{spec.name}': no function '{fn}' in {where} "
                             f"(found: {known}); set 'function:' to one of them")
    return found[fn]
