"""`measure MANIFEST --kernel NAME` for a `triton:` entry: its configs launched by Triton's
own launcher on GPU 0, verified against the entry's reference, timed like the CUDA path
(CUDA events, L2 flushed before every run, median and quantiles), with the programs per SM
the driver gives the loaded kernel (cuOccupancyMaxActiveBlocksPerMultiprocessor) beside the
prediction, and the launched kernel's shared memory, registers and spills beside the
offline compile's.

One problem point per run (an entry that sweeps M is measured at one size: --set M=256),
so the record has the shape of a tuning record and `--store` keeps one pick per size.
Which configs: all that fit, the predicted top K, or (`budget`) those tune/budget.py's
search picks. Everything but the launch (the configs and sizes chosen, the arguments'
shapes and values, the grid, the comparison and the record) is plain Python that the
tests drive offline; CuPy, PyTorch (Triton's launcher needs it) and Triton are imported
only when a GPU run starts.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from occupancy.core.errors import OccupancyError
from occupancy.gpu.measure import GpuUnavailable
from occupancy.inputs.expr import ExprError, integer
from occupancy.inputs.safety import INT32_MAX, inert

if TYPE_CHECKING:
    from occupancy.core.device import Device
    from occupancy.inputs.manifest.triton import TritonSpec
    from occupancy.tune.records import SearchSummary, TritonRecord, TritonResult
    from occupancy.tune.triton_space import ConfigResult, DeviceTile

TORCH_HINT = "needs PyTorch: Triton's launcher uses it (pip install torch)"
MAX_ARRAY_BYTES = 64 << 30
# element types of a Triton signature as PyTorch names them
TORCH_DTYPES = {"fp16": "float16", "bf16": "bfloat16", "fp32": "float32", "fp64": "float64",
                "fp8e4nv": "float8_e4m3fn", "fp8e5": "float8_e5m2", "i1": "bool", "u1": "bool",
                "i8": "int8", "u8": "uint8", "i16": "int16", "u16": "uint16", "i32": "int32",
                "u32": "uint32", "i64": "int64", "u64": "uint64"}
_BYTES = {"fp16": 2, "bf16": 2, "fp32": 4, "fp64": 8, "fp8e4nv": 1, "fp8e5": 1, "i1": 1,
          "u1": 1, "i8": 1, "u8": 1, "i16": 2, "u16": 2, "i32": 4, "u32": 4, "i64": 8, "u64": 8}


# --- the plan (pure) ----------------------------------------------------------------------


def one_size(spec: TritonSpec, overrides: Mapping[str, int]) -> TritonSpec:
    """The entry at one problem point: `--set NAME=N` replaces a size (any of the entry's
    problem names); an entry still sweeping a size is refused, naming its sizes."""
    problem = dict(spec.problem)
    for name, v in overrides.items():
        if name not in problem:
            raise OccupancyError(f"--set {inert(name)}: kernel '{inert(spec.name)}' has no "
                                 f"problem size {inert(name)} (its sizes: "
                                 f"{', '.join(map(inert, problem)) or 'none'})")
        if not 0 < int(v) <= INT32_MAX:
            raise OccupancyError(f"--set {inert(name)}={v}: a size is 1..{INT32_MAX:,}")
        problem[name] = (int(v),)
    out = dataclasses.replace(spec, problem=problem)
    if out.sweep is not None:
        key = out.sweep
        sizes = ", ".join(map(str, problem[key]))
        raise OccupancyError(f"kernel '{inert(spec.name)}' sweeps {key} over {sizes}: measure "
                             f"one size at a time, e.g. --set {key}={problem[key][-1]}")
    return out


def ranked_configs(tile: DeviceTile, size: int) -> list[ConfigResult]:
    """The configs that fit the device at this size, best predicted first."""
    ranked = [c for c in tile.configs if c.by_size[size].rank is not None]
    return sorted(ranked, key=lambda c: c.by_size[size].rank or 0)


def label(config: Mapping[str, Any]) -> str:
    return " ".join(f"{k}={v}" for k, v in config.items())


def run_plan(ranked: Sequence[ConfigResult], size: int, top: int | None, budget: int | None,
             time_one: Callable[[ConfigResult], TritonResult | None],
             progress: Callable[[int, int, str], None] | None = None
             ) -> tuple[list[TritonResult], SearchSummary | None]:
    """Time the configs: every ranked one, the top K, or a budgeted search (the same
    search as the CUDA path: tune/budget.py). time_one gives None for a config Triton
    refused to launch (it never wins the search). Returns the results and, with a budget,
    the search's summary (budget, runs, stopped, picks)."""
    results: list[TritonResult] = []
    if budget is None:
        todo = list(ranked[:top] if top else ranked)
        for i, c in enumerate(todo):
            if progress:
                progress(i, len(todo), label(c.config))
            r = time_one(c)
            if r is not None:
                results.append(r)
        if progress:
            progress(len(todo), len(todo), "done")
        return results, None
    from occupancy.tune.budget import Candidate, Search

    by_key = {label(c.config): c for c in ranked}
    search = Search([Candidate(k, c.by_size[size].predicted_ms or math.inf, c.config)
                     for k, c in by_key.items()], budget)
    while (cand := search.next()) is not None:
        if progress:
            progress(len(search.measured), budget, cand.key)
        r = time_one(by_key[cand.key])
        ok = r is not None and r["verified"] is not False
        search.record(cand.key, r["measured"]["median_ms"] if r is not None and ok else math.inf)
        if r is not None:
            results.append(r)
    if progress:
        progress(len(search.measured), len(search.measured), "done")
    return results, search.summary()


# --- one call: its arguments and grid (pure: `make` creates the arrays) ---------------------


def element(kind: str) -> str:
    """'*fp16' / '*kfp16' -> 'fp16'."""
    return kind[1:].removeprefix("k") if kind.startswith("*") else kind


def call_args(spec: TritonSpec, config: Mapping[str, Any], point: Mapping[str, int],
              make: Callable[[str, tuple[int, ...], str, bool], Any],
              given: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """Every argument of the signature, in its order: what `given` (the entry's inputs
    function) made, else for a pointer an array of the shape `arrays:` gives
    (make(name, shape, element type, is_output)), else the value `problem:`/`values:`
    give."""
    given = dict(given or {})
    unknown = sorted(set(given) - set(spec.signature))
    if unknown:
        raise OccupancyError(f"kernel '{inert(spec.name)}': inputs: gave {inert(unknown[0])}, "
                             "which is not an argument of the signature")
    try:
        scalars = spec.call_values(config, point)
    except (ExprError, ArithmeticError) as exc:
        raise OccupancyError(f"kernel '{inert(spec.name)}': values: {exc}") from None
    scalars.update({k: v for k, v in given.items() if k in scalars})
    env = {**spec.env(config, point), **scalars}
    out: dict[str, Any] = {}
    for name, kind in spec.signature.items():
        if name in given:
            out[name] = given[name]
        elif not kind.startswith("*"):
            out[name] = scalars[name]
        elif name not in spec.arrays:
            raise OccupancyError(f"kernel '{inert(spec.name)}': measure needs the shape of "
                                 f"{name}: add it to 'arrays:' (e.g. {{{name}: [M, K]}}) or make "
                                 "it in an 'inputs:' function")
        else:
            shape = tuple(integer(e, env, f"arrays.{name}") for e in spec.arrays[name])
            elem = element(kind)
            if min(shape) <= 0 or math.prod(shape) * _BYTES.get(elem, 8) > MAX_ARRAY_BYTES:
                raise OccupancyError(f"kernel '{inert(spec.name)}': arrays: {name} of shape "
                                     f"{shape} does not fit (at most 64 GiB, positive sizes)")
            out[name] = make(name, shape, elem, name in spec.outputs)
    return out


def launch_grid(spec: TritonSpec, config: Mapping[str, Any], point: Mapping[str, int],
                args: Mapping[str, Any]) -> tuple[int, ...]:
    """The grid from `grid:`, with the arguments' actual values (an inputs function may
    set EM)."""
    if not spec.grid:
        raise OccupancyError(f"kernel '{inert(spec.name)}': measure needs the launch grid: add "
                             "'grid:' (e.g. [\"ceil(M / BLOCK_SIZE_M) * ceil(N / BLOCK_SIZE_N)\"])")
    scalars = {k: v for k, v in args.items() if isinstance(v, (int, float))
               and not isinstance(v, bool)}
    env = {**spec.env(config, point), **scalars}
    grid = tuple(integer(g, env, f"grid[{j}]") for j, g in enumerate(spec.grid))
    if min(grid) <= 0 or grid[0] >= 1 << 31 or any(g > 65535 for g in grid[1:]):
        raise OccupancyError(f"kernel '{inert(spec.name)}': grid {grid} cannot launch (x "
                             "1..2^31-1, y and z 1..65535)")
    return grid


def expected(spec: TritonSpec, config: Mapping[str, Any], point: Mapping[str, int],
             args: Mapping[str, Any], to64: Callable[[Any], Any],
             function: Callable[[dict[str, Any]], Any] | None = None) -> dict[str, Any]:
    """The reference's values of the outputs: an expression of the input arrays (in
    float64, like the CUDA path) for the first output, or the Python function's result
    (an array for the first output, or a mapping of output names to arrays). The function
    gets one dict: the problem, constexprs, config and every argument."""
    if not spec.outputs or (spec.reference is None and function is None):
        return {}
    if spec.reference is not None:
        inputs = {k: to64(v) for k, v in args.items() if k not in spec.outputs
                  and hasattr(v, "shape")}
        scalars = {k: v for k, v in args.items() if not hasattr(v, "shape")}
        return {spec.outputs[0]: spec.reference({**spec.env(config, point), **scalars,
                                                 **inputs})}
    assert function is not None
    got = function({**spec.constexprs, **spec.env(config, point), **args})
    if isinstance(got, Mapping):
        bad = sorted(set(got) - set(spec.outputs))
        if bad:
            raise OccupancyError(f"kernel '{inert(spec.name)}': reference gave "
                                 f"{inert(str(bad[0]))}, which is not in 'outputs:'")
        return dict(got)
    return {spec.outputs[0]: got}


def _f64(x: Any) -> Any:
    return x.double() if hasattr(x, "double") else x.astype("float64")


def compare(got: Mapping[str, Any], want: Mapping[str, Any], tolerance: float, name: str
            ) -> tuple[float, bool]:
    """The largest relative error (L2 norm, float64) over the outputs the reference gave,
    and whether each is within the tolerance and free of NaN (NumPy or PyTorch arrays)."""
    worst, ok = 0.0, True
    for k, ref in want.items():
        g, r = _f64(got[k]), _f64(ref)
        if tuple(g.shape) != tuple(r.shape):
            raise OccupancyError(f"kernel '{inert(name)}': the reference of {k} has shape "
                                 f"{tuple(r.shape)}, the array {tuple(g.shape)}")
        nan = bool((g != g).any()) or bool((r != r).any())
        denom = float((r * r).sum()) ** 0.5 or 1.0
        err = float(((g - r) * (g - r)).sum()) ** 0.5 / denom
        err = math.inf if nan or err != err else err
        worst = max(worst, err)
        ok = ok and not nan and err <= tolerance
    return worst, ok


# --- on the GPU -----------------------------------------------------------------------------


def torch_module() -> Any:
    try:
        import torch
    except ImportError:
        raise GpuUnavailable(f"measure of a triton entry {TORCH_HINT}") from None
    if not torch.cuda.is_available():
        raise GpuUnavailable("measure of a triton entry needs a GPU PyTorch can use, and "
                             "torch.cuda.is_available() is False (a CPU-only PyTorch?)")
    return torch


def measure_triton(manifest: str, kernel: str, overrides: Mapping[str, int], top: int | None,
                   reps: int, progress: Callable[[int, int, str], None] | None = None,
                   budget: int | None = None) -> TritonRecord:
    """Compile the entry's configs for GPU 0 (offline, cached), rank them, then launch,
    verify and time the chosen ones with Triton's launcher."""
    from occupancy.build.triton import triton_version
    from occupancy.core.device import from_cuda_properties
    from occupancy.gpu.measure import Timer, cupy_module, device_properties, run_environment
    from occupancy.gpu.results import triton_record
    from occupancy.inputs.manifest.triton import load_triton
    from occupancy.tune.triton_space import rank_entry

    spec = one_size(load_triton(manifest, kernel), overrides)
    cp = cupy_module("measure")
    version = triton_version()  # CompilerUnavailable (one line) without Triton
    torch = torch_module()
    live = from_cuda_properties(device_properties(0))
    if progress:
        progress(0, 1, "compiling")
    # compiled here, not read from this tool's cache: the workers' triton.compile fills
    # Triton's own cache (or hits it), so the launches below load rather than compile
    # serially, and the offline numbers are this machine's Triton's
    tile = rank_entry(spec, [live], cache=False)
    dtile = tile.devices[0]
    size = dtile.sizes[0]
    ranked = ranked_configs(dtile, size)
    if not ranked:
        why = next((c.by_size[size].reason for c in dtile.configs if c.by_size[size].reason),
                   "the model gives none a time")
        raise OccupancyError(f"kernel '{inert(spec.name)}': no config can run on {live.name}: "
                             f"{why}"[:400])
    runner = _Runner(cp, torch, spec, live, Timer(cp, live.l2_cache_bytes), reps, size)
    results, search = run_plan(ranked, size, top, budget, runner.time_one, progress)
    rec = triton_record(run_environment(cp, live), spec, dtile, size, reps, results,
                        {"triton": version, "torch": str(torch.__version__)},
                        runner.failures)
    if search is not None:
        rec["search"] = search
    return rec


class _Runner:
    """Launch, verify and time one config (Triton's launcher; CuPy's timer and driver)."""

    def __init__(self, cp: Any, torch: Any, spec: TritonSpec, dev: Device, timer: Any,
                 reps: int, size: int) -> None:
        from occupancy.build.triton import KernelRef, load_function
        from occupancy.build.triton_entry import triton_constexprs

        self.cp, self.torch, self.spec, self.dev = cp, torch, spec, dev
        self.timer, self.reps, self.size = timer, reps, size
        self.point = spec.points()[0]
        self.jit = KernelRef(spec.function, "", spec.module).load()
        self.consts = triton_constexprs(spec.constexprs)
        self.reference = (load_function(spec.reference_function.path,
                                        spec.reference_function.name, "reference")
                          if spec.reference_function else None)
        self.inputs = (load_function(spec.inputs.path, spec.inputs.name, "inputs")
                       if spec.inputs else None)
        self.failures: list[dict[str, Any]] = []
        self.gen: Any = None  # a seeded generator per config: every config gets the same inputs

    def make(self, name: str, shape: tuple[int, ...], elem: str, output: bool) -> Any:
        torch = self.torch
        dtype = getattr(torch, TORCH_DTYPES.get(elem, "float32"))
        if output:
            # poisoned, so an element the kernel never writes fails verification; finite
            poison = 1e4 if elem == "fp16" else 1e30 if elem.startswith(("fp", "bf")) else 0x5A
            return torch.full(shape, poison, dtype=dtype, device="cuda")
        if elem.startswith(("fp", "bf")):
            return torch.randn(shape, generator=self.gen, device="cuda").to(dtype)
        if elem in ("i1", "u1"):
            return torch.randint(0, 2, shape, generator=self.gen, device="cuda").bool()
        return torch.randint(0, 100, shape, generator=self.gen, device="cuda").to(dtype)

    def time_one(self, c: ConfigResult) -> TritonResult | None:
        from occupancy.gpu.measure import stats
        from occupancy.gpu.results import triton_result

        torch, spec = self.torch, self.spec
        self.gen = torch.Generator(device="cuda").manual_seed(20261201)
        env = {**spec.constexprs, **spec.env(c.config, self.point)}
        given = self.inputs(dict(env)) if self.inputs else None
        if given is not None and not isinstance(given, Mapping):
            raise OccupancyError(f"kernel '{inert(spec.name)}': inputs: the function must "
                                 "return a dict of argument names to arrays or numbers")
        args = call_args(spec, c.config, self.point, self.make, given)
        grid = launch_grid(spec, c.config, self.point, args)
        kw = {**self.consts, **c.config}

        def launch() -> Any:
            return self.jit[grid](**args, **kw)

        try:
            k = launch()
            torch.cuda.synchronize()
        except Exception as exc:  # noqa: BLE001 - OutOfResources, a launch error: a finding
            first = next((ln for ln in str(exc).splitlines() if ln.strip()), "")
            self.failures.append({"params": dict(c.config), "config_index": c.index,
                                  "error": f"{type(exc).__name__}: {first}"[:300]})
            return None
        want = expected(spec, c.config, self.point, args, _f64, self.reference)
        err: float | None = None
        verified: bool | None = None
        if want:
            err, verified = compare(args, want, spec.tolerance, spec.name)
            err = None if math.isinf(err) else err  # JSON has no Infinity; verified says it
        del want
        t = stats(self.timer.time(launch, reps=self.reps))
        md = k.metadata
        drv = self.cp.cuda.driver.occupancyMaxActiveBlocksPerMultiprocessor(
            k.function, md.num_warps * 32, md.shared)
        launched = {"shared": int(md.shared), "n_regs": int(k.n_regs),
                    "n_spills": int(k.n_spills)}
        return triton_result(c, self.size, spec.function, t, verified, err, int(drv), launched,
                             grid)
