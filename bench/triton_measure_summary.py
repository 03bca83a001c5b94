"""Summary of a bench/gpu_triton_measure.sh run: per record (one `occupancy measure` of a
Triton entry), the configs timed, verified, with driver programs per SM equal to the
prediction, with the launched kernel equal to the offline compile, refused at launch; the
fastest; the model's median |error| where it predicts times; and for each --budget run,
its best over the whole space's best (the same space measured without a budget).

Run: python bench/triton_measure_summary.py OUT_DIR  (writes OUT_DIR/summary.json)
"""

from __future__ import annotations

import json
import statistics
import sys
from pathlib import Path
from typing import Any


def summarize(rec: dict[str, Any]) -> dict[str, Any]:
    res = rec.get("results", [])
    errors = [abs(r["error"]) for r in res if r.get("error") is not None]
    fastest = rec.get("fastest") or {}
    return {
        "kernel": rec.get("kernel"), "problem": rec.get("problem"),
        "triton": rec.get("triton_version"), "model": rec.get("model"),
        "timed": len(res), "pruned": len(rec.get("pruned", [])),
        "verified": sum(r.get("verified") is True for r in res),
        "not_verified": sum(r.get("verified") is False for r in res),
        "occupancy_mismatches": sum(not r.get("occupancy_match") for r in res),
        "resource_mismatches": sum(r.get("resources_match") is False for r in res),
        "launch_failures": len(rec.get("launch_failures", [])),
        "fastest_ms": fastest.get("median_ms"),
        "fastest_predicted_rank": fastest.get("predicted_rank"),
        "fastest_params": fastest.get("params"),
        "median_abs_error": round(statistics.median(errors), 4) if errors else None,
        "search": rec.get("search"),
        "best_of_predicted_top_k_over_best": top_k_curve(res),
    }


def top_k_curve(res: list[dict[str, Any]]) -> dict[str, float] | None:
    """From a record that timed every config: the best measured among the predicted top k
    over the best measured (how far the model's order is from the truth)."""
    ok = [r for r in res if r.get("verified") is not False]
    if len(ok) < 2:
        return None
    best = min(r["measured"]["median_ms"] for r in ok)
    order = sorted(ok, key=lambda r: r["predicted_rank"])
    return {str(k): round(min(r["measured"]["median_ms"] for r in order[:k]) / best, 4)
            for k in (1, 2, 4, 8, 16, 32) if k <= len(order)}


def main() -> None:
    out = Path(sys.argv[1])
    rows: dict[str, Any] = {}
    for f in sorted(out.glob("*.json")):
        if f.name in ("summary.json", "store.json"):
            continue
        try:
            rows[f.stem] = summarize(json.loads(f.read_text()))
        except (ValueError, KeyError, TypeError, AttributeError) as exc:
            rows[f.stem] = {"unreadable": f"{type(exc).__name__}: {exc}"}
    budgets = {}
    for name, row in rows.items():
        if "-budget" not in name:
            continue
        full = rows.get(name.split("-budget")[0] + "-full", {})
        if row.get("fastest_ms") and full.get("fastest_ms"):
            budgets[name] = {"runs": (row.get("search") or {}).get("runs"),
                             "stopped": (row.get("search") or {}).get("stopped"),
                             "best_over_full_best": round(row["fastest_ms"] / full["fastest_ms"], 4),
                             "full_timed": full.get("timed")}
    bad = {k: v for k, v in rows.items()
           if v.get("unreadable") or v.get("not_verified") or v.get("occupancy_mismatches")
           or v.get("resource_mismatches") or v.get("launch_failures") or not v.get("timed")}
    summary = {"records": rows, "budget_vs_full": budgets, "records_with_problems": sorted(bad)}
    (out / "summary.json").write_text(json.dumps(summary, indent=1))
    for name, row in rows.items():
        print(name, json.dumps({k: row.get(k) for k in (
            "timed", "verified", "occupancy_mismatches", "resource_mismatches",
            "launch_failures", "fastest_ms", "fastest_predicted_rank", "median_abs_error",
            "best_of_predicted_top_k_over_best")}))
    for name, b in budgets.items():
        print("budget", name, json.dumps(b))
    print(f"{len(rows)} records; with problems:", ", ".join(sorted(bad)) or "none")


if __name__ == "__main__":
    main()
