"""Building a kernel source for one architecture with nvcc or NVRTC (+ ptxas), in place, with
the manifest's include dirs, flags and defines; results through the build cache."""

from __future__ import annotations

import ctypes
import hashlib
import os
import re
import stat
import subprocess
import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import replace
from pathlib import Path

from occupancy.build.binaries import parse_cubin, ptx_entries
from occupancy.build.cache import _cache_load, _cache_store, _key, cache_dir
from occupancy.build.compilers import (
    COMPILER_HINT,
    TIMEOUT_S,
    Build,
    Compiler,
    compiler_for,
    demangle,
    make_build,
    nvdisasm_path,
    nvrtc_include_dirs,
)
from occupancy.build.resources import CompileError, CompilerUnavailable, KernelResources, parse_ptxas_log
from occupancy.build.run import COMPILER_MEMORY, run_tool
from occupancy.core.device import Device
from occupancy.core.errors import OccupancyError
from occupancy.inputs.flags import FLAG_RULES
from occupancy.inputs.safety import check_function, inert, safe_path

_ERROR_LINES = 3

# --- compiling -------------------------------------------------------------------------------


def _first_errors(text: str, build: Build, tmp: str | None = None,
                  also: Mapping[str, str] | None = None) -> str:
    lines = [ln for ln in text.splitlines() if ln.strip()]
    errs = [ln for ln in lines if re.search(r"\berror\b|fatal", ln, re.IGNORECASE)] or lines
    msg = " | ".join(ln.strip() for ln in errs[:_ERROR_LINES])[:600]
    for path, shown in (also or {}).items():
        msg = msg.replace(path, shown)
    if build.source:  # an empty source (a PTX JIT) would put the name between every character
        msg = msg.replace(build.source, build.shown)
    if tmp:
        msg = msg.replace(tmp + os.sep, "")
    return inert(msg) if msg else "failed without a message"


def _run(cmd: list[str], build: Build, what: str, cwd: str | None = None,
         also: Mapping[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    try:
        r = run_tool(cmd, timeout=TIMEOUT_S, memory=COMPILER_MEMORY, cwd=cwd)
    except subprocess.TimeoutExpired:
        raise CompileError(f"{inert(build.shown)}: {what} did not finish in {TIMEOUT_S} s") from None
    except OSError as exc:
        raise CompilerUnavailable(f"{what} cannot run: {exc.strerror}") from None
    if r.returncode != 0:
        raise CompileError(f"{inert(build.shown)} for {build.arch}: {what}: "
                           f"{_first_errors(r.stderr + r.stdout, build, cwd, also)}")
    return r


def _instantiating_wrapper(build: Build) -> str:
    """A .cu that includes the source and takes the address of every name expression, which
    makes nvcc instantiate those template kernels (as NVRTC's name expressions do). Kept in
    the cache folder under a name made from its content, so its path is stable."""
    for e in build.name_expressions:  # the last gate before a file: a C++ name, nothing else
        check_function(e, f"{inert(build.shown)}: a template instance")
    lines = [f'#include "{build.source}"',
             "static void* const occupancy_instances_[] = {",
             *[f"    (void*)&{e}," for e in build.name_expressions], "};"]
    text = "\n".join(lines) + "\n"
    d = cache_dir().parent / "wrappers"
    d.mkdir(parents=True, exist_ok=True)
    path = d / f"{hashlib.sha256(text.encode()).hexdigest()[:32]}.cu"
    if not path.is_file() or path.read_text() != text:
        tmp = path.with_suffix(f".{os.getpid()}.tmp")
        tmp.write_text(text)
        os.replace(tmp, path)
    return safe_path(path, "the compile cache folder")


BuildOutput = tuple[dict[str, KernelResources], list[str], bytes, str]  # +deps, cubin, PTX


def _nvcc_build(build: Build, c: Compiler) -> BuildOutput:
    source = build.source
    if build.name_expressions:
        source = _instantiating_wrapper(build)
    with tempfile.TemporaryDirectory(prefix="occupancy-") as tmp:
        cubin, deps = os.path.join(tmp, "k.cubin"), os.path.join(tmp, "k.d")
        # -keep leaves the PTX of this very compile in tmp (ptxsim reads its addresses)
        cmd = [c.path, "-cubin", f"-arch={build.arch}", "-keep", "-keep-dir", tmp,
               "-Xptxas", "-v", *_ptxas_x(build),
               *[f for f in build.flags if not f.startswith("-Xptxas=")],
               *[f"-I{d}" for d in build.include_dirs],
               *[f"-D{k}={_nvcc_list_item(v)}" for k, v in build.defines],
               "-MD", "-MF", deps, source, "-o", cubin]
        r = _run(cmd, build, c.label, cwd=tmp,
                 also={source: "the instantiation of " + ", ".join(build.name_expressions)}
                 if source != build.source else None)
        data = Path(cubin).read_bytes()
        dep_text = Path(deps).read_text(errors="replace") if os.path.exists(deps) else ""
        ptx = "\n".join(p.read_text(errors="replace") for p in sorted(Path(tmp).glob("*.ptx")))
    files = [p.replace("\\ ", " ") for p in re.split(r"(?<!\\)\s+", dep_text.split(":", 1)[-1])
             if p and p != "\\"]
    return _combine(r.stderr + r.stdout, data, build, f"{c.label} {build.arch}", None), \
        [os.path.abspath(f) for f in files], data, ptx


def _nvcc_list_item(value: str) -> str:
    """nvcc reads -D as a comma-separated list: `\\,` keeps a comma in the value, so nvcc
    defines the same macro NVRTC does (define values never hold a backslash)."""
    return value.replace(",", "\\,")


def _ptxas_x(build: Build) -> list[str]:
    out = []
    for f in build.flags:
        if f.startswith(("-Xptxas=", "--ptxas-options=")):
            out += ["-Xptxas", f.split("=", 1)[1]]
    return out



def _loop_mixes(cubin: bytes) -> dict[str, tuple[tuple[str, int], ...]]:
    """The hottest loop's instruction mix per kernel, from nvdisasm (empty without it)."""
    from occupancy.build.binaries import sass_loop_mix

    exe = nvdisasm_path()
    if exe is None:
        return {}
    with tempfile.TemporaryDirectory(prefix="occupancy-") as tmp:
        path = os.path.join(tmp, "k.cubin")
        Path(path).write_bytes(cubin)
        try:
            r = run_tool([exe, "-c", path], timeout=120)
        except (OSError, subprocess.TimeoutExpired):
            return {}
    return sass_loop_mix(r.stdout) if r.returncode == 0 else {}


def _combine(log: str, cubin: bytes, build: Build, label: str, ptx: str | None
             ) -> dict[str, KernelResources]:
    """ptxas's report (registers, smem, spills) plus the cubin's launch bounds and the
    SASS instruction mix of each kernel's hottest loop."""
    sections = parse_ptxas_log(log, label="")
    found = sections.get(build.arch) or next(iter(sections.values()), {})
    binary = parse_cubin(cubin)
    bounds = ptx_entries(ptx) if ptx else {}
    mixes = _loop_mixes(cubin)
    out = {}
    for name, res in found.items():
        k = binary.kernels.get(name)
        if k is None:
            continue  # a device function compiled with -rdc, not a kernel
        entry = bounds.get(name)
        out[name] = replace(res, source=label, max_threads_per_block=k.max_threads,
                            min_blocks_per_sm=entry.min_blocks if entry else None,
                            cluster_dims=k.cluster_dims, loop_mix=mixes.get(name))
    return out


def _nvrtc_ptx(c: Compiler, build: Build, text: str) -> tuple[str, dict[str, str]]:
    """PTX from NVRTC, and the mangled name of every name expression."""
    lib = ctypes.CDLL(c.path)
    prog = ctypes.c_void_p()

    def check(status: int, what: str) -> None:
        if status != 0:
            lib.nvrtcGetErrorString.restype = ctypes.c_char_p
            raise CompileError(f"NVRTC {what} failed: {lib.nvrtcGetErrorString(status).decode()}")

    check(lib.nvrtcCreateProgram(ctypes.byref(prog), text.encode(), build.source.encode(), 0,
                                 None, None), "create")
    try:
        for expr in build.name_expressions:
            check(lib.nvrtcAddNameExpression(prog, f"&{expr}".encode()), "name expression")
        dirs = (os.path.dirname(build.source), *build.include_dirs, *nvrtc_include_dirs())
        opts = [f"--gpu-architecture=compute_{build.arch[3:]}", "-std=c++17",
                *[f"-I{d}" for d in dirs], *[f"-D{k}={v}" for k, v in build.defines]]
        for f in build.flags:
            for rx, spell in FLAG_RULES:
                m = rx.fullmatch(f)
                if m:
                    s = spell(m)
                    if s:
                        opts.append(s)
                    break
            else:
                if f.startswith("-U"):
                    opts.append(f)
        arr = (ctypes.c_char_p * len(opts))(*[o.encode() for o in opts])
        status = lib.nvrtcCompileProgram(prog, len(opts), arr)
        if status != 0:
            size = ctypes.c_size_t()
            lib.nvrtcGetProgramLogSize(prog, ctypes.byref(size))
            buf = ctypes.create_string_buffer(size.value)
            lib.nvrtcGetProgramLog(prog, buf)
            log = buf.value.decode(errors="replace")
            hint = ""
            if re.search(r"host variables are not allowed|cannot open source file \"(stdio|stdlib|"
                         r"string|math|assert|cublas|cuda_runtime_api|omp|mpi|unistd)", log):
                hint = (f" (NVRTC builds device code only; this file has host code: put a CUDA 12 "
                        f"nvcc on PATH for {build.arch}, or give a ptxas_log or cubin)")
            raise CompileError(f"{inert(build.shown)} for {build.arch}: {c.label}: "
                               f"{_first_errors(log, build)}{hint}")
        size = ctypes.c_size_t()
        check(lib.nvrtcGetPTXSize(prog, ctypes.byref(size)), "PTX size")
        buf = ctypes.create_string_buffer(size.value)
        check(lib.nvrtcGetPTX(prog, buf), "PTX")
        lowered = {}
        for expr in build.name_expressions:
            name = ctypes.c_char_p()
            if lib.nvrtcGetLoweredName(prog, f"&{expr}".encode(), ctypes.byref(name)) == 0 \
                    and name.value:
                lowered[expr] = name.value.decode()
        return buf.value.decode(), lowered
    finally:
        lib.nvrtcDestroyProgram(ctypes.byref(prog))


_INCLUDE = re.compile(r'^\s*#\s*include\s*[<"]([^>"]+)[>"]', re.MULTILINE)
_DEP_CAP = 2000


def _not_a_device(path: str, inc: str, cur: str) -> None:
    """An #include of /dev/zero, a FIFO or a socket would feed the compiler without end
    (NVRTC runs in this process): refused before any compiler runs."""
    try:
        mode = os.stat(path).st_mode
    except (OSError, ValueError):
        return
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode) or stat.S_ISFIFO(mode) or stat.S_ISSOCK(mode):
        raise CompileError(f"{inert(cur)}: #include {inert(inc)[:80]} is a device, FIFO "
                           "or socket, not a source file")


def scan_includes(source: str, dirs: Sequence[str]) -> list[str]:
    """The user's files a source includes, transitively (for the cache key where the
    compiler gives no dependency output); over-approximates, never under."""
    seen: list[str] = [source]
    todo = [source]
    while todo and len(seen) < _DEP_CAP:
        cur = todo.pop()
        try:
            text = Path(cur).read_text(errors="replace")
        except OSError:
            continue
        for inc in _INCLUDE.findall(text):
            for d in (os.path.dirname(cur), *dirs):
                p = os.path.abspath(os.path.join(d, inc))
                _not_a_device(p, inc, cur)
                if os.path.isfile(p):
                    if p not in seen:
                        seen.append(p)
                        todo.append(p)
                    break
    return seen


def _nvrtc_build(build: Build, c: Compiler) -> BuildOutput:
    text = Path(build.source).read_text(encoding="utf-8", errors="replace")
    ptx, _ = _nvrtc_ptx(c, build, text)
    with tempfile.TemporaryDirectory(prefix="occupancy-") as tmp:
        ptx_path, cubin = os.path.join(tmp, "k.ptx"), os.path.join(tmp, "k.cubin")
        Path(ptx_path).write_text(ptx)
        extra = ["-c"] if build.rdc else []
        for f in build.flags:
            m = re.fullmatch(r"--?maxrregcount=(\d+)", f)
            if m:
                extra += ["-maxrregcount", m.group(1)]
        extra += [x for x in _ptxas_x(build) if x != "-Xptxas"]
        r = _run([c.ptxas, f"-arch={build.arch}", "-v", *extra, ptx_path, "-o", cubin], build,
                 f"ptxas {c.version}", cwd=tmp)
        data = Path(cubin).read_bytes()
    res = _combine(r.stderr + r.stdout, data, build, f"{c.label} {build.arch}", ptx)
    return res, scan_includes(build.source, [os.path.dirname(build.source), *build.include_dirs]), \
        data, ptx


def compile_build(build: Build) -> dict[str, KernelResources]:
    """Every kernel of the build, by mangled name (cached; demangled names filled in)."""
    return _compile(build)[0]


def build_cubin(build: Build) -> bytes:
    """The cubin of the very build whose resources compile_build reports (one compile
    serves both: `measure` runs what `tile` ranked)."""
    return _compile(build, want=".cubin")[1] or b""


def build_ptx(build: Build) -> str:
    """The PTX of that same compile (the addresses ptxsim follows)."""
    return (_compile(build, want=".ptx")[1] or b"").decode(errors="replace")


def _compile(build: Build, want: str | None = None
             ) -> tuple[dict[str, KernelResources], bytes | None]:
    c = compiler_for(build.arch)
    if c is None:
        raise CompilerUnavailable(f"no compiler targets {build.arch}: {COMPILER_HINT}")
    key = _key(build, c)
    hit = _cache_load(key)
    if hit is not None:
        if want is None:
            return hit, None
        try:
            return hit, (cache_dir() / f"{key}{want}").read_bytes()
        except OSError:
            pass  # compile again for the binary
    if not os.path.isfile(build.source):
        raise OccupancyError(f"{inert(build.shown)}: no such file")
    scan_includes(build.source, [os.path.dirname(build.source), *build.include_dirs])
    found, deps, cubin, ptx = (_nvcc_build if c.kind == "nvcc" else _nvrtc_build)(build, c)
    names = demangle(list(found))
    found = {k: replace(v, demangled=names.get(k, k)) for k, v in found.items()}
    _cache_store(key, found, [build.source, *deps], cubin, ptx)
    return found, cubin if want == ".cubin" else ptx.encode() if want == ".ptx" else None




# --- what tile, measure and check ask for ------------------------------------------------------


def arch_of(dev: Device) -> str:
    return f"sm_{dev.cc_major}{dev.cc_minor}"


def compile_resources(source: str | os.PathLike[str], arch: str,
                      defines: Mapping[str, object] | None = None, **build_args: object
                      ) -> dict[str, KernelResources]:
    """Every kernel of a .cu file compiled for `arch` (e.g. 'sm_61'), by mangled name."""
    return compile_build(make_build(source, arch, defines=defines, **build_args))  # type: ignore[arg-type]


def compile_or_estimate(source: str | os.PathLike[str], dev: Device,
                        defines: Mapping[str, object] | None = None, **build_args: object
                        ) -> dict[str, KernelResources]:
    """Compile for the device; below sm_50, where no compiler here reaches, compile for
    sm_50 and mark every figure as an estimate. No compiler at all: CompilerUnavailable."""
    build = device_build(make_build(source, arch_of(dev), defines=defines, **build_args), dev)  # type: ignore[arg-type]
    return _estimate_label(compile_build(build), dev, build)


def device_build(build: Build, dev: Device) -> Build:
    """The build for a device: its own arch, or sm_50 (an estimate) below what compilers reach."""
    if dev.cc_major >= 5 or compiler_for(build.arch) is not None:
        return build
    return replace(build, arch="sm_50", shown=build.shown)


def _estimate_label(found: dict[str, KernelResources], dev: Device, build: Build
                    ) -> dict[str, KernelResources]:
    if build.arch == arch_of(dev):
        return found
    return {k: v.with_source(f"estimate ({v.source}; no compiler targets {arch_of(dev)})")
            for k, v in found.items()}
