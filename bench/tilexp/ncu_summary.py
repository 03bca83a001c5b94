"""bench/tilexp/ncu.sh's six Nsight Compute CSVs beside the model: per point, Nsight's shared
wavefronts against ptxsim's count (the model's build and traffic cache, re-run here), the
issue rate a scheduler, the LSU's use, the stalls an issued instruction, and the clock the
loop ran at when timed without Nsight (Nsight's cycles over the time `measure` recorded in
noload.json; Nsight itself locks the clock lower).
Usage: python bench/tilexp/ncu_summary.py RECORD_DIR   (its ncu/ and noload.json)"""

from __future__ import annotations

import csv
import json
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
from ncu_load_summary import model_counts  # noqa: E402  (beside this script)

STALLS = ("dispatch_stall", "short_scoreboard", "barrier", "mio_throttle", "wait", "not_selected")


def metrics(path: Path) -> tuple[str, dict[str, float]]:
    rows = list(csv.reader(path.open()))
    head = next(i for i, r in enumerate(rows) if "Metric Name" in r)
    col = {h: j for j, h in enumerate(rows[head])}
    name, vals = "", {}
    for r in rows[head + 1:]:
        if len(r) == len(rows[head]):
            name = r[col["Kernel Name"]]
            vals[r[col["Metric Name"]]] = float(r[col["Metric Value"]].replace(",", ""))
    return name, vals


def main() -> None:
    if len(sys.argv) != 2 or not (Path(sys.argv[1]) / "ncu").is_dir():
        print("Error: give the record folder (with ncu/ and noload.json)", file=sys.stderr)
        raise SystemExit(2)
    root = Path(sys.argv[1])
    timed = {json.dumps(r["params"], sort_keys=True): r["measured"]["median_ms"]
             for r in json.loads((root / "noload.json").read_text())["results"]}
    for path in sorted((root / "ncu").glob("ncu-*.csv")):
        name, v = metrics(path)
        bm, bn, bk, tm, tn, vec, _ = (int(x) for x in re.findall(r"\d+", name.split("(")[0]))
        params = {"BM": bm, "BN": bn, "BK": bk, "TM": tm, "TN": tn, "VEC": vec, "PAD": 0}
        ms = timed[json.dumps(params, sort_keys=True)]
        wf = v["l1tex__data_pipe_lsu_wavefronts_mem_shared.sum"]
        label = " ".join(f"{k}={v}" for k, v in params.items())
        sim = model_counts("noload", label)[0]
        stalls = " ".join(f"{s} {v[f'smsp__average_warps_issue_stalled_{s}_per_issue_active.ratio']:.2f}"
                          for s in STALLS)
        print(f"{bm}x{bn} BK={bk} TM={tm} TN={tn} VEC={vec}: shared wavefronts {wf / 1e6:.1f} M"
              f" (ptxsim {sim / 1e6:.1f} M, {sim / wf - 1:+.1%}); issue"
              f" {v['smsp__issue_active.avg.per_cycle_active']:.2f} a scheduler-cycle with"
              f" {v['smsp__warps_active.avg.per_cycle_active']:.2f} warps; LSU"
              f" {v['l1tex__data_pipe_lsu_wavefronts.avg.pct_of_peak_sustained_elapsed']:.0f}%,"
              f" FMA pipe {v['sm__inst_executed_pipe_fma.avg.pct_of_peak_sustained_active']:.0f}%;"
              f" clock when timed {v['sm__cycles_elapsed.avg'] / ms / 1e6:.3f} GHz"
              f" ({v['sm__cycles_elapsed.avg'] / 1e6:.2f} M cycles, {ms:.3f} ms); stalls an"
              f" issue: {stalls}")


if __name__ == "__main__":
    main()
