"""bench/blockrow/fit.py: the DRAM time a store's partial sectors cost beyond their bytes, from
the blockrow copy's Nsight Compute runs (bench/results/h200-blockrow: ncu.txt, curve/
curve-ncu.txt; time and DRAM bytes of one launch each, caches flushed), in bytes of the
model's copy bandwidth (what tune/reuse.py's SPLIT_SECTOR_BYTES and OPEN_SECTOR_BYTES_BY_BLOCKS
hold):

- a split sector (an end of a warp store off its sectors, which a store completes): the
  warp-contiguous copy of rows off their lines (C = 50,257) against the same copy of rows on
  them (C = 50,176), the latter's time scaled to the former's bytes;
- an open one (completed by another warp's store): the strided copy against the
  warp-contiguous one at the same point, less the time of the DRAM bytes it moves more
  (which the model counts: tune/reuse.py's read-back and re-written bytes).

Usage: python bench/blockrow/fit.py bench/results/h200-blockrow"""

from __future__ import annotations

import re
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from occupancy import load_device  # noqa: E402
from occupancy.tune.model import DRAM_EFFICIENCY, REQUEST_OVERHEAD_BYTES  # noqa: E402

N = 8192


def ends(c: int) -> float:
    """A copy's warp-store ends off their sectors: two a warp store, on every row that does not
    start on a 32-B sector (row r starts r x 4C bytes in)."""
    stores = -(-c // 32)
    return sum(2.0 * stores for r in range(N) if r * 4 * c % 32)


def runs(path: Path, reads: dict[str, float] | None = None) -> dict[str, tuple[float, float]]:
    """Each `== point` block's (seconds, DRAM bytes read + written); `reads` receives its
    DRAM bytes read."""
    out: dict[str, tuple[float, float]] = {}
    point, vals = "", {}
    for line in path.read_text().splitlines():
        if line.startswith("== "):
            point, vals = line[3:].strip(), {}
            continue
        m = re.search(r'"(dram__bytes_read\.sum|dram__bytes_write\.sum|gpu__time_duration\.sum)",'
                      r'"[^"]*","([\d,]+)"', line)
        if m:
            vals[m.group(1)] = float(m.group(2).replace(",", ""))
            if len(vals) == 3:
                out[point] = (vals["gpu__time_duration.sum"] * 1e-9,
                              vals["dram__bytes_read.sum"] + vals["dram__bytes_write.sum"])
                if reads is not None:
                    reads[point] = vals["dram__bytes_read.sum"]
    return out


def main() -> None:
    record = Path(sys.argv[1])
    dev = load_device("h200")
    rate = dev.dram_bandwidth_gb_s * 1e9 * DRAM_EFFICIENCY / (1 + REQUEST_OVERHEAD_BYTES / 128.0)
    print(f"model copy bandwidth {rate / 1e12:.3f} TB/s")
    single = runs(record / "ncu.txt")
    split = ends(50257)
    print("split sectors (contiguous, off lines against on): block, bytes a sector")
    for block in (128, 1024):
        t_on, b_on = single[f"C=50176 block={block} u=8 strided=0"]
        t_off, b_off = single[f"C=50257 block={block} u=8 strided=0"]
        extra = (t_off - t_on * b_off / b_on) * rate
        print(f"  {block:5d} {extra / split:6.1f}")
    reads: dict[str, float] = {}
    curve = runs(record / "curve" / "curve-ncu.txt", reads)
    held = {(int(f["block"]), int(f["smem"])): int(f["blocks_per_sm"])  # the timed run's
            for f in (dict(kv.split("=", 1) for kv in line.split())
                      for line in (record / "curve" / "curve.txt").read_text().splitlines())}
    print("open sectors (strided against contiguous): block, blocks an SM, shared memory, "
          "bytes a sector beyond the DRAM bytes it moves more (those, in brackets), and the "
          "DRAM bytes read back per byte of an open sector (READ_BACK_BY_BLOCKS)")
    for key, (t_s, b_s) in curve.items():
        if not key.endswith("strided=1"):
            continue
        t_c, b_c = curve[key.replace("strided=1", "strided=0")]
        block = int(re.search(r"block=(\d+)", key).group(1))  # type: ignore[union-attr]
        smem = int(re.search(r"smem=(\d+)", key).group(1))  # type: ignore[union-attr]
        per_sm = held[(block, smem)]
        extra = (t_s - t_c) * rate - (b_s - b_c)
        back = (reads[key] - reads[key.replace("strided=1", "strided=0")]) / (32 * split)
        print(f"  {block:5d} {per_sm:3d} {smem:7d} {extra / split:6.1f} ({(b_s - b_c) / split:5.1f})"
              f" {back:5.3f}")


if __name__ == "__main__":
    main()
