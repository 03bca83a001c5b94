"""bench/tilexp/ncu_load.sh's Nsight Compute file beside the model: per point, the load/store
unit's data-stage wavefronts in all and for shared memory (the rest: the tile's global loads),
against ptxsim's counts as the model's load/store roof takes them (shared wavefronts, and a
global load's 128-byte lines at one wavefront each), with the clock the point ran at when
timed without Nsight (Nsight's cycles over the time the record holds) and the stalls on the
loads and the barrier.
Usage: python bench/tilexp/ncu_load_summary.py RECORD_DIR   (its ncu-load/ncu-load.csv and
load.json, load1d.json)"""

from __future__ import annotations

import csv
import io
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
STALLS = ("long_scoreboard", "barrier", "short_scoreboard", "mio_throttle", "lg_throttle")


def blocks(text: str) -> list[tuple[str, str, dict[str, float]]]:
    """(entry, label, metrics) per `## N ENTRY LABEL` section."""
    out = []
    for part in text.split("## ")[1:]:
        head, _, body = part.partition("\n")
        _, entry, label = head.split(" ", 2)
        rows = list(csv.reader(io.StringIO(body)))
        if not rows:
            continue
        col = {h: j for j, h in enumerate(rows[0])}
        vals = {r[col["Metric Name"]]: float(r[col["Metric Value"]].replace(",", ""))
                for r in rows[1:] if len(r) == len(rows[0])}
        out.append((entry, label, vals))
    return out


def model_counts(entry: str, label: str) -> tuple[float, float, dict[str, int]]:
    """ptxsim's shared wavefronts and global load lines for the whole launch."""
    from occupancy import load_device
    from occupancy.inputs.manifest.tuning import load_tuning
    from occupancy.tune.spaces import points, rank

    spec = load_tuning(ROOT / "bench/tilexp/tune.yaml", entry, {})
    pt = points(spec, only=[label])[0][0]
    t = rank(spec, load_device("h200"), [pt], 0).ranked[0].traffic
    units = pt.grid_blocks * pt.threads // 32 * (4096 // pt.params["BK"])
    return t.shared_wavefronts * units, t.global_load_lines * units, pt.params


def main() -> None:
    root = Path(sys.argv[1]) if len(sys.argv) == 2 else None
    if root is None or not (root / "ncu-load" / "ncu-load.csv").is_file():
        print("Error: give the record folder (with ncu-load/ncu-load.csv)", file=sys.stderr)
        raise SystemExit(2)
    timed = {}
    for name in ("load", "load1d"):
        for r in json.loads((root / f"{name}.json").read_text())["results"]:
            if r.get("measured"):
                timed[(name, json.dumps(r["params"], sort_keys=True))] = r["measured"]["median_ms"]
    for entry, label, v in blocks((root / "ncu-load" / "ncu-load.csv").read_text()):
        shared_sim, lines_sim, params = model_counts(entry, label)
        ms = timed[(entry, json.dumps(params, sort_keys=True))]
        allwf = v["l1tex__data_pipe_lsu_wavefronts.sum"]
        shwf = v["l1tex__data_pipe_lsu_wavefronts_mem_shared.sum"]
        stalls = " ".join(f"{s} {v[f'smsp__average_warps_issue_stalled_{s}_per_issue_active.ratio']:.2f}"
                          for s in STALLS)
        print(f"{entry} {label}: LSU wavefronts {allwf / 1e6:.1f} M, shared {shwf / 1e6:.1f} M"
              f" (ptxsim {shared_sim / 1e6:.1f} M), the rest {(allwf - shwf) / 1e6:.1f} M against"
              f" ptxsim's global lines {lines_sim / 1e6:.1f} M; global load requests"
              f" {v['l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum'] / 1e6:.1f} M, sectors"
              f" {v['l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum'] / 1e6:.1f} M; LSU"
              f" {v['l1tex__data_pipe_lsu_wavefronts.avg.pct_of_peak_sustained_elapsed']:.0f}%;"
              f" issue {v['smsp__issue_active.avg.per_cycle_active']:.2f} with"
              f" {v['smsp__warps_active.avg.per_cycle_active']:.2f} warps; clock when timed"
              f" {v['sm__cycles_elapsed.avg'] / ms / 1e6:.3f} GHz; stalls an issue: {stalls}")


if __name__ == "__main__":
    main()
