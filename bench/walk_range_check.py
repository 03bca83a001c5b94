"""Does a named walk's range hold what was measured? (docs/model.md item 48; CPU only)

    python bench/walk_range_check.py [--out FILE] [RECORD.json ...]

A point whose doubts name a walked `__constant__` table carries, as the top of its
`predicted_range_ms`, the time at the walk's slow floor (tune/constwalk.py). Two checks:

- the microbenchmarks' rows (bench/results/h200-cwalk-gap/fit.txt, the rows the rule was set
  on): of the rows of the slow form that the doubt names (not priced: under 9 blocks an SM
  or 32 warps, and 8+ blocks or a table of 8 KB or more), how many measured within the
  plain band around the issue count and how many within the range up to the floor. The
  slow form is read from the row (a table over 256 B read through ULDC, beside LDC reads or
  with under 10 issue clocks an SM between ULDCs, the row's issue over its ULDCs);
- the corpus records given (default: pnpoly's, the validation part's only space with the
  doubt): `occupancy tile` at each record's size, as bench/corpus_repredict.py runs it, and
  each measured point against its range, with the doubt and without (the points without it:
  how many ran slower than the band, and the most, over the prediction).

Writes FILE (default bench/results/walk-range-check.json) and prints the counts.
"""

from __future__ import annotations

import argparse
import glob
import json
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))
from corpus_repredict import MANIFESTS, space_id, tile  # noqa: E402

from occupancy.tune.constwalk import (  # noqa: E402
    LARGE_TABLE_BYTES,
    PRICED_BLOCKS,
    PRICED_WARPS,
    SMALL_TABLE_BYTES,
    ULDC_ALONE_CLOCKS,
    ULDC_BLOCKS,
    ULDC_MISS_CLOCKS,
)
from occupancy.tune.model import BAND_RATIO  # noqa: E402
from occupancy.tune.ranked import WALKED_TABLE  # noqa: E402

FIT = ROOT / "bench" / "results" / "h200-cwalk-gap" / "fit.txt"
ROW = re.compile(r"table\s+(\d+) B block\s+(\d+) blocks/SM\s+(\d+) uldc (\d+) ldc3 (\d+): "
                 r"measured\s+([\d.]+) clocks an iteration, issue\s+([\d.]+)")


def microbenchmarks() -> dict[str, int]:
    named = band = inside = above = 0
    for line in FIT.read_text().splitlines():
        m = ROW.search(line)
        if not m:
            continue
        size, block, blocks, uldc, ldc3 = (int(x) for x in m.groups()[:5])
        clocks, issue = float(m.group(6)), float(m.group(7))
        slow_form = uldc > 0 and size > SMALL_TABLE_BYTES and \
            (ldc3 > 0 or issue / uldc < ULDC_ALONE_CLOCKS)
        priced = blocks >= PRICED_BLOCKS and blocks * block // 32 >= PRICED_WARPS
        if not slow_form or priced or not (blocks >= ULDC_BLOCKS or size >= LARGE_TABLE_BYTES):
            continue
        top = max(issue, uldc * ULDC_MISS_CLOCKS) * BAND_RATIO
        named += 1
        band += issue / BAND_RATIO <= clocks <= issue * BAND_RATIO
        inside += issue / BAND_RATIO <= clocks <= top
        above += clocks > top
    return {"rows_named": named, "within_band": band, "within_range": inside, "above_range": above}


def corpus(records: list[Path], corpus_dir: Path) -> list[dict[str, object]]:
    out = []
    for path in records:
        rec = json.loads(path.read_text(encoding="utf-8"))
        rows = tile((corpus_dir / MANIFESTS[space_id(path)]).resolve(), rec["kernel"], rec["problem"])
        count = {"record": path.name, "named": 0, "named_within_band": 0, "named_within_range": 0,
                 "others": 0, "others_within_band": 0, "others_above_band": 0,
                 "others_most_measured_over_predicted": 0.0, "most_measured_over_predicted": 0.0,
                 "widest_range_over_predicted": 0.0}
        for r in rec["results"]:
            row = rows.get(json.dumps(r["params"], sort_keys=True))
            if row is None or not row.get("predicted_ms") or r.get("verified") is False:
                continue
            t, p = r["measured"]["median_ms"], row["predicted_ms"]
            low, high = row["predicted_range_ms"]
            in_band = p / BAND_RATIO <= t <= p * BAND_RATIO
            if WALKED_TABLE in row.get("doubts", []):
                count["named"] += 1
                count["named_within_band"] += in_band
                count["named_within_range"] += low <= t <= high
                count["most_measured_over_predicted"] = max(count["most_measured_over_predicted"], t / p)
                count["widest_range_over_predicted"] = max(count["widest_range_over_predicted"],
                                                           high / BAND_RATIO / p)
            else:
                count["others"] += 1
                count["others_within_band"] += in_band
                count["others_above_band"] += t > p * BAND_RATIO
                count["others_most_measured_over_predicted"] = max(
                    count["others_most_measured_over_predicted"], t / p)
        out.append(count)
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("records", nargs="*", type=Path)
    ap.add_argument("--corpus", type=Path, default=ROOT / "bench" / "corpus")
    ap.add_argument("--out", type=Path, default=ROOT / "bench" / "results" / "walk-range-check.json")
    a = ap.parse_args()
    records = a.records or [Path(p) for p in sorted(glob.glob(
        str(ROOT / "bench" / "results" / "h200-corpus-repredicted" / "kt-pnpoly-*.json")))]
    result = {"band_ratio": BAND_RATIO, "microbenchmarks": microbenchmarks(),
              "corpus": corpus(records, a.corpus)}
    a.out.write_text(json.dumps(result, indent=1) + "\n")
    print(json.dumps(result, indent=1))


if __name__ == "__main__":
    main()
