"""The compilers: find them, build a kernel source for one architecture, read binaries.

- nvcc (the user's: PATH, $CUDA_HOME/bin or /usr/local/cuda/bin) for every arch its
  version targets (13.x: sm_75+, 12.x: sm_50+), compiling the file in place, so headers
  beside it are found, with the manifest's include dirs, flags and defines;
- NVRTC 12.9 + ptxas 12.9 from the PyPI wheels (the `compiler` extra) for sm_50-sm_72
  when no nvcc targets them, with the CUDA 12 runtime / CCCL headers from the wheels
  (cooperative_groups.h, mma.h, cuda_fp16.h, cuda/pipeline); NVRTC builds device code
  only, so a file with host code there needs a CUDA 12 nvcc (the error says so);
- cuobjdump to take the cubins and PTX out of a fatbin, executable or library.

Nothing reaches a shell: every argument is a list item, every path is absolute and free of
the characters nvcc's own shell would act on (safety.py), flags come from a whitelist.
Results are cached on disk, keyed by the compiler, the arch, every flag and the content of
every file the compiler read (its dependency output), plus this tool's version.
"""

from __future__ import annotations

import ctypes
import hashlib
import json
import math
import os
import re
import shutil
import subprocess
import tempfile
from collections.abc import Callable, Iterable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field, replace
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING, TypeVar

from occupancy.build.binaries import kind_of, parse_cubin, ptx_entries, ptx_target, static_shared_from_cubin
from occupancy.build.resources import CompileError, CompilerUnavailable, KernelResources, parse_ptxas_log
from occupancy.core.device import Device
from occupancy.core.errors import FileError, OccupancyError
from occupancy.core.version import __version__
from occupancy.inputs.safety import check_define_name, check_flag_token, define_value, inert, safe_path

if TYPE_CHECKING:
    from occupancy.tune.ptxsim import Traffic

COMPILER_HINT = ("install a compiler: nvcc (CUDA 13 covers sm_75+, CUDA 12 sm_50+) on PATH or "
                 "in $CUDA_HOME, or pip install 'occupancy[compiler]' (NVRTC + ptxas 12.9 for "
                 "sm_50-sm_72)")
TIMEOUT_S = 300  # one compile; a hung compiler must not hang CI forever
CACHE_FORMAT = 4  # what a cache entry holds; bump when KernelResources gains a field (4: PTX)
_ERROR_LINES = 3


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
        out = subprocess.run([exe, "--version"], capture_output=True, text=True,
                             timeout=60).stdout
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
    if nvcc is None:
        return None
    ptxas = os.path.join(os.path.dirname(nvcc), "ptxas")
    if not os.path.isfile(ptxas):
        return None
    return Compiler("nvcc", nvcc, ptxas, tool_version(nvcc))


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


def compiler_for(arch: str) -> Compiler | None:
    """The compiler that builds this arch: the user's nvcc where it can, else NVRTC."""
    cc = int(re.sub(r"\D", "", arch) or 0)
    for c in (nvcc_compiler(), nvrtc_compiler()):
        if c is not None and c.targets(cc) and (c.kind == "nvcc" or 50 <= cc):
            return c
    return None


# --- a build request ---------------------------------------------------------------------------

# nvcc flags a manifest may give, with their NVRTC spelling (None: nvcc only, dropped there).
_FLAG_RULES: list[tuple[re.Pattern[str], Callable[[re.Match[str]], str | None]]] = [
    (re.compile(r"--?std=(c\+\+(?:03|11|14|17|20))"), lambda m: f"-std={m.group(1)}"),
    (re.compile(r"--?use_fast_math"), lambda m: "--use_fast_math"),
    (re.compile(r"--?maxrregcount=(\d{1,3})"), lambda m: f"--maxrregcount={m.group(1)}"),
    (re.compile(r"(?:-rdc|--relocatable-device-code)=(true|false)"),
     lambda m: f"-rdc={m.group(1)}"),
    (re.compile(r"-dc"), lambda m: "-rdc=true"),
    (re.compile(r"(?:-G|--device-debug)"), lambda m: "-G"),
    (re.compile(r"(?:-lineinfo|--generate-line-info)"), lambda m: "-lineinfo"),
    (re.compile(r"--?(ftz|prec-div|prec-sqrt|fmad)=(true|false)"),
     lambda m: f"--{m.group(1)}={m.group(2)}"),
    (re.compile(r"--?(?:expt-relaxed-constexpr)"), lambda m: "--expt-relaxed-constexpr"),
    (re.compile(r"--?(?:expt-extended-lambda|extended-lambda)"), lambda m: "--extended-lambda"),
    (re.compile(r"--?extra-device-vectorization"), lambda m: "--extra-device-vectorization"),
    (re.compile(r"--?restrict"), lambda m: "--restrict"),
    (re.compile(r"-O[0-3]"), lambda m: None),  # host optimisation: no effect on device code
    (re.compile(r"(?:-w|--disable-warnings)"), lambda m: "-w"),
    (re.compile(r"(?:-Xptxas=|--ptxas-options=)(-O[0-3]|-dlcm=(?:ca|cg)|-dscm=(?:cg|cs|wt)|"
                r"--allow-expensive-optimizations=(?:true|false)|-warn-spills|-warn-lmem-usage)"),
     lambda m: None),
]
FLAG_HELP = ("-std=c++17, --use_fast_math, -maxrregcount=N, -rdc=true, -dc, -G, -lineinfo, "
             "--ftz/--prec-div/--prec-sqrt/--fmad=true|false, --expt-relaxed-constexpr, "
             "--extended-lambda, --restrict, -O0..3, -Xptxas=-O0..3|-dlcm=ca|cg, -DNAME=VALUE, "
             "-UNAME (include folders go in include_dirs)")


def check_flags(flags: Sequence[object], where: str) -> tuple[tuple[str, ...], dict[str, str]]:
    """Validate manifest flags against the whitelist; -D/-U become defines (typed)."""
    out: list[str] = []
    defines: dict[str, str] = {}
    for f in flags:
        if not isinstance(f, str):
            raise OccupancyError(f"{where}: each flag is a string like '-std=c++17', got {f!r}")
        check_flag_token(f, where)
        m = re.fullmatch(r"-D([^=]*)(?:=(.*))?", f)
        if m:
            name = check_define_name(m.group(1), where)
            defines[name] = define_value(m.group(2) if m.group(2) is not None else "1", where)
            continue
        if re.fullmatch(r"-U[A-Za-z_]\w*", f) or any(rx.fullmatch(f) for rx, _ in _FLAG_RULES):
            out.append(f)
            continue
        raise OccupancyError(f"{where}: flag {inert(f)} is not accepted (flags that choose the "
                             f"arch, write files or run programs are refused); accepted: {FLAG_HELP}")
    return tuple(out), defines


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

    @property
    def rdc(self) -> bool:
        return any(f in ("-dc", "-rdc=true", "--relocatable-device-code=true") for f in self.flags)


def make_build(source: str | os.PathLike[str], arch: str, *, shown: str | None = None,
               include_dirs: Iterable[str] = (), flags: Sequence[object] = (),
               defines: Mapping[str, object] | Mapping[object, object] | None = None,
               name_expressions: Iterable[str] = ()) -> Build:
    """Validate everything that will reach a compiler's command line."""
    where = shown or os.fspath(source)
    src = safe_path(source, f"{inert(where)}: source")
    incs = tuple(safe_path(d, f"{inert(where)}: include_dirs") for d in include_dirs)
    fl, from_flags = check_flags(flags, f"{inert(where)}: flags")
    defs: dict[str, str] = dict(from_flags)
    for k, v in (defines or {}).items():
        defs[check_define_name(k, f"{inert(where)}: defines")] = define_value(
            v, f"{inert(where)}: defines.{k}")
    return Build(src, where, arch, incs, fl, tuple(sorted(defs.items())),
                 tuple(sorted(set(name_expressions))))


# --- cache ---------------------------------------------------------------------------------------


def cache_dir() -> Path:
    base = os.environ.get("OCCUPANCY_CACHE_DIR") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache"),
        "occupancy")
    return Path(base) / "builds"


def _sha(path: str) -> str | None:
    try:
        with open(path, "rb") as fh:
            return hashlib.sha256(fh.read()).hexdigest()
    except OSError:
        return None


def _stat(path: str) -> list[int] | None:
    try:
        st = os.stat(path)
    except OSError:
        return None
    return [st.st_mtime_ns, st.st_size]


def _deps_unchanged(deps: list[list[object]]) -> bool:
    """Every file the compiler read is as it was: same stat, or else same content."""
    for path, st, sha in deps:
        assert isinstance(path, str)
        if _stat(path) == st:
            continue
        if _sha(path) != sha:
            return False
    return True


def _key(build: Build, compiler: Compiler) -> str:
    text = _sha(build.source) or "missing"
    # nvdisasm's presence decides whether the entry holds the SASS loop mix
    blob = json.dumps([__version__, CACHE_FORMAT, compiler.label, compiler.path, nvdisasm_path(),
                       build.arch,
                       build.source, text, build.include_dirs, build.flags, build.defines,
                       build.name_expressions])
    return hashlib.sha256(blob.encode()).hexdigest()


def _cache_load(key: str) -> dict[str, KernelResources] | None:
    path = cache_dir() / f"{key}.json"
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        if not _deps_unchanged(data["deps"]):
            return None
        out = {}
        for k, v in data["kernels"].items():
            dims = v.pop("cluster_dims", None)
            mix = v.pop("loop_mix", None)
            out[k] = KernelResources(**v, cluster_dims=(int(dims[0]), int(dims[1]), int(dims[2]))
                                     if dims else None,
                                     loop_mix=tuple((str(a), int(b)) for a, b in mix) if mix else None)
        return out
    except (OSError, ValueError, TypeError, KeyError, AssertionError, AttributeError):
        return None  # missing or corrupt: compile again


def _write_atomic(where: Path, name: str, data: bytes) -> None:
    fd, tmp = tempfile.mkstemp(dir=where, suffix=".tmp")
    with os.fdopen(fd, "wb") as fb:
        fb.write(data)
    os.replace(tmp, where / name)


def _cache_store(key: str, kernels: Mapping[str, KernelResources], deps: Iterable[str],
                 cubin: bytes | None = None, ptx: str | None = None) -> None:
    rows = []
    for d in sorted(set(deps)):
        st, sha = _stat(d), _sha(d)
        if st is not None and sha is not None:
            rows.append([d, st, sha])
    try:
        where = cache_dir()
        where.mkdir(parents=True, exist_ok=True)
        # the binaries first, so a json entry never points at a missing one
        if cubin is not None:
            _write_atomic(where, f"{key}.cubin", cubin)
        if ptx is not None:
            _write_atomic(where, f"{key}.ptx", ptx.encode())
        blob = json.dumps({"kernels": {k: asdict(v) for k, v in kernels.items()}, "deps": rows})
        _write_atomic(where, f"{key}.json", blob.encode())
    except OSError:
        pass  # a read-only home still works, only without the cache


# --- compiling -------------------------------------------------------------------------------


def _first_errors(text: str, build: Build, tmp: str | None = None,
                  also: Mapping[str, str] | None = None) -> str:
    lines = [ln for ln in text.splitlines() if ln.strip()]
    errs = [ln for ln in lines if re.search(r"\berror\b|fatal", ln, re.IGNORECASE)] or lines
    msg = " | ".join(ln.strip() for ln in errs[:_ERROR_LINES])[:600]
    for path, shown in (also or {}).items():
        msg = msg.replace(path, shown)
    msg = msg.replace(build.source, build.shown)
    if tmp:
        msg = msg.replace(tmp + os.sep, "")
    return inert(msg) if msg else "failed without a message"


def _run(cmd: list[str], build: Build, what: str, cwd: str | None = None,
         also: Mapping[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    try:
        r = subprocess.run(cmd, capture_output=True, text=True, errors="replace", cwd=cwd,
                           timeout=TIMEOUT_S, stdin=subprocess.DEVNULL)
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
               *[f"-D{k}={v}" for k, v in build.defines], "-MD", "-MF", deps, source,
               "-o", cubin]
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


def _ptxas_x(build: Build) -> list[str]:
    out = []
    for f in build.flags:
        if f.startswith(("-Xptxas=", "--ptxas-options=")):
            out += ["-Xptxas", f.split("=", 1)[1]]
    return out


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
            r = subprocess.run([exe, "-c", path], capture_output=True, text=True, timeout=120,
                               errors="replace", stdin=subprocess.DEVNULL)
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
            for rx, spell in _FLAG_RULES:
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
    found, deps, cubin, ptx = (_nvcc_build if c.kind == "nvcc" else _nvrtc_build)(build, c)
    names = demangle(list(found))
    found = {k: replace(v, demangled=names.get(k, k)) for k, v in found.items()}
    _cache_store(key, found, [build.source, *deps], cubin, ptx)
    return found, cubin if want == ".cubin" else ptx.encode() if want == ".ptx" else None


@cache
def _emulator_hash() -> str:
    """Cached traffic is only as good as the code that counted it: ptxsim and banks."""
    package = Path(__file__).resolve().parent.parent
    return hashlib.sha256(b"".join((package / f).read_bytes() for f in ("tune/ptxsim.py", "core/banks.py"))
                          ).hexdigest()[:16]


def warp_traffic(build: Build, entry: str, args: Sequence[float | int], block: Sequence[int],
                 grid: Sequence[int], banks: int, whole: bool = False) -> Traffic | None:
    """One warp of a kernel of this build run on its PTX (ptxsim), with the launch's
    argument values; cached beside the build by the PTX, the launch and the emulator's
    code. None where there is no PTX or the emulator cannot follow it."""
    from occupancy.tune.ptxsim import WARP, PtxError, Traffic, block_sample, run_warp

    try:
        ptx = build_ptx(build)
    except OccupancyError:
        return None
    if not ptx:
        return None
    blob = json.dumps([__version__, _emulator_hash(), entry, list(args), list(block), list(grid),
                       banks, whole, hashlib.sha256(ptx.encode()).hexdigest()])
    path = cache_dir() / f"traffic-{hashlib.sha256(blob.encode()).hexdigest()}.json"
    try:
        return Traffic(**json.loads(path.read_text(encoding="utf-8")))
    except (OSError, ValueError, TypeError):
        pass  # not cached yet, or unreadable: run it
    try:
        t = run_warp(ptx, entry, args, block, grid, banks, whole=whole)
    except PtxError:
        return None  # the model goes on without the warp's addresses
    last_warp = (math.prod(block) - 1) // WARP
    if last_warp:
        try:
            t = block_sample(t, run_warp(ptx, entry, args, block, grid, banks, last_warp,
                                         whole))
        except PtxError:
            pass  # warp 0 alone
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        _write_atomic(path.parent, path.name, json.dumps(asdict(t)).encode())
    except OSError:
        pass
    return t


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


def demangle(names: Sequence[str]) -> dict[str, str]:
    """Mangled -> demangled, with a real demangler (cu++filt or c++filt) reading stdin, so a
    hostile symbol is never an argument. Without one, names stay as they are."""
    todo = [n for n in names if n.startswith("_Z") and "\n" not in n]
    out = {n: n for n in names}
    exe = _demangler()
    if not todo or exe is None:
        return out
    try:
        r = subprocess.run([exe], input="\n".join(todo) + "\n", capture_output=True, text=True,
                           timeout=60, errors="replace")
    except (OSError, subprocess.TimeoutExpired):
        return out
    lines = r.stdout.splitlines()
    if len(lines) == len(todo):
        out.update(zip(todo, lines, strict=True))
    return out


# --- binaries ------------------------------------------------------------------------------------


def cuobjdump_path() -> str | None:
    return cuda_tool("cuobjdump")


@dataclass(frozen=True)
class BinaryImage:
    """What a cubin, fatbin, executable or library holds: SASS per arch, PTX per arch."""

    path: str
    sass: dict[str, dict[str, KernelResources]] = field(default_factory=dict)
    ptx: dict[str, str] = field(default_factory=dict)  # compute arch ("sm_80") -> PTX text


def _cubin_resources(data: bytes, label: str, reserved: int = 1024
                     ) -> tuple[str, dict[str, KernelResources]]:
    cub = parse_cubin(data)
    out = {}
    for name, k in cub.kernels.items():
        out[name] = KernelResources(name, k.registers, static_shared_from_cubin(k, cub.arch, reserved),
                                    k.barriers, k.stack_frame_bytes, 0, 0, k.max_threads,
                                    f"{label} {cub.arch}", spills_unknown=True,
                                    cluster_dims=k.cluster_dims)
    return cub.arch, out


def read_binary(path: str, shown: str, data: bytes) -> BinaryImage:
    """Take a binary apart: a bare cubin is read here; anything else through cuobjdump."""
    kind = kind_of(data)
    label = f"binary {inert(shown)}"
    if kind == "cubin":
        arch, res = _cubin_resources(data, label)
        return BinaryImage(path, {arch: res})
    if kind == "ptx":
        text = data.decode("utf-8", errors="replace")
        return BinaryImage(path, {}, {ptx_target(text) or "sm_52": text})
    if kind not in ("fatbin", "host"):
        raise OccupancyError(f"{inert(shown)}: not a cubin, fatbin, PTX file, executable or "
                             "library")
    exe = cuobjdump_path()
    if exe is None:
        raise CompilerUnavailable(f"{inert(shown)}: reading a fatbin needs cuobjdump: pip install "
                                  "'occupancy[compiler]' or put the CUDA toolkit's bin/ on PATH")
    sass: dict[str, dict[str, KernelResources]] = {}
    ptx: dict[str, str] = {}
    with tempfile.TemporaryDirectory(prefix="occupancy-") as tmp:
        # A copy under a plain name: the user's file name never reaches an argument slot.
        local = os.path.join(tmp, "input.bin")
        Path(local).write_bytes(data)
        out_dir = os.path.join(tmp, "x")
        os.mkdir(out_dir)
        try:
            for flag in ("-xelf", "-xptx"):
                subprocess.run([exe, flag, "all", local], cwd=out_dir, capture_output=True,
                               timeout=120, stdin=subprocess.DEVNULL)
        except (OSError, subprocess.TimeoutExpired) as exc:
            raise OccupancyError(f"{inert(shown)}: cuobjdump failed: {exc}") from None
        for f in sorted(os.listdir(out_dir))[:512]:
            p = os.path.join(out_dir, f)
            if f.endswith(".cubin"):
                try:
                    arch, res = _cubin_resources(Path(p).read_bytes(), label)
                except OccupancyError:
                    continue
                sass.setdefault(arch, {}).update(res)
            elif f.endswith(".ptx"):
                text = Path(p).read_text(errors="replace")
                m = re.search(r"\.(sm_\d+)\.ptx$", f)
                arch = ptx_target(text) or (m.group(1) if m else "sm_52")
                ptx[arch] = text
    if not sass and not ptx:
        raise OccupancyError(f"{inert(shown)}: no CUDA kernels in it (no SASS and no PTX)")
    return BinaryImage(path, sass, ptx)


def _num(arch: str) -> int:
    return int(re.sub(r"\D", "", arch) or 0)


def resources_for_device(img: BinaryImage, dev: Device, shown: str
                         ) -> dict[str, KernelResources]:
    """What the driver would load on this device: SASS of the same major with the highest
    minor <= the device's; else the newest PTX <= the device's arch, JIT-compiled here with
    ptxas for it; else an error that names the file."""
    want = dev.cc_major * 10 + dev.cc_minor
    same = [a for a in img.sass if _num(a) // 10 == dev.cc_major and _num(a) <= want]
    if same:
        arch = max(same, key=_num)
        return img.sass[arch]
    ptxs = [a for a in img.ptx if _num(a) <= want]
    if ptxs:
        src_arch = max(ptxs, key=_num)
        return jit_ptx(img.ptx[src_arch], src_arch, f"sm_{want}", shown)
    have = ", ".join([f"SASS {a}" for a in sorted(img.sass, key=_num)]
                     + [f"PTX compute_{a[3:]}" for a in sorted(img.ptx, key=_num)]) or "nothing"
    raise OccupancyError(f"{inert(shown)}: nothing the driver can load on {dev.name} (sm_{want}): "
                         f"it has {have}; build with -gencode arch=compute_{want},code=sm_{want}")


def jit_ptx(ptx: str, src_arch: str, arch: str, shown: str) -> dict[str, KernelResources]:
    """Compile a binary's PTX with ptxas for the device, as the driver's JIT would."""
    cc = _num(arch)
    c = compiler_for(arch)
    if c is None:
        raise CompilerUnavailable(f"{inert(shown)}: JIT of its PTX for {arch} needs ptxas: "
                                  f"{COMPILER_HINT}")
    build = Build(source="", shown=shown, arch=arch)
    with tempfile.TemporaryDirectory(prefix="occupancy-") as tmp:
        ptx_path, cubin = os.path.join(tmp, "k.ptx"), os.path.join(tmp, "k.cubin")
        Path(ptx_path).write_text(ptx)
        r = _run([c.ptxas, f"-arch=sm_{cc}", "-v", ptx_path, "-o", cubin], build,
                 f"ptxas {c.version} (JIT of compute_{src_arch[3:]})", cwd=tmp)
        data = Path(cubin).read_bytes()
    label = f"binary {inert(shown)} JIT from compute_{src_arch[3:]} by ptxas {c.version} for"
    return _combine(r.stderr + r.stdout, data, replace(build, arch=arch), f"{label} {arch}", ptx)


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


class CheckResolver:
    """check's resolver: the compiler, a ptxas log or a binary, per kernel x device.
    `prepare` compiles every distinct (source, flags, arch) of a manifest in parallel."""

    def __init__(self) -> None:
        self._builds: dict[Build, dict[str, KernelResources] | BaseException] = {}
        self._files: dict[str, object] = {}

    def _build(self, spec: object, dev: Device) -> Build:
        from occupancy.gate.check import KernelSpec

        assert isinstance(spec, KernelSpec) and spec.source is not None
        fn = spec.function or spec.name
        exprs = (fn,) if "<" in fn and not fn.startswith("_Z") else ()
        b = make_build(spec.source, arch_of(dev), shown=spec.shown_source or spec.source,
                       include_dirs=spec.include_dirs, flags=spec.flags, defines=spec.defines,
                       name_expressions=exprs)
        return device_build(b, dev)

    def prepare(self, pairs: Sequence[tuple[object, Device]]) -> None:
        todo: list[Build] = []
        for spec, dev in pairs:
            if getattr(spec, "source", None):
                try:
                    b = self._build(spec, dev)
                except OccupancyError:
                    continue  # reported per verdict when resolved
                if b not in self._builds and b not in todo:
                    todo.append(b)
        for b, res in zip(todo, parallel_map(compile_build, todo), strict=True):
            self._builds[b] = res

    def _compiled(self, b: Build) -> dict[str, KernelResources]:
        if b not in self._builds:
            self._builds[b] = parallel_map(compile_build, [b])[0]
        res = self._builds[b]
        if isinstance(res, BaseException):
            raise res
        return res

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

    def __call__(self, spec: object, dev: Device) -> KernelResources:
        from occupancy.build.names import match_kernel
        from occupancy.build.resources import log_section
        from occupancy.gate.check import KernelSpec, given_resources

        assert isinstance(spec, KernelSpec)
        arch = arch_of(dev)
        where = f"kernel '{inert(spec.name)}'"
        if spec.source:
            b = self._build(spec, dev)
            found = _estimate_label(self._compiled(b), dev, b)
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
        names = {k: (v.demangled or k) for k, v in found.items()}
        if any(k.startswith("_Z") and names[k] == k for k in names):
            names.update(demangle([k for k in names if names[k] == k]))
        mangled = match_kernel(spec.function or spec.name, names, where)
        return replace(found[mangled], demangled=names[mangled])


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


def list_resources(path: str, archs: Sequence[str], *, include_dirs: Sequence[str] = (),
                   flags: Sequence[str] = (), defines: Mapping[str, str] | None = None
                   ) -> list[ListedKernel]:
    """Every kernel in a .cu (compiled for each arch), a ptxas log (each section), or a
    cubin / fatbin / executable / library (each SASS arch, and PTX JIT-compiled for the
    archs asked for that have no SASS)."""
    from occupancy.inputs.files import LOG_CAP, read_bytes

    shown = path
    if path.endswith((".cu", ".cuh", ".cpp", ".cc")):
        out = []
        for arch in archs:
            found = compile_build(make_build(path, arch, shown=shown, include_dirs=include_dirs,
                                             flags=flags, defines=defines))
            out += [ListedKernel(shown, arch, r) for r in found.values()]
        return out
    data = read_bytes(path, FileError, LOG_CAP, "give a .cu, ptxas log, cubin, fatbin, "
                      "executable or library", "file")
    kind = kind_of(data)
    out = []
    if kind in ("cubin", "fatbin", "host", "ptx"):
        img = read_binary(path, shown, data)
        for arch in sorted(img.sass, key=_num):
            out += [ListedKernel(shown, arch, r) for r in img.sass[arch].values()]
        for arch in archs:
            if arch in img.sass:
                continue
            ptxs = [a for a in img.ptx if _num(a) <= _num(arch)]
            if ptxs:
                src = max(ptxs, key=_num)
                out += [ListedKernel(shown, arch, r)
                        for r in jit_ptx(img.ptx[src], src, arch, shown).values()]
    else:
        sections = parse_ptxas_log(data.decode("utf-8", errors="replace"),
                                   label=f"ptxas log {inert(shown)}")
        if not sections:
            raise OccupancyError(f"{inert(shown)}: no kernels found: give a .cu, a `ptxas -v` "
                                 "log, a cubin, fatbin, executable or library")
        for arch in sorted(sections, key=_num):
            out += [ListedKernel(shown, arch or "?", r) for r in sections[arch].values()]
    names = demangle([k.resources.function for k in out])
    return [replace(k, resources=replace(k.resources, demangled=k.resources.demangled
                                         or names.get(k.resources.function, k.resources.function)))
            for k in out]
