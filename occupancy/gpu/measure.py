"""The only module that touches CuPy and the GPU; CuPy is imported lazily, on first use."""

from __future__ import annotations

import math
import os
import tempfile
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from occupancy.core.errors import OccupancyError
from occupancy.gpu.constants import fill_constants
from occupancy.inputs.safety import inert

if TYPE_CHECKING:
    from pathlib import Path

    from occupancy.core.device import Device
    from occupancy.inputs.manifest.tuning import TuneSpec
    from occupancy.tune.records import (
        MeasureRecord,
        MeasureResult,
        RunEnvironment,
        Timing,
        TuningRecord,
        TuningResult,
    )
    from occupancy.tune.spaces import Ranked, TuneReport

GPU_HINT = "needs CuPy and an NVIDIA GPU: pip install 'occupancy[gpu]'"

# cudaDeviceAttr values for what CUDA 13 dropped from cudaDeviceProp.
_ATTR = {"clockRate": 13, "memoryClockRate": 36, "memoryBusWidth": 37}


class GpuUnavailable(OccupancyError):
    """No CuPy, no driver or no GPU: the caller prints a one-line hint."""


def cupy_module(what: str) -> Any:
    """Import CuPy and check a GPU answers; else GpuUnavailable naming the fix."""
    try:
        import cupy
        count = cupy.cuda.runtime.getDeviceCount()
    except ImportError:
        raise GpuUnavailable(f"{what} {GPU_HINT}") from None
    except Exception as exc:  # a CuPy that fails to load, CUDARuntimeError, no driver library
        raise GpuUnavailable(f"{what} needs an NVIDIA GPU through CuPy, and none answered: "
                             f"{inert(f'{type(exc).__name__}: {exc}'[:200])}") from None
    if count == 0:
        raise GpuUnavailable(f"{what} needs an NVIDIA GPU, and none was found")
    return cupy


def device_properties(index: int = 0) -> dict[str, Any]:
    """cudaGetDeviceProperties of one GPU, with the clocks CUDA 13 moved to attributes."""
    cupy = cupy_module("devices detect")
    count = cupy.cuda.runtime.getDeviceCount()
    if not 0 <= index < count:
        raise OccupancyError(f"--index {index}: this machine has GPUs 0..{count - 1}")
    props = dict(cupy.cuda.runtime.getDeviceProperties(index))
    for key, attr in _ATTR.items():
        if not props.get(key):
            try:
                props[key] = cupy.cuda.runtime.deviceGetAttribute(attr, index)
            except Exception:  # an attribute the runtime does not know: leave it out
                props[key] = 0
    return props


# --- measurement ---------------------------------------------------------------------------

MATMUL_RTOL = 1e-4  # ||C - ref|| / ||ref|| against cuBLAS in float64; float32 sums land ~1e-6
L2_FLUSH_FACTOR = 2  # bytes written between timed runs, in L2 sizes


# A median is known when the runs either side of it agree: the runs sqrt(n) ranks above and
# below the middle of n (about a 95% interval for the median) lie within MEDIAN_SPREAD of
# it. Kernels of ~20 us on the H200 have spread 25% between the 10th and 90th percentile
# of 10 runs (the median over kernel_tuner's reduction at n = 2^24, one day; up to 87%:
# bench/results/h200-corpus-calibration), so 10 runs' median can land on a slow run. Such a
# kernel is timed again, `reps` runs at a time, until MORE_RUNS x `reps` runs in all or
# MORE_RUNS_MS of timed kernel time (checked between batches), then reported as it is.
# More runs pin the median down within one run of `measure`; they do not make two days agree.
MEDIAN_SPREAD = 0.02
MORE_RUNS = 10
MORE_RUNS_MS = 1000.0


def median_known(ms: list[float], spread: float = MEDIAN_SPREAD) -> bool:
    """Whether the runs sqrt(n) ranks either side of the median lie within `spread` of it."""
    s = sorted(ms)
    n = len(s)
    if not n:
        return False
    k = math.isqrt(n)
    lo, hi = s[max(0, (n - 1) // 2 - k)], s[min(n - 1, n // 2 + k)]
    mid = (s[(n - 1) // 2] + s[n // 2]) / 2
    return mid > 0 and (hi - lo) <= spread * mid


class Timer:
    """CUDA-event timing: warm-up, L2 flushed before every run, one event pair per run;
    more runs where the median is not yet known (median_known)."""

    def __init__(self, cupy: Any, l2_bytes: int) -> None:
        self.cp = cupy
        self.flush_buf = cupy.ones(max(l2_bytes * L2_FLUSH_FACTOR // 4, 1 << 20), dtype=cupy.float32)
        self.sink = cupy.empty((), dtype=cupy.float32)

    def time(self, fn: Any, reps: int = 20, warmup: int = 3) -> list[float]:
        cp = self.cp
        for _ in range(warmup):
            fn()
        cp.cuda.Device().synchronize()
        out = self._runs(fn, reps)
        cap = reps * MORE_RUNS
        while len(out) < cap and sum(out) < MORE_RUNS_MS and not median_known(out):
            out += self._runs(fn, min(reps, cap - len(out)))
        return out

    def _runs(self, fn: Any, reps: int) -> list[float]:
        cp = self.cp
        start, stop = cp.cuda.Event(), cp.cuda.Event()
        out = []
        for _ in range(reps):
            # Evict the inputs from L2 by reading twice its size: every run starts cold, and
            # (unlike a fill) leaves no dirty lines whose write-back would be timed too.
            self.cp.sum(self.flush_buf, out=self.sink)
            start.record()
            fn()
            stop.record()
            stop.synchronize()
            out.append(cp.cuda.get_elapsed_time(start, stop))
        return out


def stats(ms: list[float]) -> Timing:
    from occupancy.tune.records import timing

    return timing(ms)


def copy_bandwidth(cupy: Any, timer: Timer, nbytes: int) -> dict[str, Any]:
    """cudaMemcpyAsync device to device; bytes read plus bytes written."""
    cp = cupy
    src = cp.random.random(nbytes // 4, dtype=cp.float32)
    dst = cp.empty_like(src)

    def copy() -> None:
        dst.data.copy_from_device_async(src.data, nbytes)

    t = stats(timer.time(copy, reps=20))
    return {"bytes": nbytes, "gb_s": 2 * nbytes / (t["median_ms"] * 1e-3) / 1e9, **t}


def ceilings(cupy: Any, timer: Timer, n_matmul: int, n_transpose: int) -> dict[str, Any]:
    """Device copy (1 GiB, and the transpose's own size) and cuBLAS SGEMM, this run."""
    cp = cupy
    big = copy_bandwidth(cp, timer, 1 << 30)
    same = copy_bandwidth(cp, timer, 4 * n_transpose * n_transpose)
    copy_gb_s = same["gb_s"]
    x = cp.random.random((n_matmul, n_matmul), dtype=cp.float32)
    y = cp.random.random((n_matmul, n_matmul), dtype=cp.float32)
    z = cp.empty_like(x)
    g = stats(timer.time(lambda: cp.matmul(x, y, out=z), reps=20))
    sgemm = 2 * n_matmul ** 3 / (g["median_ms"] * 1e-3) / 1e12
    return {"copy_gb_s": copy_gb_s, "copy": same, "copy_1gib": big, "sgemm_tflops": sgemm,
            "sgemm": g, "sgemm_n": n_matmul}


def load_function(cupy: Any, cubin: bytes, name: str) -> tuple[Any, Any]:
    """(module, kernel) from a cubin; keep the module alive while the kernel is used."""
    with tempfile.NamedTemporaryFile(suffix=".cubin", delete=False) as fh:
        fh.write(cubin)
    try:
        module = cupy.RawModule(path=fh.name)
        return module, module.get_function(name)
    finally:
        os.unlink(fh.name)


def run_candidate(cupy: Any, timer: Timer, dev: Device, ranked: Ranked, n: int, reps: int,
                  kdir: Path) -> MeasureResult:
    """Build, verify, time and ask the driver about one tile candidate, with its prediction
    from the family's ranking (the one `occupancy tile` shows)."""
    from occupancy.build.builds import build_cubin, compile_build
    from occupancy.build.compilers import make_build
    from occupancy.gpu.results import measure_result
    from occupancy.tune.handcounts import occupancy

    cp = cupy
    cand = ranked.candidate
    assert cand is not None
    arch = f"sm_{dev.cc_major}{dev.cc_minor}"
    src = str(kdir / f"{cand.kernel}.cu")
    build = make_build(src, arch, defines=cand.defines)  # one compile: resources and binary
    res = compile_build(build)[cand.function]
    module, fn = load_function(cp, build_cubin(build), cand.function)
    drv = cp.cuda.driver
    regs = drv.funcGetAttribute(4, fn.kernel.ptr)  # CU_FUNC_ATTRIBUTE_NUM_REGS
    smem = drv.funcGetAttribute(1, fn.kernel.ptr)  # CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES
    max_threads = drv.funcGetAttribute(0, fn.kernel.ptr)  # CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK
    driver_blocks = drv.occupancyMaxActiveBlocksPerMultiprocessor(fn.kernel.ptr, cand.threads, 0)
    occ = occupancy(dev, cand, res)
    pred = ranked.prediction
    rng = cp.random.default_rng()
    grid: tuple[int, ...]
    if cand.kernel == "matmul":
        a = rng.standard_normal((n, n), dtype=cp.float32)
        b = rng.standard_normal((n, n), dtype=cp.float32)
        c = cp.full((n, n), cp.nan, dtype=cp.float32)  # poison: every element must be written
        grid = cand.grid(n)
        args = (a, b, c, *(cp.int32(x) for x in cand.sizes(n)))

        def launch() -> None:
            fn(grid, cand.block, args)

        launch()
        cp.cuda.Device().synchronize()
        ref = cp.matmul(a.astype(cp.float64), b.astype(cp.float64))
        ok_written = not bool(cp.isnan(c).any())
        err = float(cp.linalg.norm(c.astype(cp.float64) - ref) / cp.linalg.norm(ref))
        verified = ok_written and err < MATMUL_RTOL
        check = {"rel_error": err, "tolerance": MATMUL_RTOL, "all_written": ok_written}
        del ref
        work = {"flops": 2.0 * n ** 3}
    else:
        a = rng.standard_normal((n, n), dtype=cp.float32)
        c = cp.full((n, n), cp.nan, dtype=cp.float32)
        grid = cand.grid(n, driver_blocks * dev.sm_count)
        args = (a, c, *(cp.int32(x) for x in cand.sizes(n)))

        def launch() -> None:
            fn(grid, cand.block, args)

        launch()
        cp.cuda.Device().synchronize()
        verified = bool(cp.array_equal(c, a.T))
        check = {"exact": verified}
        work = {"bytes": 8.0 * n * n}
    t = stats(timer.time(launch, reps=reps))
    del a, c
    cp.get_default_memory_pool().free_all_blocks()
    driver = {"registers_per_thread": regs, "static_shared_memory": smem,
              "max_threads_per_block": max_threads, "active_blocks_per_sm": driver_blocks}
    return measure_result(cand, n, grid, res, occ, pred, driver, verified, check, t, work)


def _in_manifest_order(report: TuneReport) -> list[Ranked]:
    """A family's candidates as its manifest lists them (measure's record keeps that order)."""
    from occupancy.tune.family import candidates

    labels = [c.label for c in candidates(report.name)]
    by_label = {r.label: r for r in report.ranked if r.candidate is not None}
    return [by_label[x] for x in labels if x in by_label]


def measure(kernels: list[str], n_matmul: int, n_transpose: int, labels: list[str] | None,
            reps: int, progress: Any = None) -> MeasureRecord:
    """Every candidate of the given families on GPU 0, the ceilings, and the environment."""
    from occupancy.core.device import from_cuda_properties
    from occupancy.tune.family import kernels_dir, rank_family

    cp = cupy_module("measure")
    props = device_properties(0)
    dev = from_cuda_properties(props)
    timer = Timer(cp, dev.l2_cache_bytes)
    # every candidate in manifest order, with the prediction of the family's one ranking
    todo = [(k, r) for k in kernels
            for r in _in_manifest_order(rank_family(k, dev, n_matmul if k == "matmul" else n_transpose))
            if not labels or r.label in labels]
    if labels and not todo:
        raise OccupancyError(f"--tiles: none of {', '.join(labels)} is a candidate; "
                             "see occupancy tile KERNEL for the labels")
    total = len(todo) + 1
    if progress:
        progress(0, total, "ceilings")
    ceil = ceilings(cp, timer, n_matmul, n_transpose)
    results = []
    for i, (k, point) in enumerate(todo, start=1):
        if progress:
            progress(i, total, point.label)
        results.append(run_candidate(cp, timer, dev, point,
                                     n_matmul if k == "matmul" else n_transpose, reps, kernels_dir()))
    if progress:
        progress(total, total, "done")
    for r in results:
        r["percent_of_ceiling"] = (r["tflops"] / ceil["sgemm_tflops"] if "tflops" in r
                                   else r.get("gb_s", 0.0) / ceil["copy_gb_s"])
    return {**run_environment(cp, dev), "n_matmul": n_matmul, "n_transpose": n_transpose,
            "reps": reps, "ceilings": ceil, "results": results}


def run_environment(cp: Any, dev: Device) -> RunEnvironment:
    """When, on what, with which driver, runtime, CuPy and Python a record was measured."""
    import platform
    import time

    drv = cp.cuda.runtime.driverGetVersion()
    return {"date": time.strftime("%Y-%m-%d %H:%M:%S %Z"), "device": dev.name,
            "compute_capability": dev.compute_capability,
            "driver_version": f"{drv // 1000}.{(drv % 1000) // 10}",
            "runtime_version": cp.cuda.runtime.runtimeGetVersion(),
            "cupy_version": cp.__version__, "python": platform.python_version()}


# --- clusters (CuPy has no cluster call: the driver API through ctypes) -------------------------

_CLUSTER_PROBE = r"""
extern "C" __global__ void occupancy_cluster_probe(float* x) {
  extern __shared__ float s[];
  if (x) { s[threadIdx.x] = x[threadIdx.x]; __syncthreads(); x[threadIdx.x] = s[threadIdx.x ^ 1]; }
}
"""
_CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION = 4
_CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES = 8
_CU_FUNC_ATTRIBUTE_NON_PORTABLE_CLUSTER_SIZE_ALLOWED = 14


def _driver_cluster_api() -> tuple[Any, Any, Any]:
    """libcuda's cuOccupancyMaxActiveClusters with the CUlaunchConfig layout of cuda.h."""
    import ctypes

    class Dim(ctypes.Structure):
        _fields_ = [("x", ctypes.c_uint), ("y", ctypes.c_uint), ("z", ctypes.c_uint)]

    class Value(ctypes.Union):
        _fields_ = [("pad", ctypes.c_char * 64), ("clusterDim", Dim)]

    class Attribute(ctypes.Structure):
        _fields_ = [("id", ctypes.c_int), ("pad", ctypes.c_char * 4), ("value", Value)]

    class Config(ctypes.Structure):
        _fields_ = [("gridDimX", ctypes.c_uint), ("gridDimY", ctypes.c_uint),
                    ("gridDimZ", ctypes.c_uint), ("blockDimX", ctypes.c_uint),
                    ("blockDimY", ctypes.c_uint), ("blockDimZ", ctypes.c_uint),
                    ("sharedMemBytes", ctypes.c_uint), ("hStream", ctypes.c_void_p),
                    ("attrs", ctypes.POINTER(Attribute)), ("numAttrs", ctypes.c_uint)]

    try:
        lib = ctypes.CDLL("libcuda.so.1")
    except OSError as exc:
        raise GpuUnavailable(f"the CUDA driver library cannot be loaded: {exc}") from None
    return lib, Attribute, Config


def active_clusters(cupy: Any, fn: Any, threads: int, dyn: int, cluster: tuple[int, int, int]
                    ) -> int:
    """cuOccupancyMaxActiveClusters for a loaded CuPy kernel (non-portable sizes allowed)."""
    import ctypes

    lib, Attribute, Config = _driver_cluster_api()
    func = ctypes.c_void_p(fn.kernel.ptr)
    for attr, value in ((_CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, dyn),
                        (_CU_FUNC_ATTRIBUTE_NON_PORTABLE_CLUSTER_SIZE_ALLOWED, 1)):
        lib.cuFuncSetAttribute(func, attr, value)
    a = Attribute()
    a.id = _CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION
    a.value.clusterDim.x, a.value.clusterDim.y, a.value.clusterDim.z = cluster
    cfg = Config(cluster[0] * 64, cluster[1], cluster[2], threads, 1, 1, dyn, None,
                 ctypes.pointer(a), 1)
    n = ctypes.c_int(-1)
    status = lib.cuOccupancyMaxActiveClusters(ctypes.byref(n), func, ctypes.byref(cfg))
    if status != 0:
        raise OccupancyError(f"cuOccupancyMaxActiveClusters failed (CUresult {status}) for "
                             f"cluster {cluster}, {threads} threads, {dyn} B")
    return n.value


def measure_cluster_table(cupy: Any, dev: Any) -> tuple[tuple[int, ...], ...]:
    """Active clusters per GPU for 1..max blocks per SM x cluster sizes 1..max, with a
    32-thread probe whose dynamic smem is sized by the solver to give each blocks-per-SM."""
    from occupancy.core.solver import solve

    if dev.max_cluster_size is None:
        return ()
    fn = cupy.RawKernel(_CLUSTER_PROBE, "occupancy_cluster_probe")
    fn.compile()
    rows = []
    for b in range(1, dev.max_blocks_per_sm + 1):
        lo, hi = 0, dev.shared_memory_per_block_optin_bytes
        while lo < hi:  # the most dynamic smem that still fits b blocks: log2(232 KB) steps
            mid = (lo + hi + 1) // 2
            if solve(dev, 32, 16, 0, mid).active_blocks_per_sm >= b:
                lo = mid
            else:
                hi = mid - 1
        if solve(dev, 32, 16, 0, lo).active_blocks_per_sm != b:
            break  # no dynamic smem gives exactly b blocks: the table ends here
        rows.append(tuple(active_clusters(cupy, fn, 32, lo, (s, 1, 1))
                          for s in range(1, dev.max_cluster_size + 1)))
    return tuple(rows)


# --- a user's tuning space, measured --------------------------------------------------------

_SCALAR_TYPES = {"int": "int32", "unsigned int": "uint32", "unsigned": "uint32",
                 "long": "int64", "long long": "int64", "unsigned long": "uint64",
                 "unsigned long long": "uint64", "size_t": "uint64", "float": "float32",
                 "double": "float64", "short": "int16", "char": "int8", "bool": "bool"}


def _launch_args(cupy: Any, spec: Any, env: dict[str, Any], params: list[str], rng: Any,
                 given: Mapping[str, Any] | None = None
                 ) -> tuple[list[Any], dict[str, Any], list[str]]:
    """(kernel arguments, arrays by name, names of the output arrays) from `args`; input
    arrays named in `given` (another kernel's) are passed as they are."""
    import math as _math

    from occupancy.inputs.expr import integer
    from occupancy.inputs.manifest.tuning import DTYPES, ArrayArg

    cp = cupy
    args: list[Any] = []
    arrays: dict[str, Any] = {}
    outputs: list[str] = []
    for j, (a, ptype) in enumerate(zip(spec.args, params, strict=True)):
        if isinstance(a, ArrayArg):
            shape = tuple(integer(s, env, f"args[{j}].shape") for s in a.shape)
            if _math.prod(shape) * DTYPES[a.dtype] > 64 << 30 or min(shape) <= 0:
                raise OccupancyError(f"args[{j}]: array {a.name} of shape {shape} does not fit "
                                     "(at most 64 GiB, positive sizes)")
            dtype = getattr(cp, a.dtype)
            if not a.output and given is not None and a.name in given:
                arr = given[a.name]
                if tuple(arr.shape) != shape or arr.dtype != dtype:
                    raise OccupancyError(f"{spec.manifest}: kernel '{inert(spec.name)}': "
                                         f"args[{j}]: array {a.name} is {shape} {a.dtype} here "
                                         f"but {tuple(arr.shape)} {arr.dtype} in the kernel it "
                                         "checks: give both the same shape and dtype")
                arrays[a.name] = arr
                args.append(arr)
                continue
            if a.output:
                # Poisoned, so an element the kernel never writes fails verification; finite,
                # so a kernel that reads its output scaled by 0 (C = alpha AB + 0 C) stays finite.
                poison = 1e30 if a.dtype in ("float32", "float64") else 1e4 if "float" in a.dtype \
                    else 0x5A
                arr = cp.full(shape, poison, dtype=dtype)
                outputs.append(a.name)
            elif "float" in a.dtype:
                arr = rng.standard_normal(shape, dtype=cp.float32).astype(dtype)
            else:
                arr = rng.integers(0, 100, shape).astype(dtype)
            arrays[a.name] = arr
            args.append(arr)
        else:
            base = " ".join(t for t in ptype.replace("const", "").split() if t)
            kind = _SCALAR_TYPES.get(base)
            if kind is None:
                raise OccupancyError(f"args[{j}]: the kernel's parameter {j} is {ptype}, which "
                                     "measure cannot fill from a number")
            args.append(getattr(cp, kind)(a(env)))
    return args, arrays, outputs


def _compare(cupy: Any, got: Mapping[str, Any], expected: Mapping[str, Any], tolerance: float
             ) -> tuple[float, bool]:
    """The largest relative error (L2 norm) over the outputs both have, and whether every
    one is within the tolerance and free of NaN."""
    cp = cupy
    worst, ok = 0.0, True
    for name, out in got.items():
        ref = cp.asarray(expected[name]).astype(cp.float64)
        out64 = out.astype(cp.float64)
        denom = float(cp.linalg.norm(ref)) or 1.0
        err = float(cp.linalg.norm(out64 - ref)) / denom
        worst = max(worst, err) if err == err else float("inf")  # NaN: fails
        ok = ok and err <= tolerance and not bool(cp.isnan(out64).any()) \
            and not bool(cp.isnan(ref).any())
    return worst, ok


def _reference_kernel(cupy: Any, rspec: TuneSpec, dev: Device, rng: Any
                      ) -> tuple[Any, Any]:
    """(module, run): the manifest's reference kernel built for the device (its first point
    if it has a space); run(inputs) launches it on the given input arrays and returns its
    outputs by name."""
    from occupancy.build.builds import build_cubin
    from occupancy.tune.spaces import check_args, kernel_params, points, rank

    pts, _ = points(rspec)
    r = rank(rspec, dev, pts[:1]).ranked[0]
    if r.pruned or r.resources is None:
        raise OccupancyError(f"{rspec.manifest}: reference kernel '{inert(rspec.name)}' cannot "
                             f"launch on {dev.name}: {'; '.join(r.reasons) or 'no build'}")
    params = kernel_params(rspec, r.resources, r.build)
    check_args(rspec, params, r.resources.demangled)
    module, fn = load_function(cupy, cubin := build_cubin(r.build), r.resources.function)
    fill_constants(cupy, module, rspec, cubin)
    env = {**rspec.problem, **r.point.params}
    grid, block = (*r.point.grid, 1, 1)[:3], (*r.point.block, 1, 1)[:3]

    def run(inputs: Mapping[str, Any]) -> dict[str, Any]:
        args, arrays, outputs = _launch_args(cupy, rspec, env, params, rng, inputs)
        fn(grid, block, tuple(args), shared_mem=r.point.dynamic_shared_memory)
        cupy.cuda.Device().synchronize()
        return {k: arrays[k] for k in outputs}

    return module, run


def measure_tuning(spec: TuneSpec, report: TuneReport, top: int | None, reps: int,
                   progress: Any = None, budget: int | None = None) -> TuningRecord:
    """Launch points of a tuning report on GPU 0: random inputs from `args`, verified
    against `reference`, timed with CUDA events (L2 flushed, median), with the driver's
    occupancy beside the prediction. Which points: the top-K predicted (`top`), every one,
    or (`budget`) those a budgeted search picks (tune/budget.py), one at a time."""
    from occupancy.core.device import from_cuda_properties
    from occupancy.gpu.results import tuning_record
    from occupancy.tune.ranked import doubts

    cp = cupy_module("measure")
    props = device_properties(0)
    live = from_cuda_properties(props)
    ranked = [r for r in report.ranked if not r.pruned]
    time_one = _point_timer(cp, spec, report, ranked, Timer(cp, live.l2_cache_bytes), reps)
    results: list[TuningResult] = []
    search = None
    if budget is None:
        todo = ranked[:top] if top else ranked
        for i, r in enumerate(todo, start=1):
            if progress:
                progress(i - 1, len(todo), _label(r))
            results.append(time_one(r))
    else:
        from occupancy.tune.budget import Candidate, Search
        by_key = {_label(r): r for r in ranked}
        search = Search([Candidate(k, r.prediction.predicted_ms if r.prediction else math.inf,
                                   r.point.params, doubts(r, report.device))
                         for k, r in by_key.items()], budget)
        while (c := search.next()) is not None:
            if progress:
                progress(len(results), budget, c.key)
            res = time_one(by_key[c.key])
            results.append(res)
            search.record(c.key, res["measured"]["median_ms"] if res["verified"] is not False
                          else math.inf)
    if progress:
        progress(len(results), len(results), "done")
    rec = tuning_record(run_environment(cp, live), report, reps, results)
    if search is not None:
        rec["search"] = search.summary()
    return rec


def _label(r: Ranked) -> str:
    return " ".join(f"{k}={v}" for k, v in r.point.params.items())


def _point_timer(cp: Any, spec: TuneSpec, report: TuneReport, ranked: list[Ranked], timer: Any,
                 reps: int) -> Callable[[Ranked], TuningResult]:
    """time_one(point): build, launch, verify and time one ranked point."""
    from occupancy.build.builds import build_cubin
    from occupancy.gpu.results import tuning_result
    from occupancy.tune.ranked import doubts
    from occupancy.tune.spaces import kernel_params

    rng, dev = cp.random.default_rng(20261130), report.device
    check = None
    if spec.reference_kernel is not None:
        check = _reference_kernel(cp, spec.reference_kernel, dev, rng)

    def time_one(r: Ranked) -> TuningResult:
        assert r.resources is not None and r.occupancy is not None  # ranked: it launches
        env = {**spec.problem, **r.point.params}
        params = kernel_params(spec, r.resources, r.build)
        module, fn = load_function(cp, cubin := build_cubin(r.build), r.resources.function)
        fill_constants(cp, module, spec, cubin)
        if r.point.dynamic_shared_memory > 48 * 1024:
            fn.max_dynamic_shared_size_bytes = r.point.dynamic_shared_memory
        args, arrays, outputs = _launch_args(cp, spec, env, params, rng)
        grid = (*r.point.grid, 1, 1)[:3]
        block = (*r.point.block, 1, 1)[:3]

        def launch(fn: Any = fn, grid: tuple[int, ...] = grid, block: tuple[int, ...] = block,
                   args: list[Any] = args, smem: int = r.point.dynamic_shared_memory) -> None:
            fn(grid, block, tuple(args), shared_mem=smem)

        launch()
        cp.cuda.Device().synchronize()
        err = None
        verified = None
        if spec.reference is not None and outputs:
            ref_env = {**env, **{k: v.astype(cp.float64) for k, v in arrays.items()
                                 if k not in outputs}}
            err, verified = _compare(cp, {outputs[0]: arrays[outputs[0]]},
                                     {outputs[0]: spec.reference(ref_env)}, spec.tolerance)
        elif check is not None and outputs:
            expected = check[1]({k: v for k, v in arrays.items() if k not in outputs})
            err, verified = _compare(cp, {k: arrays[k] for k in outputs if k in expected},
                                     expected, spec.tolerance)
        t = stats(timer.time(launch, reps=reps))
        driver_blocks = cp.cuda.driver.occupancyMaxActiveBlocksPerMultiprocessor(
            fn.kernel.ptr, r.point.threads, r.point.dynamic_shared_memory)
        del module
        return tuning_result(r, ranked.index(r) + 1, t, verified, err, driver_blocks, doubts(r, dev))

    return time_one
