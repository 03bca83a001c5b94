"""What bench/ncu/rolled.sh's Nsight Compute run says (CPU; docs/model.md item 43): per run,
the cycles, issue rate and warps a scheduler; a warp's cycles per issued instruction by
stall reason (the per-instruction samples' shares of warps / issue rate); and in the k
loop (the block of SASS from the first LDS.128 on), each shared load's wavefronts and the
short-scoreboard samples of the first instruction that waits for them, per execution
(relative: the runs sample at the same interval).

Usage: python bench/ncu/rolled_summary.py DIR   (DIR: the unpacked tarball(s); every
NAME-sass.csv with its NAME-raw.csv)"""

from __future__ import annotations

import csv
import sys
from pathlib import Path

REASONS = ("short_sb", "long_sb", "barrier", "wait", "dispatch", "not_selected", "selected")


def _num(text: str) -> float:
    return float(text.replace(",", "") or 0)


def _rows(path: Path) -> list[dict[str, str]]:
    rows = list(csv.reader(path.open()))
    return [dict(zip(rows[1], r, strict=True)) for r in rows[2:] if len(r) == len(rows[1])]


def _raw(path: Path) -> dict[str, float]:
    rows = list(csv.reader(path.open()))
    want = ("sm__cycles_elapsed.avg", "smsp__issue_active.avg.per_cycle_active",
            "smsp__warps_active.avg.per_cycle_active")
    return {k: _num(v) for k, v in zip(rows[0], rows[2], strict=True) if k in want}


def main(folder: Path) -> None:
    for run in sorted(p.name[: -len("-sass.csv")] for p in folder.glob("*-sass.csv")):
        rows, raw = _rows(folder / f"{run}-sass.csv"), _raw(folder / f"{run}-raw.csv")
        issue, warps = raw["smsp__issue_active.avg.per_cycle_active"], \
            raw["smsp__warps_active.avg.per_cycle_active"]
        samples = sum(_num(r["# Samples"]) for r in rows)
        per = {k: sum(_num(r[f"stall_{k}"]) for r in rows) / samples * warps / issue
               for k in REASONS}
        print(f"{run}: {raw['sm__cycles_elapsed.avg']:,.0f} cycles, {issue:.2f} issued a cycle, "
              f"{warps:.2f} warps a scheduler; cycles an issue by reason: "
              + ", ".join(f"{k} {v:.2f}" for k, v in per.items()))
        first = next(i for i, r in enumerate(rows) if "LDS.128" in r["Source"])
        loads = [r for r in rows[first:first + 20] if "LDS" in r["Source"]]
        waits = next(r for r in rows[first:] if r["Source"].split()[0] == "FFMA")
        execs = _num(waits["Instructions Executed"])
        print("   shared loads of the k loop, wavefronts each: "
              + " ".join(f"{_num(r['L1 Wavefronts Shared']) / _num(r['Instructions Executed']):.0f}"
                         for r in loads)
              + f"; its first FFMA: {_num(waits['stall_short_sb']) / execs * 1e3:.2f} "
              "short-scoreboard samples per 1,000 executions")


if __name__ == "__main__":
    main(Path(sys.argv[1]))
