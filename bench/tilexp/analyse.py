"""docs/model.md item 40, from bench/tilexp/run.sh's records and the model of this tree (CPU;
nvcc and nvdisasm for the SASS): what the tile loads add, and where the model is off.

1. The model's error by loop kind (VEC, TM x TN, the bound it names), with and without the
   tile loads (the predictions `measure` recorded).
2. What the loads add a round of blocks (the SM's B resident blocks each loading one tile),
   U = (t_load - t_noload) x clock / (rounds x tiles), against the exposure the tiled-loop
   stall takes for the point (E: the L2/DRAM latency mix less the cover; model.py
   _tiled_loop_stall), by blocks an SM and the SASS's batches of tile loads; and the time
   the loads add, measured and as the model has it (load over noload).
Usage: python bench/tilexp/analyse.py DIR [1d]   (1d: the load1d / noload1d pair)"""

from __future__ import annotations

import collections
import json
import statistics
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
CLOCKS_PER_MS = 1.97e6  # the clock these loops ran at (Nsight: cycles over time, ncu/)
SMS = 132


def records(root: Path, kernel: str) -> dict[str, dict[str, Any]]:
    doc = json.loads((root / f"{kernel}.json").read_text())
    return {json.dumps(r["params"], sort_keys=True): r for r in doc["results"]
            if r.get("measured") and r.get("verified") is not False}


def stall_inputs(entry: str) -> dict[str, dict[str, float]]:
    """Per point of the `entry` (one with loads): the tiled-loop stall's inputs (its exposure E in
    clocks, the SASS's batches), from the model's own ranking with the stall observed."""
    from occupancy import load_device
    from occupancy.inputs.manifest.tuning import load_tuning
    from occupancy.tune import model
    from occupancy.tune.spaces import points, rank

    seen: dict[str, float] = {}
    orig = model._tiled_loop_stall

    def watch(mix: Any, traffic: Any, units: float, wpb: int, bps: int,
              per_batch: float = 1.0, again: float = 0.0) -> float:
        cover = traffic.cover if traffic is not None and traffic.covered_loads \
            else mix.get("ldg_cover", 0)
        latency = model.DRAM_LATENCY_CLOCKS * (1 - again) + model.L2_LATENCY_CLOCKS * again
        seen.update(E=max(0.0, latency - cover * wpb / model.SCHEDULERS_PER_SM),
                    batches=mix.get("ldg_batches", 1))
        return orig(mix, traffic, units, wpb, bps, per_batch, again)

    model._tiled_loop_stall = watch  # type: ignore[assignment]
    spec = load_tuning(ROOT / "bench/tilexp/tune.yaml", entry, {})
    pts, _ = points(spec)
    dev, out = load_device("h200"), {}
    for p in pts:
        seen.clear()
        rank(spec, dev, [p], 0)
        out[json.dumps(p.params, sort_keys=True)] = dict(seen)
    model._tiled_loop_stall = orig  # type: ignore[assignment]
    return out


def by_kind(rows: dict[str, dict[str, Any]]) -> str:
    groups: dict[str, list[float]] = collections.defaultdict(list)
    for r in rows.values():
        p = r["params"]
        kind = f"VEC={p.get('VEC', 0)} {p['TM']}x{p.get('TN', 1)} {r['predicted_bound']}"
        groups[kind].append(r["predicted_ms"] / r["measured"]["median_ms"] - 1)
    return "\n".join(f"  {k:20} {len(v):3} points, median error {statistics.median(v):+6.1%}"
                     for k, v in sorted(groups.items()))


def main() -> None:
    if len(sys.argv) not in (2, 3) or not Path(sys.argv[1]).is_dir() \
            or sys.argv[2:] not in ([], ["1d"]):
        print("Error: give the folder bench/tilexp/run.sh wrote, and 1d or nothing", file=sys.stderr)
        raise SystemExit(2)
    root, suffix = Path(sys.argv[1]), "".join(sys.argv[2:])
    load, noload = records(root, "load" + suffix), records(root, "noload" + suffix)
    for name, rows in (("load" + suffix, load), ("noload" + suffix, noload)):
        errs = [abs(r["predicted_ms"] / r["measured"]["median_ms"] - 1) for r in rows.values()]
        print(f"{name}: {len(rows)} points, median |error| {statistics.median(errs):.1%}")
        print(by_kind(rows))
    inputs = stall_inputs("load" + suffix)
    groups: dict[tuple[int, int], list[tuple[float, ...]]] = collections.defaultdict(list)
    short: dict[tuple[int, bool], list[float]] = collections.defaultdict(list)
    for key, a in load.items():
        if key not in noload or key not in inputs:
            continue
        p, b = a["params"], noload[key]
        blocks = a["driver_active_blocks_per_sm"]
        rounds = max(1.0, (4096 // p["BM"]) * (4096 // p["BN"]) / SMS / blocks)
        tiles = 4096 // p["BK"]
        ta, tb = a["measured"]["median_ms"], b["measured"]["median_ms"]
        u = (ta - tb) * CLOCKS_PER_MS / rounds / tiles
        e = inputs[key]["E"]
        groups[(min(blocks, 4), int(inputs[key]["batches"]))].append(
            (u, e, u / e if e else float("nan"), ta / tb - 1,
             a["predicted_ms"] / b["predicted_ms"] - 1))
        if blocks >= 2 and inputs[key]["batches"] == 1 and e:
            # a block's compute a tile (its share of the round without loads) against E
            share = tb * CLOCKS_PER_MS / rounds / tiles / blocks
            short[(min(blocks, 4), share < e)].append(u / e)
    print("\nblocks/SM batches points  U clocks  E clocks  U/E  added measured  added model")
    for (blocks, batches), v in sorted(groups.items()):
        med = [statistics.median(x[i] for x in v) for i in range(5)]
        print(f"{'4+' if blocks == 4 else blocks:>9} {batches:>7} {len(v):>6} {med[0]:>9.0f}"
              f" {med[1]:>9.0f} {med[2]:>4.2f} {med[3]:>+15.1%} {med[4]:>+12.1%}")
    print("\none batch, 2+ blocks an SM, by a block's compute a tile against E:")
    for (blocks, below), v in sorted(short.items()):
        print(f"  {'4+' if blocks == 4 else blocks} blocks, compute {'<' if below else '>='} E:"
              f" {len(v)} points, U / E median {statistics.median(v):.2f}")


if __name__ == "__main__":
    main()
