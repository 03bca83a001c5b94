"""docs/model.md item 38, checked on bench/l2panel/run.sh's records: per kernel, the measured
and predicted time a round of blocks at 1, 2, 4 and 8 rounds (the model's prediction as
`measure` printed it, at the tree it ran). Usage: python bench/l2panel/compare.py DIR"""

from __future__ import annotations

import json
import sys
from pathlib import Path


def main() -> None:
    if len(sys.argv) != 2 or not Path(sys.argv[1]).is_dir():
        print("Error: give the folder bench/l2panel/run.sh wrote", file=sys.stderr)
        raise SystemExit(2)
    root = Path(sys.argv[1])
    print(f"{'kernel':14} {'rounds':>6} {'measured ms':>11} {'a round':>8} {'predicted':>9}"
          f" {'a round':>8} {'error':>7}")
    for kernel in ("one_block", "three_blocks"):
        for rounds in (1, 2, 4, 8):
            path = root / f"{kernel}-{rounds}.json"
            if not path.is_file():
                continue
            doc = json.loads(path.read_text())
            row = next(r for r in doc["results"] if r.get("measured"))
            meas, pred = row["measured"]["median_ms"], row["predicted_ms"]
            print(f"{kernel:14} {rounds:>6} {meas:>11.3f} {meas / rounds:>8.3f} {pred:>9.3f}"
                  f" {pred / rounds:>8.3f} {pred / meas - 1:>+7.1%}")


if __name__ == "__main__":
    main()
