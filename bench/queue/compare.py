"""bench/queue/tileloop.py's measured times against `tile`'s own predictions for the same
kernel (bench/queue/tune.yaml), with the tiled-loop stall as a closed queue (the model
since docs/model.md item 36) and as independent blocks (f^B, before). CPU only.

    python bench/queue/compare.py TILELOOP.json QUEUE.json INDEPENDENT.json

TILELOOP.json: what tileloop.py wrote; QUEUE.json, INDEPENDENT.json: `occupancy tile
bench/queue/tune.yaml --kernel tileloop -d h200 --json` with each form of the stall.
"""

from __future__ import annotations

import json
import statistics
import sys
from pathlib import Path


def predicted(path: Path) -> dict[tuple[int, int], float]:
    doc = json.loads(path.read_text())
    return {(c["params"]["ITERS"], c["params"]["B"]): c["predicted_ms"]
            for c in doc["candidates"] if c.get("predicted_ms")}


def main(measured: Path, queue: Path, independent: Path) -> None:
    rows = json.loads(measured.read_text())["rows"]
    forms = {"queue": predicted(queue), "independent": predicted(independent)}
    print(f"{'ITERS':>5} {'B':>2} {'measured ms':>11} {'queue':>15} {'independent':>15}")
    errs: dict[str, list[float]] = {k: [] for k in forms}
    for r in rows:
        key, m = (r["fma_iters"], r["blocks"]), r["ms_load"]
        line = f"{key[0]:>5} {key[1]:>2} {m:11.4f}"
        for name, pred in forms.items():
            p = pred[key]
            errs[name].append(abs(p / m - 1))
            line += f" {p:8.4f} ({p / m - 1:+4.0%})"
        print(line)
    for name, e in errs.items():
        print(f"{name}: median |error| {statistics.median(e):.1%}, largest {max(e):.1%} "
              f"({len(e)} rows)")


if __name__ == "__main__":
    if len(sys.argv) != 4:
        print("Error: usage: python bench/queue/compare.py TILELOOP.json QUEUE.json "
              "INDEPENDENT.json", file=sys.stderr)
        sys.exit(2)
    try:
        main(*(Path(a) for a in sys.argv[1:]))
    except (OSError, ValueError, KeyError) as e:
        print(f"Error: {type(e).__name__}: {e}", file=sys.stderr)
        sys.exit(2)
