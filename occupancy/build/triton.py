"""Triton kernels compiled offline for any NVIDIA target, specialized as the launch does.

A launch of a @triton.jit function specializes on its arguments: integers equal to 1
become constants, pointers and integers divisible by 16 get `tt.divisibility = 16`
(which turns on vectorized loads and software pipelining). A kernel compiled from its
signature alone is a different kernel (in one H200 measurement 8 KB of shared memory
instead of 16-32 KB, 128 registers instead of 58-64). `specialize_call` derives the
specialization from a description of the call exactly as Triton 3.6's launcher does
(`create_function_from_signature` + `native_specialize_impl` + `JITFunction._pack_args`),
and `compile_configs` compiles every config for every target, in parallel and cached.

What a compiled config gives: `metadata.shared` (the dynamic shared memory the launch
passes, and the number Triton compares with the device's opt-in limit), registers and the
local frame from the cubin (Triton's `n_regs` / `n_spills` are the driver's
CU_FUNC_ATTRIBUTE_NUM_REGS and LOCAL_SIZE_BYTES / 4, which are these cubin attributes),
num_warps and num_ctas (a cluster of num_ctas x 1 x 1 when > 1).

Triton is imported only inside the functions that compile; the dataclasses and the
specialization mirror need nothing but the standard library.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import importlib
import importlib.util
import inspect
import json
import os
import sys
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from occupancy.build.resources import CompilerUnavailable, KernelResources
from occupancy.build.triton_spec import (
    IntArg,
    Pointer,
    Specialization,
    call_from_signature,
    canonical_dtype,
    specialize_call,
    specialize_value,
)
from occupancy.build.workers import run_jobs
from occupancy.core.device import Device
from occupancy.core.errors import OccupancyError
from occupancy.core.solver import OccupancyResult, solve
from occupancy.inputs.safety import note_input

__all__ = ["CompileStats", "IntArg", "KernelRef", "Pointer", "Specialization", "TritonConfig",
           "TritonKernel", "call_from_signature", "canonical_dtype", "compile_configs",
           "from_compiled", "load_function", "occupancy", "out_of_resources", "programs_per_sm",
           "specialize_call", "specialize_value", "triton_version"]

CACHE_FORMAT = 1
INSTALL_HINT = "Triton is not installed: pip install 'occupancy[triton]' (or pip install triton)"
# Triton's launch arguments that are compile options, not meta-parameters (triton.Config).
OPTION_KEYS = ("num_warps", "num_stages", "num_ctas", "maxnreg")

# --- configs --------------------------------------------------------------------------------


@dataclass(frozen=True)
class TritonConfig:
    """One triton.Config: meta-parameters plus the compile options."""

    kwargs: tuple[tuple[str, Any], ...]
    num_warps: int = 4
    num_stages: int = 3
    num_ctas: int = 1
    maxnreg: int | None = None

    @staticmethod
    def from_dict(d: Mapping[str, Any]) -> TritonConfig:
        """vLLM's form: {'BLOCK_SIZE_M': 64, ..., 'num_warps': 4, 'num_stages': 3}."""
        opts = {k: d[k] for k in OPTION_KEYS if k in d}
        kwargs = tuple(sorted((k, v) for k, v in d.items() if k not in OPTION_KEYS))
        return TritonConfig(kwargs, **opts)

    @staticmethod
    def from_triton(c: Any) -> TritonConfig:
        """From a triton.Config object."""
        return TritonConfig(tuple(sorted(c.kwargs.items())), c.num_warps, c.num_stages,
                            getattr(c, "num_ctas", 1), getattr(c, "maxnreg", None))

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = dict(self.kwargs)
        out.update(num_warps=self.num_warps, num_stages=self.num_stages)
        if self.num_ctas != 1:
            out["num_ctas"] = self.num_ctas
        if self.maxnreg is not None:
            out["maxnreg"] = self.maxnreg
        return out

    @property
    def key(self) -> str:
        """'BLOCK_SIZE_M=64,BLOCK_SIZE_N=128,...,num_warps=4,num_stages=3' (stable)."""
        return ",".join(f"{k}={v}" for k, v in self.to_dict().items())

    def options(self) -> dict[str, Any]:
        out: dict[str, Any] = {"num_warps": self.num_warps, "num_stages": self.num_stages,
                               "num_ctas": self.num_ctas}
        if self.maxnreg is not None:
            out["maxnreg"] = self.maxnreg
        return out


# --- a compiled config ----------------------------------------------------------------------


@dataclass(frozen=True)
class TritonKernel:
    """One config compiled for one target: what the launch and the driver will see."""

    name: str
    cc: str  # "9.0"
    config: TritonConfig
    shared: int = 0  # metadata.shared: dynamic shared memory per program (bytes)
    registers: int = 0  # per thread (the cubin's REGCOUNT = the driver's NUM_REGS)
    stack_frame_bytes: int = 0  # local memory per thread (the driver's LOCAL_SIZE_BYTES)
    static_shared: int = 0  # declared static shared memory (normally 0 for Triton)
    barriers: int = 1
    max_threads: int | None = None  # .maxntid: num_warps x 32
    tmem_size: int = 0  # tensor-memory columns (sm_100)
    triton_version: str = ""
    seconds: float = 0.0  # compile time (0 for a cache hit)
    error: str = ""  # the compiler's message where it failed: then nothing else is known

    @property
    def arch(self) -> str:
        return "sm_" + self.cc.replace(".", "")

    @property
    def threads(self) -> int:
        return self.config.num_warps * 32

    @property
    def n_spills(self) -> int:
        """What Triton's `kernel.n_spills` reports: local bytes per thread / 4."""
        return self.stack_frame_bytes // 4

    @property
    def compiled(self) -> bool:
        return not self.error

    def resources(self) -> KernelResources:
        """The solver's view (the launch's dynamic shared memory is `shared`)."""
        if self.error:
            raise OccupancyError(f"{self.name} [{self.config.key}] did not compile: {self.error}")
        return KernelResources(
            self.name, self.registers, self.static_shared, self.barriers,
            self.stack_frame_bytes, 0, 0, self.max_threads,
            f"triton {self.triton_version} {self.arch}", spills_unknown=True,
            cluster_dims=(self.config.num_ctas, 1, 1) if self.config.num_ctas > 1 else None)

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["config"] = self.config.to_dict()
        return d

    @staticmethod
    def from_dict(d: Mapping[str, Any]) -> TritonKernel:
        rest = {k: v for k, v in d.items() if k != "config"}
        return TritonKernel(config=TritonConfig.from_dict(d["config"]), **rest)


def out_of_resources(kernel: TritonKernel, dev: Device) -> str | None:
    """Triton's own load-time refusal on this device, word for word, or None if it loads.
    Triton compares metadata.shared with the device's sharedMemPerBlockOptin, tensor
    memory with 512 columns, and num_warps x 32 with the threads the driver allows
    the function (its launch bound, and the registers it uses)."""
    limit = dev.shared_memory_per_block_optin_bytes
    if kernel.shared > limit:
        return _oor(kernel.shared, limit, "shared memory")
    if kernel.tmem_size > 512:
        return _oor(kernel.tmem_size, 512, "tensor memory")
    allowed = _driver_max_threads(kernel, dev)
    if kernel.threads > allowed:
        return _oor(kernel.threads, allowed, "threads")
    return None


def _oor(required: int, limit: int, name: str) -> str:
    return (f"out of resource: {name}, Required: {required}, Hardware limit: {limit}. "
            "Reducing block sizes or `num_stages` may help.")


def _driver_max_threads(kernel: TritonKernel, dev: Device) -> int:
    """CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK: the launch bound, the device's maximum,
    and the warps whose registers fit in one block's register file."""
    most = min(dev.max_threads_per_block, kernel.max_threads or dev.max_threads_per_block)
    if kernel.registers:
        unit = dev.register_allocation_unit
        per_warp = -(-kernel.registers * dev.warp_size // unit) * unit
        most = min(most, dev.registers_per_block // per_warp * dev.warp_size)
    return most


def occupancy(kernel: Any, dev: Device, *, num_warps: int | None = None,
              shared: int | None = None) -> OccupancyResult:
    """The solver's answer for a compiled Triton kernel on a device: a TritonKernel, a
    triton CompiledKernel (its metadata and cubin), or KernelResources with num_warps and
    shared (the dynamic shared memory) given."""
    if isinstance(kernel, TritonKernel):
        if kernel.cc != dev.compute_capability:
            raise OccupancyError(f"{kernel.name} was compiled for {kernel.arch}; {dev.name} is "
                                 f"sm_{dev.compute_capability.replace('.', '')}: compile it "
                                 "for that target")
        res, warps, dyn, ctas = kernel.resources(), kernel.config.num_warps, kernel.shared, \
            kernel.config.num_ctas
    elif isinstance(kernel, KernelResources):
        if num_warps is None or shared is None:
            raise OccupancyError("KernelResources need num_warps= and shared= (metadata.shared)")
        res, warps, dyn = kernel, num_warps, shared
        ctas = kernel.cluster_dims[0] if kernel.cluster_dims else 1
    elif hasattr(kernel, "metadata") and hasattr(kernel, "asm"):
        k = from_compiled(kernel)
        return occupancy(k, dev)
    else:
        raise OccupancyError(f"cannot read a Triton kernel from {type(kernel).__name__}")
    return solve(dev, warps * dev.warp_size, res.registers_per_thread,
                 res.static_shared_memory, dyn, max_threads_per_block=res.max_threads_per_block,
                 block_barriers=max(res.barriers, 1),
                 cluster=(ctas, 1, 1) if ctas > 1 else None)


def programs_per_sm(kernel: Any, dev: Device, *, num_warps: int | None = None,
                    shared: int | None = None) -> int:
    """Programs (CTAs) of this kernel resident per SM: exact, as
    cuOccupancyMaxActiveBlocksPerMultiprocessor answers. Replaces the fused-softmax
    tutorial's estimate from registers and shared memory alone."""
    return occupancy(kernel, dev, num_warps=num_warps, shared=shared).active_blocks_per_sm


# --- compiling ------------------------------------------------------------------------------


def _triton() -> Any:
    try:
        import triton
    except ImportError as e:
        raise CompilerUnavailable(INSTALL_HINT) from e
    return triton


def triton_version() -> str:
    return str(_triton().__version__)


def _cc_int(cc: str | int) -> int:
    if isinstance(cc, int):
        return cc
    text = cc[3:] if cc.startswith("sm_") else cc.replace(".", "")
    if not text.isdigit():
        raise OccupancyError(f"a compute capability is like '9.0', 'sm_90' or 90, got {cc!r}")
    return int(text)


def _cc_text(cc: str | int) -> str:
    n = _cc_int(cc)
    return f"{n // 10}.{n % 10}"


def from_compiled(k: Any, cc: str | int | None = None, config: TritonConfig | None = None,
                  seconds: float = 0.0) -> TritonKernel:
    """A TritonKernel from triton.compile's CompiledKernel (or a launched kernel); cc
    defaults to the target it was compiled for (its cubin's arch)."""
    from occupancy.build.binaries import arch_number, parse_cubin, static_shared_from_cubin

    md = k.metadata
    cub = parse_cubin(k.asm["cubin"])
    if cc is None:
        cc = arch_number(cub.arch)
    ck = cub.kernels.get(md.name) or next(iter(cub.kernels.values()))
    cfg = config or TritonConfig((), md.num_warps, md.num_stages, getattr(md, "num_ctas", 1))
    return TritonKernel(
        md.name, _cc_text(cc), cfg, shared=int(md.shared), registers=ck.registers,
        stack_frame_bytes=ck.stack_frame_bytes,
        static_shared=static_shared_from_cubin(ck, cub.arch, 1024),
        barriers=max(ck.barriers, text_barriers(k.asm["cubin"], md.name), 1),
        max_threads=ck.max_threads,
        tmem_size=int(getattr(md, "tmem_size", 0) or 0),
        triton_version=str(getattr(md, "triton_version", "")), seconds=seconds)


def text_barriers(cubin: bytes, name: str) -> int:
    """Barriers a kernel uses as its `.text.<name>` section's flags record them (bits
    20-26): sm_80/sm_90 cubins from ptxas 12.x carry no EIATTR_NUM_BARRIERS record for
    Triton kernels, only these bits. 0 where the section is not found."""
    import struct

    try:
        shoff = struct.unpack_from("<Q", cubin, 0x28)[0]
        shentsize, shnum, shstrndx = struct.unpack_from("<HHH", cubin, 0x3A)
        names_off = struct.unpack_from("<Q", cubin, shoff + shstrndx * shentsize + 24)[0]
        want = f".text.{name}".encode()
        for i in range(min(shnum, 65535)):
            base = shoff + i * shentsize
            name_off, _typ, flags = struct.unpack_from("<IIQ", cubin, base)
            start = names_off + name_off
            if cubin[start:start + len(want) + 1] == want + b"\0":
                return (flags >> 20) & 0x7F
    except struct.error:
        return 0
    return 0


@dataclass(frozen=True)
class KernelRef:
    """Where a worker process finds the @triton.jit function: a module or a file."""

    name: str  # the function's name in its module
    module: str = ""  # importable module name ('' when only a file is known)
    path: str = ""  # the module's file

    @staticmethod
    def of(fn: Any) -> KernelRef:
        if isinstance(fn, str):
            return KernelRef.parse(fn)
        inner = getattr(fn, "fn", fn)
        path = inspect.getsourcefile(inner) or ""
        mod = inner.__module__ if inner.__module__ not in ("__main__", None) else ""
        return KernelRef(inner.__name__, mod, os.path.abspath(path) if path else "")

    @staticmethod
    def parse(text: str) -> KernelRef:
        """'path/to/file.py:name' or 'package.module:name'."""
        where, _, name = text.rpartition(":")
        if not where or not name.isidentifier():
            raise OccupancyError(f"a Triton kernel is 'file.py:function' or "
                                 f"'module:function', got {text!r}")
        if where.endswith(".py"):
            return KernelRef(name, "", os.path.abspath(where))
        return KernelRef(name, where, "")

    def load(self) -> Any:
        mod = None
        if self.module:
            try:
                with contextlib.redirect_stdout(sys.stderr):  # stdout carries --json alone
                    mod = importlib.import_module(self.module)
            except ImportError:
                if not self.path:
                    raise
        if mod is None:
            mod = _load_file(self.path)
        fn = getattr(mod, self.name, None)
        if fn is None or not hasattr(fn, "params"):
            raise OccupancyError(f"{self.path or self.module} has no @triton.jit "
                                 f"function {self.name!r}")
        return fn


_FILE_MODULES: dict[str, Any] = {}


def load_function(path: str, name: str, what: str) -> Any:
    """A plain Python function from a file a manifest names (a reference, an inputs maker):
    imported once, like the @triton.jit module; what the module raises is one line."""
    try:
        fn = getattr(_load_file(path), name, None)
    except OccupancyError:
        raise
    except Exception as exc:  # noqa: BLE001 - whatever the user's module raises
        raise import_error(f"{what}: {path}", exc) from None
    if not callable(fn):
        raise OccupancyError(f"{what}: {path} has no function {name!r}")

    @functools.wraps(fn)
    def call(*args: Any, **kwargs: Any) -> Any:
        with contextlib.redirect_stdout(sys.stderr):  # what it prints: not onto --json
            return fn(*args, **kwargs)
    return call


def _load_file(path: str) -> Any:
    if path in _FILE_MODULES:
        return _FILE_MODULES[path]
    if not os.path.isfile(path):
        raise OccupancyError(f"{path}: no such file")
    note_input(path)  # -o may not replace it
    name = "_occupancy_triton_" + hashlib.sha256(path.encode()).hexdigest()[:16]
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    sys.modules[name] = mod
    with contextlib.redirect_stdout(sys.stderr):  # what the module prints: not onto --json
        spec.loader.exec_module(mod)
    _FILE_MODULES[path] = mod
    return mod


@dataclass(frozen=True)
class _Job:
    ref: KernelRef
    spec: Specialization
    config: TritonConfig
    cc: int


def _compile_job(job: _Job) -> TritonKernel:
    """Compile one config for one target (in a worker process, or here)."""
    triton = _triton()
    from triton.backends.compiler import GPUTarget
    from triton.compiler import ASTSource

    fn = job.ref.load()
    t0 = time.perf_counter()
    try:
        src = ASTSource(fn, job.spec.signature, job.spec.constexprs, job.spec.attrs)
        k = triton.compile(src, target=GPUTarget("cuda", job.cc, 32),
                           options=job.config.options())
    except Exception as e:  # CompilationError, PTXASError, ...: the config cannot be built
        first = next((ln.strip() for ln in str(e).splitlines() if ln.strip()), type(e).__name__)
        return TritonKernel(job.ref.name, _cc_text(job.cc), job.config,
                            triton_version=str(triton.__version__),
                            error=f"{type(e).__name__}: {first}"[:300])
    return from_compiled(k, job.cc, job.config, time.perf_counter() - t0)


def cache_dir() -> Path:
    """Beside the CUDA build cache: <OCCUPANCY_CACHE_DIR or ~/.cache/occupancy>/triton."""
    from occupancy.build.cache import cache_dir as builds

    return builds().parent / "triton"


def _source_hash(fn: Any, ref: KernelRef) -> str:
    """The module's text and Triton's own key of the function and what it calls."""
    h = hashlib.sha256()
    if ref.path and os.path.isfile(ref.path):
        h.update(Path(ref.path).read_bytes())
    h.update(str(getattr(fn, "cache_key", "")).encode())
    return h.hexdigest()


def cache_key(version: str, source: str, name: str, spec: Specialization,
              config: TritonConfig, cc: int) -> str:
    blob = json.dumps([CACHE_FORMAT, version, source, name, spec.key(), config.key, cc])
    return hashlib.sha256(blob.encode()).hexdigest()


def _cache_get(key: str) -> TritonKernel | None:
    try:
        data = json.loads((cache_dir() / f"{key}.json").read_text(encoding="utf-8"))
        return TritonKernel.from_dict(data)
    except (OSError, ValueError, TypeError, KeyError):
        return None


def _cache_put(key: str, k: TritonKernel) -> None:
    import tempfile

    try:
        where = cache_dir()
        where.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=where, suffix=".tmp")
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            json.dump({**k.to_dict(), "seconds": 0.0}, fh)
        os.replace(tmp, where / f"{key}.json")
    except OSError:
        pass  # a read-only home still works, only without the cache


@dataclass
class CompileStats:
    """How a compile_configs call went (for reports: compile time per config)."""

    compiled: int = 0
    cached: int = 0
    failed: int = 0
    wall_seconds: float = 0.0
    compile_seconds: list[float] = field(default_factory=list)


def compile_configs(fn: Any, args: Mapping[str, Any], configs: Iterable[Any],
                    ccs: Sequence[str | int], *, constexprs: Mapping[str, Any] | None = None,
                    jobs: int | None = None, cache: bool = True,
                    stats: CompileStats | None = None,
                    timeout: float | None = None) -> list[TritonKernel]:
    """Every config compiled for every target (cc '9.0', 'sm_90' or 90), in the order
    configs x ccs; a config that does not compile comes back with `error` set.

    fn: the @triton.jit function (module level), or 'file.py:name'; args: the call (see
    specialize_call); configs: TritonConfig, triton.Config or vLLM-style dicts;
    constexprs: constexpr arguments every config shares. Misses are compiled in a pool of
    `jobs` processes (default: the CPUs), hits come from the on-disk cache, keyed by the
    Triton version, the module's source, the signature, constexprs, specialization,
    config and target. A compile past `timeout` seconds (or one that kills its worker)
    comes back with `error` set."""
    t0 = time.perf_counter()
    ref = KernelRef.of(fn)
    jit = ref.load() if isinstance(fn, str) else fn
    version = triton_version()
    source = _source_hash(jit, ref)
    todo: list[tuple[str, _Job]] = []
    for c in configs:
        cfg = _as_config(c)
        spec = specialize_call(jit, args, {**(constexprs or {}), **dict(cfg.kwargs),
                                           **_options_as_params(jit, cfg)})
        for cc in ccs:
            job = _Job(ref, spec, cfg, _cc_int(cc))
            todo.append((cache_key(version, source, ref.name, spec, cfg, job.cc), job))
    results: dict[int, TritonKernel] = {}
    misses = []
    for i, (key, _job) in enumerate(todo):
        hit = _cache_get(key) if cache else None
        if hit is not None:
            results[i] = hit
        else:
            misses.append(i)
    for i, k in zip(misses, _run_jobs([todo[i][1] for i in misses], jobs, timeout), strict=True):
        results[i] = k
        if cache and k.compiled:
            _cache_put(todo[i][0], k)
    out = [results[i] for i in range(len(todo))]
    if stats is not None:
        stats.cached += len(todo) - len(misses)
        stats.failed += sum(1 for i in misses if not results[i].compiled)
        stats.compiled += sum(1 for i in misses if results[i].compiled)
        stats.compile_seconds += [results[i].seconds for i in misses if results[i].compiled]
        stats.wall_seconds += time.perf_counter() - t0
    return out


def _options_as_params(fn: Any, cfg: TritonConfig) -> dict[str, Any]:
    """A kernel may name a parameter like an option (the softmax tutorial's `num_stages`):
    the launch's keyword then sets both."""
    names = {p.name for p in fn.params}
    return {k: getattr(cfg, k) for k in OPTION_KEYS if k in names}


def _as_config(c: Any) -> TritonConfig:
    if isinstance(c, TritonConfig):
        return c
    if isinstance(c, Mapping):
        return TritonConfig.from_dict(c)
    if hasattr(c, "kwargs") and hasattr(c, "num_warps"):
        return TritonConfig.from_triton(c)
    raise OccupancyError(f"a Triton config is a dict or triton.Config, got {type(c).__name__}")


def _run_jobs(jobs_list: list[_Job], jobs: int | None, timeout: float | None = None
              ) -> list[TritonKernel]:
    if timeout is None and min(jobs or os.cpu_count() or 1, len(jobs_list)) <= 1:
        return [_compile_job(j) for j in jobs_list]
    return run_jobs("occupancy.build.triton:_compile_job", jobs_list, jobs, timeout=timeout,
                    on_lost=_lost)


def _lost(job: _Job, reason: str) -> TritonKernel:
    """A config whose compile killed or outlasted its worker: not compiled, and why."""
    return TritonKernel(job.ref.name, _cc_text(job.cc), job.config, error=f"compile {reason}")


def import_error(what: str, exc: BaseException) -> OccupancyError:
    """What a user's module raised on import, as one line: its type and first line."""
    first = next((ln for ln in str(exc).splitlines() if ln.strip()), "")
    return OccupancyError(f"{what} does not import: {type(exc).__name__}: {first}"[:400])
