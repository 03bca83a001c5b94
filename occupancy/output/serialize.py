"""Results as JSON-ready dicts: the stable field names of every --json output."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from occupancy.core.device import Device
from occupancy.core.solver import LIMIT_NAMES, Cliff, OccupancyResult

if TYPE_CHECKING:
    from occupancy.build.resolve import ListedKernel
    from occupancy.build.resources import KernelResources
    from occupancy.core.banks import BankResult
    from occupancy.core.best import BestAnswer
    from occupancy.core.clusters import ClusterResult
    from occupancy.core.whatif import Config, Curve
    from occupancy.gate.check import Verdict
    from occupancy.tune.spaces import Ranked, TuneReport


def result_dict(dev: Device, r: OccupancyResult, block: tuple[int, ...] | None = None,
                cliff: tuple[Cliff, Cliff] | None = None) -> dict[str, Any]:
    out: dict[str, Any] = {
        "device": dev.key,
        "device_name": dev.name,
        "compute_capability": dev.compute_capability,
        "block": list(block) if block else [r.threads_per_block],
        "threads_per_block": r.threads_per_block,
        "registers_per_thread": r.registers_per_thread,
        "static_shared_memory": r.static_shared_memory,
        "dynamic_shared_memory": r.dynamic_shared_memory,
        "carveout": r.carveout,
        "max_threads_per_block": r.max_threads_per_block,
        "block_barriers": r.block_barriers,
        "opt_in": r.opt_in,
        "warps_per_block": r.warps_per_block,
        "active_blocks_per_sm": r.active_blocks_per_sm,
        "active_warps_per_sm": r.active_warps_per_sm,
        "active_threads_per_sm": r.active_threads_per_sm,
        "max_warps_per_sm": r.max_warps_per_sm,
        "occupancy": r.occupancy,
        "limiters": [n for n in LIMIT_NAMES if n in r.limiters],
        "block_limits": dict(r.block_limits),
        "allocated_registers_per_block": r.allocated_registers_per_block,
        "allocated_shared_memory_per_block": r.allocated_shared_memory_per_block,
        "shared_memory_per_sm_bytes": r.shared_memory_per_sm_bytes,
        "requires_opt_in": r.requires_opt_in,
        "partitioned_global_caching": r.partitioned_global_caching,
        "launchable": r.launchable,
        "cannot_launch": list(r.cannot_launch),
        "notes": list(r.notes),
        "virtual_resources": r.virtual_resources,
    }
    if r.cluster is not None:
        out.update(cluster_dict(r.cluster))
    if cliff is not None:
        out["cliffs"] = {c.resource: cliff_dict(c) for c in cliff}
    return out


def cluster_dict(c: ClusterResult) -> dict[str, Any]:
    return {"cluster": list(c.cluster), "cluster_size": c.size,
            "active_clusters": c.active_clusters,
            "active_clusters_bounds": [c.lower, c.upper],
            "active_clusters_source": c.source, "cluster_launchable": c.launchable}


def cliff_dict(c: Cliff) -> dict[str, Any]:
    return {"current": c.current, "gain_at": c.gain_at, "gain_blocks": c.gain_blocks,
            "lose_at": c.lose_at, "lose_blocks": c.lose_blocks}


def best_dict(a: BestAnswer) -> dict[str, Any]:
    dev, best, i = a.device, a.best, a.inputs
    out = {
        "device": dev.key,
        "device_name": dev.name,
        "inputs": {"registers_per_thread": i.registers_per_thread,
                   "static_shared_memory": i.static_shared_memory,
                   "dynamic_shared_memory": i.dynamic_shared_memory,
                   "dynamic_shared_memory_per_thread": i.dynamic_shared_memory_per_thread,
                   "carveout": i.carveout, "max_threads_per_block": i.max_threads_per_block,
                   "block_barriers": i.block_barriers, "opt_in": i.opt_in},
        "block_size": best.block_size,
        "min_grid_size": best.min_grid_size,
        "active_blocks_per_sm": best.result.active_blocks_per_sm,
        "active_threads_per_sm": best.result.active_threads_per_sm,
        "occupancy": best.result.occupancy,
        "limiters": [n for n in LIMIT_NAMES if n in best.result.limiters],
        "candidates": [{"block_size": b, "active_threads_per_sm": t} for b, t in best.candidates],
        "available_dynamic_shared_memory": [
            {"blocks": x.blocks, "bytes": x.bytes, "driver_bytes": x.driver_bytes}
            for x in a.available
        ],
    }
    if i.min_clusters is not None:
        out["cluster"] = {"min_active_clusters": i.min_clusters,
                          "max_cluster_size": a.cluster_size, "source": a.cluster_source}
    return out


def resources_dict(res: KernelResources) -> dict[str, Any]:
    """A kernel's resources as every JSON output names them."""
    return {
        "function": res.demangled or res.function,
        "mangled": res.function,
        "registers_per_thread": res.registers_per_thread,
        "static_shared_memory": res.static_shared_memory,
        "stack_frame_bytes": res.stack_frame_bytes,
        # a binary's image (or nvlink's report alone) gives the stack frame, not the spills:
        # unknown, not 0, beside `spill_bytes` (the frame there)
        "spill_stores_bytes": None if res.spills_unknown else res.spill_stores_bytes,
        "spill_loads_bytes": None if res.spills_unknown else res.spill_loads_bytes,
        "spill_bytes": res.spill_bytes,
        "spills_known": not (res.spills_unknown or res.unattributed_spills),
        "barriers": res.barriers,
        "max_threads_per_block": res.max_threads_per_block,
        "min_blocks_per_sm": res.min_blocks_per_sm,
        "cluster_dims": list(res.cluster_dims) if res.cluster_dims else None,
        "resources_source": res.source,
    }


def listed_dict(k: ListedKernel) -> dict[str, Any]:
    return {"file": k.file, "arch": k.arch, **resources_dict(k.resources)}


def candidate_dict(r: Ranked, dev: Device) -> dict[str, Any]:
    """One point of a ranking: a user's entry and a shipped family's candidate alike (the
    hand-count keys are null where the entry has no `hand_counts:`)."""
    from occupancy.tune.model import predicted_range_ms
    from occupancy.tune.ranked import WALKED_TABLE, doubts

    res, occ, pred, pt, c, k = r.resources, r.occupancy, r.prediction, r.point, r.candidate, r.counts
    named = doubts(r, dev)
    return {
        "params": dict(pt.params), "label": r.label, "function": pt.function,
        "threads_per_block": pt.threads, "block": list(pt.block), "grid": list(pt.grid),
        "registers_per_thread": res.registers_per_thread if res else None,
        "static_shared_memory": res.static_shared_memory if res else None,
        "dynamic_shared_memory": pt.dynamic_shared_memory,
        "spill_bytes": res.spill_bytes if res else None,
        "spills": res.spills if res else None,
        "can_launch": r.can_launch, "launchable": r.can_launch,
        "pruned": r.pruned, "reasons": list(r.reasons),
        "cannot_launch": list(occ.cannot_launch) if occ else [],
        "active_blocks_per_sm": occ.active_blocks_per_sm if occ else None,
        "occupancy": occ.occupancy if occ else None,
        "limiters": [x for x in LIMIT_NAMES if x in occ.limiters] if occ else [],
        "waves": (-(-pt.grid_blocks // (occ.active_blocks_per_sm * dev.sm_count))
                  if occ and occ.active_blocks_per_sm else None),
        "predicted_ms": pred.predicted_ms if pred else None,
        # the model's error band on the validation corpus (tune/model.py BAND_RATIO), above
        # from the time a walked table it names and does not price may take (slow_walk_ms)
        "predicted_range_ms": list(predicted_range_ms(
            pred.predicted_ms, pred.slow_walk_ms if WALKED_TABLE in named else 0.0)) if pred else None,
        "bound": pred.bound if pred else None,
        # costs the model names for the point and does not price (tune/ranked.doubts)
        "doubts": list(named),
        "roofs_ms": pred.roofs_ms if pred else None,
        "arithmetic_intensity": pred.arithmetic_intensity if pred else None,
        "resources_source": res.source if res else None,
        "registers_source": res.source if res else None,
        # what one warp did on the PTX: shared passes over the conflict-free ones (bank
        # conflicts), 128-byte lines per global load (coalescing); None: not run
        "bank_conflict_factor": round(r.traffic.conflict_factor, 3) if r.traffic else None,
        "lines_per_global_load": round(r.traffic.global_load_lines / r.traffic.global_loads, 3)
        if r.traffic and r.traffic.global_loads else None,
        # a shipped family's candidate and its hand counts (tune/shipped.py)
        "variant": c.variant if c else None, "tile": c.tile if c else None,
        "coarsening": c.coarsening if c else None,
        "defines": dict(c.defines) if c else dict(pt.defines),
        "global_loads": k.global_load_elements if k else None,
        "global_load_bytes": k.global_load_elements * 4 if k else None,
        "load_sectors_per_request": k.load_sectors_per_request if k else None,
        "store_sectors_per_request": k.store_sectors_per_request if k else None,
        "ideal_sectors_per_request": k.ideal_sectors_per_request if k else None,
        "bank_conflict_ways": k.bank_conflict_ways if k else None,
        "flops": k.flops if k else None,
    }


def tune_dict(rep: TuneReport, kernel_tuner: bool = False, stored: dict[str, Any] | None = None,
              store_checked: bool = False) -> dict[str, Any]:
    """`tile --json`, for a manifest entry and a shipped family alike: every point (ranked,
    then the pruned), the pick with its reasons, the ties, the findings."""
    from occupancy.tune.spaces import kernel_tuner_restrictions

    best = rep.recommended
    out: dict[str, Any] = {
        "kernel": rep.name, "device": rep.device.key, "device_name": rep.device.name,
        "problem": dict(rep.spec.problem), "n": rep.spec.problem.get("N") if rep.family else None,
        "family": rep.family,
        "candidates": [candidate_dict(r, rep.device) for r in rep.ranked],
        "recommended": None if best is None else candidate_dict(best, rep.device),
        "reasons": list(rep.why),
        "tie": [dict(r.point.params) for r in rep.ties],
        "tie_labels": [r.label for r in rep.ties],
        "tie_separation": _separation(rep),
        "findings": list(rep.findings),
        "pruned": sum(r.pruned for r in rep.ranked),
        "restricted_out": rep.restricted_out,
        "notes": list(rep.notes),
    }
    # The pruned space as another tuner takes it (kernel_tuner's tune_params/restrictions);
    # a family's several entries are no one space: null.
    out["tune_params"] = None if rep.family else {k: list(v) for k, v in rep.spec.space.items()}
    out["restrictions"] = None if rep.family else kernel_tuner_restrictions(rep)
    if stored is not None or store_checked:
        out["stored"] = stored
        out["pick"] = ({"params": stored["params"], "source": "measured"} if stored else
                       {"params": out["recommended"]["params"] if out["recommended"] else None,
                        "source": "model (not measured on this GPU)"})
    if kernel_tuner:
        return {"tune_params": out["tune_params"], "restrictions": out["restrictions"]}
    return out


# --- plot curves, banks, devices ----------------------------------------------------------------


def curve_dict(c: Curve) -> dict[str, Any]:
    return {
        "name": c.name, "x_label": c.x_label,
        "current": {"x": c.current.x, "occupancy": c.current.occupancy,
                    "active_blocks_per_sm": c.current.active_blocks_per_sm,
                    "limiters": list(c.current.limiters)},
        "x": [p.x for p in c.points],
        "occupancy": [p.occupancy for p in c.points],
        "active_blocks_per_sm": [p.active_blocks_per_sm for p in c.points],
        "limiters": [list(p.limiters) for p in c.points],
    }



def plot_dict(dev: Device, cfg: Config, curves: Sequence[Curve]) -> dict[str, Any]:
    return {"device": dev.key, "device_name": dev.name,
            "threads_per_block": cfg.threads_per_block,
            "registers_per_thread": cfg.registers_per_thread,
            "shared_memory_per_block": cfg.shared_memory_per_block,
            "curves": [curve_dict(c) for c in curves]}


def banks_dict(result: BankResult, addresses: Sequence[int], size: int) -> dict[str, Any]:
    return {"ways": result.ways, "wavefronts": result.wavefronts,
            "conflict_free": result.ways == 1, "element_bytes": size,
            "addresses": list(addresses), "banks": [list(b) for b in result.banks]}


def device_list_dict(devs: Sequence[Device]) -> list[dict[str, Any]]:
    return [{"device": d.key, "name": d.name, "compute_capability": d.compute_capability,
             "aliases": list(d.aliases), "path": d.path} for d in devs]


def device_dict(dev: Device) -> dict[str, Any]:
    return {**dev.to_dict(), "path": dev.path}


# --- check ------------------------------------------------------------------------------------


def verdict_dict(v: Verdict) -> dict[str, Any]:
    """One verdict with the resources it was judged on (None where it could not be read)."""
    r, res = v.result, v.resources
    return {
        "kernel": v.kernel, "device": v.device, "line": v.line, "status": v.status, "ok": v.ok,
        "active_blocks_per_sm": v.active_blocks_per_sm if r else None,
        "occupancy": v.occupancy if r else None,
        "limiters": list(v.limiters),
        "registers_per_thread": res.registers_per_thread if res else None,
        "static_shared_memory": r.static_shared_memory if r else None,
        "dynamic_shared_memory": r.dynamic_shared_memory if r else None,
        "max_threads_per_block": r.max_threads_per_block if r else None,
        "spill_bytes": res.spill_bytes if res else None,
        "stack_frame_bytes": res.stack_frame_bytes if res else None,
        "function": (res.demangled or res.function) if res else None,
        "resources_source": res.source if res else None,
        "registers_source": res.source if res else None,
        "problems": list(v.problems),
        **({"config": dict(v.config)} if v.config is not None else {}),
        **({"cluster": list(r.cluster.cluster), "active_clusters": r.cluster.active_clusters,
            "active_clusters_bounds": [r.cluster.lower, r.cluster.upper],
            "active_clusters_source": r.cluster.source} if r and r.cluster else {}),
    }


def check_dict(manifest: str, verdicts: Sequence[Verdict]) -> dict[str, Any]:
    from occupancy.gate.check import tally

    passed, failed, errors = tally(verdicts)
    return {"manifest": manifest, "results": [verdict_dict(v) for v in verdicts],
            "passed": passed, "failed": failed, "errors": errors}


def _separation(rep: TuneReport) -> dict[str, Any] | None:
    """What separates the tied points (tune/leaders.py): the values they share, and per
    other parameter the best predicted time per value; None without a tie."""
    from occupancy.tune.leaders import leaders

    lead = leaders([(dict(r.point.params), r.prediction.predicted_ms)
                    for r in rep.ties if r.prediction])
    return lead.to_dict() if lead is not None else None
