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
import re
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from occupancy.build.resources import KernelResources, callees_note
from occupancy.core.device import Device
from occupancy.core.errors import OccupancyError
from occupancy.core.solver import solve
from occupancy.inputs.expr import ExprError, integer
from occupancy.inputs.manifest.tuning import DTYPES, MAX_ARRAY_BYTES, MAX_POINTS, ArrayArg, TuneSpec
from occupancy.inputs.safety import INT32_MAX, check_function, inert
from occupancy.tune.bounds import INSTANCES_PER_BUILD, WorkLimits, check_work, point_defines
from occupancy.tune.model import predict_work, work_ffma
from occupancy.tune.ranked import Point, Ranked, TuneReport, order

__all__ = ["Point", "Ranked", "TuneReport", "points", "rank", "rank_entries"]


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


def points(spec: TuneSpec, max_points: int = MAX_POINTS, limits: WorkLimits | None = None,
           only: Sequence[str] = ()) -> tuple[list[Point], int]:
    """Every point that passes `restrict`, and how many it removed; with `only`, the points
    of those labels alone (`measure --tiles`; a label that is none of them is an error).
    Over `max_points` points in the space, or over the limits on compiles: an error before
    any work."""
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
    if only:
        labels = {p.label for p in out}
        unknown = [t for t in only if t not in labels]
        if unknown:
            raise OccupancyError(f"--tiles: {', '.join(inert(t) for t in unknown)}: not a point "
                                 f"of kernel '{inert(spec.name)}'; see occupancy tile "
                                 f"{inert(str(spec.manifest))} --kernel {inert(spec.name)} for "
                                 "the labels")
        wanted = set(only)
        out = [p for p in out if p.label in wanted]
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


# PTX parameter types as C types, for a kernel whose name carries no signature
_PTX_TYPES = {"u64": "unsigned long long", "b64": "unsigned long long", "s64": "long long",
              "u32": "unsigned int", "b32": "unsigned int", "s32": "int", "f32": "float",
              "f64": "double", "s16": "short", "u16": "unsigned short", "s8": "char"}


def kernel_params(spec: TuneSpec, res: KernelResources, build: Any) -> list[str]:
    """The kernel's parameter types: from its demangled name, or, for an extern "C" kernel
    (a plain name, no signature), from its PTX entry, where a 64-bit parameter at the
    position of an array of `args` is that array's pointer."""
    from occupancy.build.names import param_start

    if param_start(res.demangled) < len(res.demangled):
        return _signature(res.demangled)
    from occupancy.build.builds import build_ptx
    from occupancy.tune.ptxsim import PtxError, parse_kernel

    try:
        k = parse_kernel(build_ptx(build), res.function)
    except (PtxError, OccupancyError):
        return _signature(res.demangled)
    out = []
    for j, (_, t) in enumerate(k.params):
        array = j < len(spec.args) and isinstance(spec.args[j], ArrayArg)
        out.append("void*" if array and t in ("u64", "b64", "s64") else _PTX_TYPES.get(t, t))
    return out


def check_args(spec: TuneSpec, params: list[str], demangled: str) -> None:
    """`args` against the compiled signature: count, and pointer vs value per position."""
    if not spec.args:
        return
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
    """Compile every point for the device (see _build_points), solve, prune, predict, rank."""
    return rank_entries(dev, [(spec, list(pts), restricted_out)])


def rank_entries(dev: Device, entries: Sequence[tuple[TuneSpec, list[Point], int]],
                 family: str | None = None) -> TuneReport:
    """Several entries' points in one ranking (a shipped family is a manifest of entries:
    kernels/<family>.yaml), by the one rule of ranked.order."""
    out: list[Ranked] = []
    for spec, pts, _ in entries:
        out += _rank_points(spec, dev, pts)
    first = entries[0][0]
    return order(first, dev, out, sum(e[2] for e in entries), family,
                 occupancy_only=not any(s.work or s.hand_counts for s, _, _ in entries))


def _rank_points(spec: TuneSpec, dev: Device, pts: Sequence[Point]) -> list[Ranked]:
    """Every point compiled, solved, pruned (cannot launch, spills) and predicted."""
    from occupancy.build.builds import arch_of
    from occupancy.build.names import match_kernel
    from occupancy.build.resources import CompilerUnavailable
    from occupancy.tune import handcounts

    if spec.hand_counts:
        handcounts.problem_n(spec)  # a known family and its N, before anything compiles
    results, builds, key_of = _build_points(spec, dev, pts)
    out: list[Ranked] = []
    signature_checked = False
    for pt in pts:
        key = key_of(pt)
        found = results[key]
        if isinstance(found, CompilerUnavailable) and spec.hand_counts:
            c = handcounts.candidate_of(spec.hand_counts, pt.function, pt.block, dict(pt.defines))
            found = {pt.function: handcounts.estimated(c)}
        if isinstance(found, BaseException):
            out.append(Ranked(pt, None, None, None, (f"does not compile: {found}",)))
            continue
        names = {k: (v.demangled or k) for k, v in found.items()}
        try:
            res = found[match_kernel(pt.function, names, f"kernel '{inert(spec.name)}'")]
        except OccupancyError as exc:
            out.append(Ranked(pt, None, None, None, (str(exc),)))
            continue
        build = builds[key]
        if "estimate" not in res.source and build.arch != arch_of(dev):
            res = res.with_source(f"estimate ({res.source}; no compiler targets {arch_of(dev)})")
        if not signature_checked and "estimate" not in res.source:
            check_args(spec, kernel_params(spec, res, build), res.demangled)
            signature_checked = True
        if spec.hand_counts:
            c = handcounts.candidate_of(spec.hand_counts, pt.function, pt.block, dict(pt.defines))
            occ = handcounts.occupancy(dev, c, res, pt.dynamic_shared_memory, spec.carveout)
        else:
            occ = solve(dev, pt.threads, res.registers_per_thread, res.static_shared_memory,
                        pt.dynamic_shared_memory, spec.carveout, res.max_threads_per_block,
                        max(res.barriers, 1), block=tuple(pt.block))
        reasons = list(occ.cannot_launch)
        if res.spills:
            reasons.append(f"spills {res.spill_stores_bytes} B / {res.spill_loads_bytes} B per "
                           f"thread{callees_note(res)}")
        r = Ranked(pt, res, occ, None, tuple(reasons), build)
        out.append(handcounts.attach(spec, dev, r) if spec.hand_counts else r)
    out = _predicted(spec, dev, out)
    if spec.hand_counts:
        out = [handcounts.predicted(spec, dev, r) for r in out]
    return out


def _build_points(spec: TuneSpec, dev: Device, pts: Sequence[Point]
                  ) -> tuple[dict[Any, Any], dict[Any, Any], Callable[[Point], Any]]:
    """(results, builds, key of a point's build): one build per distinct set of -D macros and
    up to INSTANCES_PER_BUILD of its template instances (a compile is serial inside; several
    run on the cores in parallel), cached. A build that fails with several instances is
    built again one instance at a time, so only the instance that does not compile is
    marked. No point compiling is an error."""
    from occupancy.build.builds import arch_of, compile_build, device_build
    from occupancy.build.compilers import make_build, parallel_map
    from occupancy.build.resources import CompilerUnavailable

    instances: dict[tuple[tuple[str, str], ...], list[str]] = {}
    for pt in pts:
        seen = instances.setdefault(pt.defines, [])
        if pt.function not in seen:
            seen.append(pt.function)
    order = {(d, fn): i // INSTANCES_PER_BUILD for d, fns in instances.items()
             for i, fn in enumerate(fns)}
    groups: dict[Any, list[Point]] = {}
    for pt in pts:
        groups.setdefault((pt.defines, order[pt.defines, pt.function]), []).append(pt)

    def build_of(defs: tuple[tuple[str, str], ...], exprs: Sequence[str]) -> Any:
        return device_build(make_build(
            spec.source, arch_of(dev), shown=spec.shown_source, include_dirs=spec.include_dirs,
            flags=spec.flags, defines=dict(defs), name_expressions=exprs))

    builds: dict[Any, Any] = {g: build_of(g[0], sorted({p.function for p in members
                                                        if "<" in p.function}))
                              for g, members in groups.items()}
    # the SASS loop mix (nvdisasm) is read by the model only, not by the hand counts
    mix = spec.predictor != "hand_counts"

    def compile_one(b: Any) -> Any:
        return compile_build(b, loop_mix=mix)

    results = dict(zip(builds, parallel_map(compile_one, list(builds.values())), strict=True))
    retry = {(g[0], fn): build_of(g[0], [fn]) for g, members in groups.items()
             if isinstance(results[g], BaseException) and len(builds[g].name_expressions) > 1
             for fn in sorted({p.function for p in members})}
    builds.update(retry)
    results.update(zip(retry, parallel_map(compile_one, list(retry.values())), strict=True))
    errors = [v for v in results.values() if isinstance(v, BaseException)]
    no_compiler = all(isinstance(v, CompilerUnavailable) for v in errors)
    if len(errors) == len(results) and not (spec.hand_counts and no_compiler):
        raise OccupancyError(f"{spec.manifest}: kernel '{inert(spec.name)}': no point compiles "
                             f"(check 'function:' and the template arguments): {errors[0]}")

    def key_of(pt: Point) -> Any:
        own = (pt.defines, pt.function)
        return own if own in retry else (pt.defines, order[own])

    return results, builds, key_of


def _predicted(spec: TuneSpec, dev: Device, ranked: list[Ranked]) -> list[Ranked]:
    """Every launchable point with its prediction: one warp of each run on its PTX (in
    parallel worker processes where there are many: ptxsim is Python), then the model."""
    from dataclasses import replace

    from occupancy.tune.handcounts import model_reads
    from occupancy.tune.traffic import warp_traffic_many

    todo = []
    for i, r in enumerate(ranked):
        if r.occupancy is None or not r.occupancy.launchable or r.resources is None \
                or not model_reads(spec, r.resources):
            continue
        env = {**spec.problem, **r.point.params}
        flops = float(spec.work["flops"](env)) if "flops" in spec.work else 0.0
        dram = float(spec.work["dram_bytes"](env)) if "dram_bytes" in spec.work else 0.0
        if flops or dram:
            todo.append((i, flops, dram))
    jobs = []
    for i, _, _ in todo:
        res = ranked[i].resources
        assert res is not None
        jobs.append(traffic_job(spec, ranked[i].point, ranked[i].build, res, dev))
    warps = warp_traffic_many(jobs)
    out = list(ranked)
    for (i, flops, dram), warp in zip(todo, warps, strict=True):
        r = ranked[i]
        assert r.occupancy is not None and r.resources is not None
        args = (dev, r.occupancy, r.point.grid_blocks, flops, dram,
                r.resources.registers_per_thread, r.resources.loop_mix, warp,
                write_share(spec, {**spec.problem, **r.point.params}), tuple(r.point.grid))
        block = tuple(r.point.block)
        pred = predict_work(*args, block=block)
        if dict(r.resources.loop_mix or ()).get("uldc"):  # a walk's time if it ran slow
            pred = replace(pred, slow_walk_ms=predict_work(*args, slow_walk=True,
                                                           block=block).predicted_ms)
        out[i] = replace(r, prediction=pred, traffic=warp)
    return out


def write_share(spec: TuneSpec, env: Mapping[str, Any]) -> float | None:
    """The share of the entry's array bytes that the kernel writes (its `output` arrays):
    what sets how far its DRAM stream is from a read-only one (model.dram_efficiency).
    None without arrays."""
    total = written = 0.0
    for a in spec.args:
        if isinstance(a, ArrayArg):
            try:
                size = math.prod(integer(x, env, "shape") for x in a.shape) * DTYPES[a.dtype]
            except ExprError:
                return None
            total += size
            written += size if a.output else 0.0
    return written / total if total else None


def launch_values(spec: TuneSpec, env: Mapping[str, Any]) -> list[float | int] | None:
    """The kernel's arguments as numbers: sizes evaluated, arrays at ptxsim's aligned bases."""
    from occupancy.tune.ptxsim import ARRAY_STRIDE

    if not spec.args:
        return None
    out: list[float | int] = []
    for j, a in enumerate(spec.args):
        out.append(ARRAY_STRIDE * (j + 1) if isinstance(a, ArrayArg) else a(env))
    return out


def traffic_job(spec: TuneSpec, pt: Point, build: Any, res: KernelResources, dev: Device
                ) -> tuple[Any, ...] | None:
    """The arguments of one point's warp run (tune/traffic.py warp_traffic); None where the
    entry gives no args."""
    values = launch_values(spec, {**spec.problem, **pt.params})
    if values is None:
        return None
    # without declared FLOPs nothing scales one loop iteration to the run: run it whole;
    # ptxas's unroll is read from the FFMA loop nested in the SASS's hottest loop (a k loop
    # inside the tile loop), else from the hottest loop's own FFMAs; a SASS without wide
    # shared loads (stores) says ptxas merged none (without a SASS read, merges stand); the
    # loop's share of words its scalar shared loads move says whether it merged those that
    # step across iterations (the nested FFMA loop's, where ptxas kept one)
    mix = dict(res.loop_mix or ())
    merge = (mix.get("wide_lds", 1) > 0, mix.get("wide_sts", 1) > 0)
    where = "inner_" if mix.get("inner_lds_wavefronts") else ""
    words = mix.get(where + "lds_wavefronts", 0)
    share = mix[where + "lds_scalar"] / words if words and where + "lds_scalar" in mix else None
    return (build, res.function, values, pt.block, pt.grid, dev.shared_memory_banks,
            "flops" not in spec.work, work_ffma(mix, "inner_") or work_ffma(mix), merge, share)


def kernel_tuner_restrictions(report: TuneReport) -> list[str]:
    """The pruned space as restrictions another tuner (kernel_tuner) takes: the user's own
    conditions, then one exclusion per point that cannot launch or spills here."""
    out = [r.text for r in report.spec.restrict]
    out += ["not (" + " and ".join(f"{k} == {v!r}" for k, v in r.point.params.items()) + ")"
            for r in report.ranked if r.pruned]
    return out
