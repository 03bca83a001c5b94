"""The records of one GPU run built from what was measured: a shipped candidate's result, a
tuning point's result, and a tuning run's record (tune/records.py holds their types)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from occupancy.tune.records import (
    MeasureResult,
    RunEnvironment,
    Timing,
    TritonRecord,
    TritonResult,
    TuningRecord,
    TuningResult,
)

if TYPE_CHECKING:
    from occupancy.build.resources import KernelResources
    from occupancy.core.solver import OccupancyResult
    from occupancy.inputs.manifest.triton import TritonSpec
    from occupancy.tune.model import Prediction
    from occupancy.tune.shipped import Candidate
    from occupancy.tune.spaces import Ranked, TuneReport
    from occupancy.tune.triton_space import ConfigResult, DeviceTile


def measure_result(c: Candidate, n: int, grid: Sequence[int], res: KernelResources,
                   occ: OccupancyResult, pred: Prediction | None, driver: dict[str, int],
                   verified: bool, verification: dict[str, Any], t: Timing,
                   work: dict[str, float]) -> MeasureResult:
    """driver: the function's registers_per_thread, static_shared_memory,
    max_threads_per_block and active_blocks_per_sm as the driver reports them; work: the
    launch's {"flops": ..} (matmul) or {"bytes": ..} (transpose)."""
    out: MeasureResult = {
        "kernel": c.kernel, "variant": c.variant, "label": c.label, "function": c.function,
        "defines": dict(c.defines), "block": list(c.block), "grid": list(grid), "n": n,
        "registers_per_thread": driver["registers_per_thread"],
        "registers_predicted": res.registers_per_thread,
        "static_shared_memory": driver["static_shared_memory"],
        "max_threads_per_block": driver["max_threads_per_block"],
        "predicted_active_blocks_per_sm": occ.active_blocks_per_sm,
        "driver_active_blocks_per_sm": driver["active_blocks_per_sm"],
        "occupancy_match": occ.active_blocks_per_sm == driver["active_blocks_per_sm"],
        "occupancy": occ.occupancy, "verified": verified, "verification": verification,
        "predicted_ms": pred.predicted_ms if pred else None,
        "predicted_bound": pred.bound if pred else None, "measured": t,
        "error": (pred.predicted_ms / t["median_ms"] - 1) if pred else None,
        "percent_of_ceiling": 0.0,  # set once the run's ceilings are known
    }
    seconds = t["median_ms"] * 1e-3
    if "flops" in work:
        out["tflops"] = work["flops"] / seconds / 1e12
    else:
        out["gb_s"] = work["bytes"] / seconds / 1e9
    return out


def tuning_result(r: Ranked, rank: int, t: Timing, verified: bool | None,
                  relative_error: float | None, driver_blocks: int,
                  doubts: Sequence[str] = ()) -> TuningResult:
    assert r.occupancy is not None and r.resources is not None
    pred = r.prediction.predicted_ms if r.prediction else None
    return {
        "params": dict(r.point.params), "function": r.point.function, "predicted_rank": rank,
        "predicted_ms": pred, "predicted_bound": r.prediction.bound if r.prediction else None,
        "measured": t, "error": None if pred is None else pred / t["median_ms"] - 1,
        "verified": verified, "relative_error": relative_error,
        "predicted_active_blocks_per_sm": r.occupancy.active_blocks_per_sm,
        "driver_active_blocks_per_sm": driver_blocks,
        "occupancy_match": driver_blocks == r.occupancy.active_blocks_per_sm,
        "registers_per_thread": r.resources.registers_per_thread,
        "doubts": list(doubts),  # what the model named for it and did not price
    }


def tuning_record(env: RunEnvironment, report: TuneReport, reps: int,
                  results: list[TuningResult]) -> TuningRecord:
    return {
        **env, "kernel": report.spec.name, "problem": dict(report.spec.problem), "reps": reps,
        "results": results,
        "pruned": [{"params": dict(r.point.params), "reasons": list(r.reasons)}
                   for r in report.ranked if r.pruned],
        "fastest": _fastest(results),
    }


def _fastest(results: Sequence[TuningResult]) -> dict[str, Any] | None:
    """The fastest of the points that did not fail verification."""
    ok = [x for x in results if x["verified"] is not False]
    best = min(ok, key=lambda x: x["measured"]["median_ms"]) if ok else None
    return None if best is None else {
        "params": best["params"], "median_ms": best["measured"]["median_ms"],
        "predicted_rank": best["predicted_rank"]}


def triton_result(c: ConfigResult, size: int, function: str, t: Timing, verified: bool | None,
                  relative_error: float | None, driver_blocks: int, launched: dict[str, int],
                  grid: Sequence[int]) -> TritonResult:
    """One config of a triton entry at one size: the offline compile and the prediction
    for this GPU (tune/triton_space.py), and what Triton launched and the driver said."""
    s = c.by_size[size]
    assert s.rank is not None  # only ranked configs are launched
    offline = {"shared": s.shared, "n_regs": s.registers, "n_spills": s.spills}
    return {
        "params": dict(c.config), "function": function, "predicted_rank": s.rank,
        "predicted_ms": s.predicted_ms, "measured": t,
        "error": None if s.predicted_ms is None else s.predicted_ms / t["median_ms"] - 1,
        "verified": verified, "relative_error": relative_error,
        "predicted_active_blocks_per_sm": s.programs_per_sm,
        "driver_active_blocks_per_sm": driver_blocks,
        "occupancy_match": driver_blocks == s.programs_per_sm,
        "registers_per_thread": s.registers,
        "config_index": c.index, "grid": list(grid), "launched": dict(launched),
        "offline": offline, "resources_match": dict(launched) == offline,
    }


def triton_record(env: RunEnvironment, spec: TritonSpec, tile: DeviceTile, size: int, reps: int,
                  results: list[TritonResult], versions: dict[str, str],
                  launch_failures: list[dict[str, Any]] | None = None) -> TritonRecord:
    """A triton entry measured at one problem point (the entry has one size left): the
    tuning record's shape; pruned are the configs that do not fit this GPU (Triton's own
    reason) or that the model gives no time."""
    pruned = []
    for c in tile.configs:
        s = c.by_size[size]
        if s.rank is None:
            why = s.reason or ("does not fit" if not s.fits else "the model gives no time")
            pruned.append({"params": dict(c.config), "reasons": [why]})
    point = spec.points()[0]
    return {
        **env, "kernel": spec.name, "problem": dict(point), "reps": reps,
        "results": list(results), "pruned": pruned,
        "fastest": _fastest(results),
        "triton_version": versions.get("triton", ""), "torch_version": versions.get("torch", ""),
        "model": tile.model, "launch_failures": list(launch_failures or []),
    }
