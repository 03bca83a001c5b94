"""Tile sizes for the user's own kernel: a tuning `space` in the manifest, every point
instantiated (template arguments or -D macros), compiled for the device, solved, pruned
and ranked by the occupancy-aware model; `measure` then times the leaders on a GPU.

The manifest entry (the same file `check` reads):

    - name: sgemm2d
      source: src/sgemm_2d.cuh
      function: sgemm2DBlocktiling<BM, BN, BK, TM, TN>   # or defines: {TILE: TILE}
      space: {BM: [64, 128], BN: [64, 128], BK: [8, 16], TM: [4, 8], TN: [4, 8]}
      restrict: ["BM * BN / (TM * TN) >= 128"]
      problem: {M: 4096, N: 4096, K: 4096}
      block: "BM * BN / (TM * TN)"
      grid: ["ceil(N / BN)", "ceil(M / BM)"]
      work: {flops: "2 * M * N * K", dram_bytes: "4 * (M * K + K * N + M * N)"}
      args: [M, N, K, 1.0, {array: A, dtype: float32, shape: [M, K]}, ...]
      reference: "A @ B"
"""

from __future__ import annotations

import itertools
import math
import os
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from occupancy.build.resources import KernelResources
from occupancy.core.device import Device
from occupancy.core.errors import OccupancyError
from occupancy.core.solver import OccupancyResult, solve
from occupancy.gate.check import ManifestError, _defines_raw, _dirs, _flags, _unknown_key
from occupancy.inputs.expr import Expr, ExprError, array_operands, check_names, integer, parse
from occupancy.inputs.files import read_yaml
from occupancy.inputs.safety import INT32_MAX, check_function, define_value, inert
from occupancy.tune.bounds import WorkLimits, check_work, point_defines
from occupancy.tune.model import MODEL_ERROR, Prediction, predict_work
from occupancy.tune.ptxsim import Traffic

MAX_POINTS = 10_000
MAX_ARRAY_BYTES = 64 << 30  # one argument of `measure`: more than any GPU here holds
MAX_VALUES = 1_000
DTYPES = {"float32": 4, "float64": 8, "float16": 2, "bfloat16": 2, "int32": 4, "int64": 8,
          "int8": 1, "uint8": 1}
_TUNE_KEYS = {"name", "source", "function", "defines", "include_dirs", "flags", "space",
              "restrict", "problem", "block", "grid", "dynamic_shared_memory", "work", "args",
              "reference", "tolerance", "devices", "min_occupancy", "no_spills", "carveout"}


@dataclass(frozen=True)
class ArrayArg:
    name: str
    dtype: str
    shape: tuple[Expr, ...]
    output: bool


@dataclass(frozen=True)
class TuneSpec:
    """One tuning entry of a manifest, validated."""

    name: str
    manifest: str
    line: int
    source: str
    shown_source: str
    function: str
    defines: Mapping[str, Expr | str]
    include_dirs: tuple[str, ...]
    flags: tuple[str, ...]
    space: dict[str, tuple[Any, ...]]
    restrict: tuple[Expr, ...]
    problem: dict[str, int]
    block: tuple[Expr, ...]
    grid: tuple[Expr, ...]
    dynamic_shared_memory: Expr
    work: dict[str, Expr]
    args: tuple[Expr | ArrayArg, ...]
    reference: Expr | None
    tolerance: float
    carveout: int | None = None
    # `reference: NAME` naming another entry of the manifest: that kernel, run once per
    # point on the same inputs (its first point if it has a space), writes the expected
    # values of every output the two share by name.
    reference_kernel: TuneSpec | None = None


@dataclass(frozen=True)
class Point:
    """One configuration of the space, instantiated for a problem."""

    params: dict[str, Any]
    function: str  # the instance, e.g. sgemm<64, 64, 8, 4, 4>
    defines: tuple[tuple[str, str], ...]
    block: tuple[int, ...]
    grid: tuple[int, ...]
    dynamic_shared_memory: int

    @property
    def threads(self) -> int:
        return math.prod(self.block)

    @property
    def grid_blocks(self) -> int:
        return math.prod(self.grid)


@dataclass(frozen=True)
class Ranked:
    point: Point
    resources: KernelResources | None
    occupancy: OccupancyResult | None
    prediction: Prediction | None
    reasons: tuple[str, ...]  # why it is pruned (empty: ranked)
    build: Any = None  # the toolchain Build that compiled it (measure runs its cubin)
    traffic: Traffic | None = None  # one warp of it run on its PTX (ptxsim), None: not run

    @property
    def can_launch(self) -> bool:
        return self.occupancy is not None and self.occupancy.launchable

    @property
    def pruned(self) -> bool:
        return bool(self.reasons)


@dataclass(frozen=True)
class TuneReport:
    spec: TuneSpec
    device: Device
    ranked: tuple[Ranked, ...]  # launchable ones by predicted time, then the pruned
    restricted_out: int  # points `restrict` removed
    ties: tuple[Ranked, ...] = ()
    notes: tuple[str, ...] = field(default=())

    @property
    def recommended(self) -> Ranked | None:
        return next((r for r in self.ranked if not r.pruned), None)


def _fail(spath: str, line: int | None, msg: str) -> ManifestError:
    return ManifestError(msg, spath, line)


def load_tuning(manifest: str | os.PathLike[str], kernel: str,
                overrides: Mapping[str, int] | None = None, *, _as_reference: bool = False
                ) -> TuneSpec:
    """The tuning entry `kernel` of a manifest; `overrides` replace problem sizes (--set).
    `reference: NAME` naming another entry loads that entry too (the reference kernel; it
    may have no space: it runs as given)."""
    p = Path(manifest)
    spath = str(p)
    doc = read_yaml(p, ManifestError, "give the path of a manifest with a tuning 'space:'",
                    what="manifest")
    data = doc.data
    if not isinstance(data, dict) or not isinstance(data.get("kernels"), list):
        raise _fail(spath, 1, "a manifest is a mapping with 'kernels:'")
    entries = [(i, e) for i, e in enumerate(data["kernels"]) if isinstance(e, dict)]
    found = [(i, e) for i, e in entries if e.get("name") == kernel]
    tunable = sorted(str(e.get("name")) for _, e in entries if "space" in e)
    if not found:
        raise _fail(spath, doc.line("kernels"), f"no kernel '{inert(kernel)}' (tuning entries: "
                    f"{', '.join(map(inert, tunable)) or 'none'}); --kernel names one")
    i, e = found[0]

    def line(*key: Any) -> int | None:
        return doc.line("kernels", i, *key)

    def fail(key: str, msg: str) -> ManifestError:
        return _fail(spath, line(key), f"kernel '{inert(kernel)}': {key}: {msg}")

    for key in e:
        if key not in _TUNE_KEYS:
            raise _fail(spath, line(str(key)), f"kernel '{inert(kernel)}': "
                        + _unknown_key(key, _TUNE_KEYS))
    for key in ("source", "block", "grid") if _as_reference else ("source", "space", "block",
                                                                          "grid"):
        if key not in e:
            raise _fail(spath, line(), f"kernel '{inert(kernel)}': a tuning entry needs "
                        f"'{key}:'")
    src = e["source"]
    if not isinstance(src, str) or not src or "\x00" in src:
        raise fail("source", "must be a file path")
    q = Path(src) if os.path.isabs(src) else p.parent / src
    if not q.is_file():
        raise fail("source", f"no such file {inert(str(q))}")
    space_raw = e.get("space", {"_": [0]}) if _as_reference else e["space"]
    if not isinstance(space_raw, dict) or not space_raw:
        raise fail("space", "must map names to lists of values, e.g. {TILE: [16, 32]}")
    space: dict[str, tuple[Any, ...]] = {}
    for name, values in space_raw.items():
        if not isinstance(name, str) or not re.fullmatch(r"[A-Za-z_]\w{0,63}", name):
            raise fail("space", f"{inert(str(name))!r} is not a name (letters, digits, _)")
        if (not isinstance(values, list) or not values or len(values) > MAX_VALUES
                or not all(isinstance(v, (int, float, str)) for v in values)):
            raise fail("space", f"{name} must be a list of 1-{MAX_VALUES} numbers or words")
        for v in values:
            define_value(v, f"space.{name}")  # shell-safe, as any define
        space[name] = tuple(values)
    problem: dict[str, int] = {}
    prob_raw = e.get("problem", {})
    if not isinstance(prob_raw, dict):
        raise fail("problem", "must map sizes to numbers, e.g. {M: 4096}")
    for k, v in {**prob_raw, **(overrides or {})}.items():
        if not isinstance(k, str) or not re.fullmatch(r"[A-Za-z_]\w{0,63}", k):
            raise fail("problem", f"{inert(str(k))!r} is not a name")
        if isinstance(v, bool) or not isinstance(v, int) or not 0 < v <= INT32_MAX:
            raise fail("problem", f"{k} must be an integer 1..{INT32_MAX:,}, got {inert(repr(v))}")
        problem[k] = v
    clash = set(space) & set(problem)
    if clash:
        raise fail("problem", f"{sorted(clash)[0]} is both a space and a problem name")
    known = set(space) | set(problem)

    def expr(key: str, v: Any, *, arrays: bool = False, extra: set[str] | None = None) -> Expr:
        try:
            x = parse(v, f"kernel '{inert(kernel)}': {key}", arrays=arrays)
            check_names(x, known | (extra or set()), f"kernel '{inert(kernel)}': {key}")
        except ExprError as exc:
            raise _fail(spath, line(key.split(".")[0].split("[")[0]), str(exc)) from None
        return x

    def exprs(key: str) -> tuple[Expr, ...]:
        v = e.get(key)
        items = v if isinstance(v, list) else [v]
        if not 1 <= len(items) <= 3:
            raise fail(key, "give an expression or a list of 1-3")
        return tuple(expr(f"{key}[{j}]", x) for j, x in enumerate(items))

    restrict_raw = e.get("restrict", [])
    if not isinstance(restrict_raw, list) or len(restrict_raw) > 64:
        raise fail("restrict", "must be a list of conditions")
    restrict = tuple(expr(f"restrict[{j}]", r) for j, r in enumerate(restrict_raw))
    function = e.get("function") or kernel
    try:
        check_function(function, "function")
    except OccupancyError as exc:
        raise fail("function", str(exc).removeprefix("function: ")) from None
    defines: dict[str, Expr | str] = {}
    try:
        raw = _defines_raw(e.get("defines", {}), line("defines"))
    except OccupancyError as exc:
        raise _fail(spath, line("defines"), f"kernel '{inert(kernel)}': {exc}") from None
    for k, v in raw.items():
        # A string naming space or problem sizes is an expression ({TILE: TILE});
        # anything else is a literal define (true -> 1, numbers and words verbatim).
        x = None
        if isinstance(v, str):
            try:
                x = parse(v, "")
            except ExprError:
                x = None
        if x is not None and x.names and x.names <= known:
            defines[k] = x
        else:
            try:
                defines[k] = define_value(v, f"defines.{k}")
            except OccupancyError as exc:
                raise _fail(spath, line("defines"), f"kernel '{inert(kernel)}': {exc}") from None
    try:
        include_dirs = _dirs(e.get("include_dirs", []), p.parent, line("include_dirs"))
        flags = _flags(e.get("flags", []), line("flags"))
    except OccupancyError as exc:
        raise _fail(spath, getattr(exc, "line", None), f"kernel '{inert(kernel)}': {exc}") from None
    work_raw = e.get("work", {})
    if not isinstance(work_raw, dict) or not set(work_raw) <= {"flops", "dram_bytes"}:
        raise fail("work", "is {flops: EXPR, dram_bytes: EXPR}")
    work = {k: expr(f"work.{k}", v) for k, v in work_raw.items()}
    args, arrays = _args(e.get("args", []), expr, fail)
    reference = None
    reference_kernel = None
    raw_ref = e.get("reference")
    kernel_names = {str(x.get("name")) for _, x in entries} - {kernel}
    if raw_ref is not None and not _as_reference and isinstance(raw_ref, str) \
            and raw_ref in kernel_names:
        if raw_ref in arrays or raw_ref in known:
            raise fail("reference", f"'{inert(raw_ref)}' names both another kernel and an "
                       "array or size of this one: rename one")
        # its own problems are reported at its own keys and lines
        reference_kernel = load_tuning(manifest, raw_ref, problem, _as_reference=True)
        ours = {a.name for a in args if isinstance(a, ArrayArg) and a.output}
        theirs = {a.name for a in reference_kernel.args if isinstance(a, ArrayArg) and a.output}
        if not ours & theirs:
            raise fail("reference", f"kernel '{inert(raw_ref)}' writes none of this kernel's "
                       f"outputs ({', '.join(sorted(ours)) or 'none'}): name its output arrays "
                       "the same")
    elif raw_ref is not None and not _as_reference:
        reference = expr("reference", raw_ref, arrays=True, extra=set(arrays))
        scalars = sorted(array_operands(reference) - arrays)
        if scalars:
            raise fail("reference", f"{inert(scalars[0]) or 'a number'} is not an array: .T "
                       "and @ act on arrays (args given as {array: NAME, ...})")
    tol = e.get("tolerance", 1e-3)
    if isinstance(tol, str):  # YAML 1.1 reads 1e-4 (no dot) as a string
        try:
            tol = float(tol)
        except ValueError:
            pass
    if isinstance(tol, bool) or not isinstance(tol, (int, float)) or not 0 < tol < 1:
        raise fail("tolerance", "is a relative error between 0 and 1, e.g. 1e-3")
    carveout = e.get("carveout")
    if carveout is not None and (isinstance(carveout, bool) or not isinstance(carveout, int)
                                 or not 0 <= carveout <= 100):
        raise fail("carveout", "is a percentage 0-100")
    dyn = expr("dynamic_shared_memory", e.get("dynamic_shared_memory", 0))
    return TuneSpec(kernel, spath, line() or 1, os.path.abspath(q), src, function, defines,
                    include_dirs, flags, space, restrict, problem, exprs("block"), exprs("grid"),
                    dyn, work, args, reference, float(tol), carveout, reference_kernel)


def _args(raw: Any, expr: Any, fail: Any) -> tuple[tuple[Expr | ArrayArg, ...], set[str]]:
    if not isinstance(raw, list) or len(raw) > 64:
        raise fail("args", "must be the kernel's arguments in launch order")
    out: list[Expr | ArrayArg] = []
    names: set[str] = set()
    for j, a in enumerate(raw):
        if isinstance(a, dict):
            if not set(a) <= {"array", "dtype", "shape", "output"} or "array" not in a:
                raise fail("args", f"[{j}] is {{array: NAME, dtype: float32, shape: [..], "
                           "output: true}")
            name, dtype, shape = a["array"], a.get("dtype", "float32"), a.get("shape")
            if not isinstance(name, str) or not re.fullmatch(r"[A-Za-z_]\w{0,63}", name):
                raise fail("args", f"[{j}] array name must be a name")
            if dtype not in DTYPES:
                raise fail("args", f"[{j}] dtype must be one of {', '.join(DTYPES)}")
            if not isinstance(shape, list) or not 1 <= len(shape) <= 4:
                raise fail("args", f"[{j}] shape must be a list of 1-4 sizes")
            output = a.get("output", False)
            if not isinstance(output, bool):
                raise fail("args", f"[{j}] output must be true or false")
            out.append(ArrayArg(name, dtype, tuple(expr(f"args[{j}].shape", s) for s in shape),
                                output))
            names.add(name)
        else:
            out.append(expr(f"args[{j}]", a))
    return tuple(out), names


# --- the space -------------------------------------------------------------------------------


def _instance(template: str, env: Mapping[str, Any]) -> str:
    """k<BM, BN> -> k<64, 128>: each space name, as a whole word, replaced by its value."""
    def sub(m: re.Match[str]) -> str:
        v = env.get(m.group(0))
        if v is None:
            return m.group(0)
        return ("true" if v else "false") if isinstance(v, bool) else str(v)

    i = template.find("<")
    if i < 0:
        return template
    return check_function(template[:i] + re.sub(r"[A-Za-z_]\w*", sub, template[i:]), "function")


def points(spec: TuneSpec, max_points: int = MAX_POINTS, limits: WorkLimits | None = None
           ) -> tuple[list[Point], int]:
    """Every point that passes `restrict`, and how many it removed. Over `max_points`
    points in the space, or over the limits on compiles: an error before any work."""
    total = math.prod(len(v) for v in spec.space.values())
    if total > max_points:
        raise OccupancyError(f"{spec.manifest}: kernel '{inert(spec.name)}': the space has "
                             f"{total:,} points, over {max_points:,}: narrow it, add restrict, "
                             "or raise --max-points")
    names = list(spec.space)
    out, removed = [], 0
    for values in itertools.product(*(spec.space[n] for n in names)):
        params = dict(zip(names, values, strict=True))
        env = {**spec.problem, **params}
        where = f"{spec.manifest}: kernel '{inert(spec.name)}'"
        try:
            if not all(r(env) for r in spec.restrict):
                removed += 1
                continue
            block = tuple(integer(b, env, f"{where}: block") for b in spec.block)
            grid = tuple(integer(g, env, f"{where}: grid") for g in spec.grid)
            dyn = integer(spec.dynamic_shared_memory, env, f"{where}: dynamic_shared_memory")
        except ExprError as exc:
            raise OccupancyError(f"{where}: {exc}") from None
        if any(b <= 0 or b > INT32_MAX for b in (*block, *grid)) or not 0 <= dyn <= INT32_MAX:
            raise OccupancyError(f"{where}: block {block} / grid {grid} / smem {dyn} out of "
                                 f"range for {params}")
        for j, a in enumerate(spec.args):
            if isinstance(a, ArrayArg):
                try:
                    shape = [integer(x, env, f"{where}: args[{j}].shape") for x in a.shape]
                except ExprError as exc:
                    raise OccupancyError(f"{where}: {exc}") from None
                if min(shape) <= 0 or math.prod(shape) * DTYPES[a.dtype] > MAX_ARRAY_BYTES:
                    raise OccupancyError(f"{where}: args[{j}]: array {a.name} of shape {shape} "
                                         f"is empty or over {MAX_ARRAY_BYTES >> 30} GiB")
        defines = point_defines(spec, env, where)
        out.append(Point(params, _instance(spec.function, env), defines, block, grid, dyn))
    if not out:
        raise OccupancyError(f"{spec.manifest}: kernel '{inert(spec.name)}': restrict leaves no "
                             "point of the space: loosen it")
    check_work(spec, out, limits)
    return out, removed


def _signature(demangled: str) -> list[str]:
    """The parameter types of a demangled kernel: 'void k<..>(int, float const*)'."""
    from occupancy.build.names import param_start, split_top

    start = param_start(demangled)
    if start == len(demangled):
        return []
    parts = split_top(demangled[start + 1:demangled.rfind(")")], "<(", ">)")
    return [] if parts == ["void"] else parts


def check_args(spec: TuneSpec, demangled: str) -> None:
    """`args` against the compiled signature: count, and pointer vs value per position."""
    if not spec.args:
        return
    params = _signature(demangled)
    where = f"{spec.manifest}: kernel '{inert(spec.name)}': args"
    if len(params) != len(spec.args):
        raise OccupancyError(f"{where}: {len(spec.args)} given, the kernel takes "
                             f"{len(params)}: {inert(demangled)}")
    for j, (a, t) in enumerate(zip(spec.args, params, strict=True)):
        pointer = t.rstrip().endswith("*")
        if isinstance(a, ArrayArg) != pointer:
            raise OccupancyError(f"{where}: [{j}] is {'an array' if isinstance(a, ArrayArg) else 'a value'}"
                                 f" but the kernel's parameter {j} is {inert(t)}")


def rank(spec: TuneSpec, dev: Device, pts: Sequence[Point], restricted_out: int = 0
         ) -> TuneReport:
    """Compile every point for the device (one build per distinct set of -D macros, all its
    template instances at once, in parallel, cached), solve, prune, predict, rank."""
    from occupancy.build.builds import arch_of, compile_build, device_build
    from occupancy.build.compilers import make_build, parallel_map
    from occupancy.build.names import match_kernel

    groups: dict[tuple[tuple[str, str], ...], list[Point]] = {}
    for pt in pts:
        groups.setdefault(pt.defines, []).append(pt)
    builds = {}
    for defs, members in groups.items():
        exprs = sorted({p.function for p in members if "<" in p.function})
        builds[defs] = device_build(make_build(
            spec.source, arch_of(dev), shown=spec.shown_source, include_dirs=spec.include_dirs,
            flags=spec.flags, defines=dict(defs), name_expressions=exprs), dev)
    results = dict(zip(builds, parallel_map(compile_build, list(builds.values())), strict=True))
    errors = {k: v for k, v in results.items() if isinstance(v, BaseException)}
    if len(errors) == len(results):
        first = next(iter(errors.values()))
        raise OccupancyError(f"{spec.manifest}: kernel '{inert(spec.name)}': no point compiles "
                             f"(check 'function:' and the template arguments): {first}")
    out: list[Ranked] = []
    signature_checked = False
    for pt in pts:
        found = results[pt.defines]
        if isinstance(found, BaseException):
            out.append(Ranked(pt, None, None, None, (f"does not compile: {found}",)))
            continue
        names = {k: (v.demangled or k) for k, v in found.items()}
        try:
            res = found[match_kernel(pt.function, names, f"kernel '{inert(spec.name)}'")]
        except OccupancyError as exc:
            out.append(Ranked(pt, None, None, None, (str(exc),)))
            continue
        if not signature_checked:
            check_args(spec, res.demangled)
            signature_checked = True
        occ = solve(dev, pt.threads, res.registers_per_thread, res.static_shared_memory,
                    pt.dynamic_shared_memory, spec.carveout, res.max_threads_per_block,
                    max(res.barriers, 1))
        reasons = list(occ.cannot_launch)
        if res.spills:
            reasons.append(f"spills {res.spill_stores_bytes} B / {res.spill_loads_bytes} B per "
                           "thread")
        pred = warp = None
        if occ.launchable:
            env = {**spec.problem, **pt.params}
            flops = float(spec.work["flops"](env)) if "flops" in spec.work else 0.0
            dram = float(spec.work["dram_bytes"](env)) if "dram_bytes" in spec.work else 0.0
            if flops or dram:
                warp = traffic(spec, pt, builds[pt.defines], res, dev)
                pred = predict_work(dev, occ, pt.grid_blocks, flops, dram,
                                    res.registers_per_thread, res.loop_mix, warp)
        out.append(Ranked(pt, res, occ, pred, tuple(reasons), builds[pt.defines], warp))
    ok = sorted((r for r in out if not r.pruned),
                key=lambda r: (r.prediction.predicted_ms if r.prediction else 0.0,
                               -(r.occupancy.occupancy if r.occupancy else 0)))
    pruned = [r for r in out if r.pruned]
    ties: tuple[Ranked, ...] = ()
    notes = []
    if ok and ok[0].prediction:
        best = ok[0].prediction.predicted_ms
        ties = tuple(r for r in ok if r.prediction
                     and r.prediction.predicted_ms <= best * (1 + MODEL_ERROR))
    if not spec.work:
        notes.append("no 'work:' given: ranked by occupancy only; add work: {flops, dram_bytes} "
                     "for predicted times")
        ok.sort(key=lambda r: -(r.occupancy.occupancy if r.occupancy else 0))
    return TuneReport(spec, dev, (*ok, *pruned), restricted_out, ties if len(ties) > 1 else (),
                      tuple(notes))


def launch_values(spec: TuneSpec, env: Mapping[str, Any]) -> list[float | int] | None:
    """The kernel's arguments as numbers: sizes evaluated, arrays at ptxsim's aligned bases."""
    from occupancy.tune.ptxsim import ARRAY_STRIDE

    if not spec.args:
        return None
    out: list[float | int] = []
    for j, a in enumerate(spec.args):
        out.append(ARRAY_STRIDE * (j + 1) if isinstance(a, ArrayArg) else a(env))
    return out


def traffic(spec: TuneSpec, pt: Point, build: Any, res: KernelResources, dev: Device
            ) -> Traffic | None:
    """One warp of the point run on its PTX (ptxsim), cached; None where there are no args,
    no PTX, or PTX the emulator cannot follow."""
    from occupancy.tune.traffic import warp_traffic

    values = launch_values(spec, {**spec.problem, **pt.params})
    if values is None:
        return None
    # without declared FLOPs nothing scales one loop iteration to the run: run it whole
    return warp_traffic(build, res.function, values, pt.block, pt.grid, dev.shared_memory_banks,
                        whole="flops" not in spec.work)


def kernel_tuner_restrictions(report: TuneReport) -> list[str]:
    """The pruned space as restrictions another tuner (kernel_tuner) takes: the user's own
    conditions, then one exclusion per point that cannot launch or spills here."""
    out = [r.text for r in report.spec.restrict]
    out += ["not (" + " and ".join(f"{k} == {v!r}" for k, v in r.point.params.items()) + ")"
            for r in report.ranked if r.pruned]
    return out
