"""What a tile loop's tile loads cost, from bench/ldsbar/tileload.sh's rows: per build and
source (nt=512: L2, nt=16384: DRAM), the clocks a block's tile takes beyond the same loop
with its barriers alone (SYNC=1), E = (t_3 - t_1) x the SM's warp k steps a tile / its
blocks, at the clock the run held (1,980 MHz). At one block an SM nothing hides the loads:
E is what a tile exposes, beside what the model's tiled-loop stall exposes before cover
(tune/model.py: DRAM_LATENCY_CLOCKS for a miss, L2_LATENCY_CLOCKS for a hit); at 2 and 4
it is what the other blocks did not hide, printed again below beside three ways of hiding a
one-block E among B blocks: in step (E / B: the blocks wait together, one E a round),
tune/queueing.py busy_share (the closed queue the model takes, item 36) and f^B (blocks that
drift independently, item 36's earlier form), with C a block's tile of compute at the
barriers-alone rate (a staggered build's rows, bench/ldsbar/stagger.sh, beside the E alone of
the same build without the stagger). Usage: python bench/ldsbar/exposure.py TILELOAD_TXT [STAGGER_TXT]"""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
from occupancy.tune.model import DRAM_LATENCY_CLOCKS, L2_LATENCY_CLOCKS  # noqa: E402
from occupancy.tune.queueing import busy_share  # noqa: E402

CLOCK_GHZ = 1.98
ROWS = 8  # k steps a tile (lds_bar.cu)


def main() -> None:
    rows = [dict(f.split("=", 1) for f in line.split() if "=" in f)
            for arg in sys.argv[1:] for line in Path(arg).read_text().splitlines()]
    rows = [r for r in rows if r.get("check") == "ok"]
    base = {(r["build"].replace("_s1_", "_s3_"), r["block"], r["warps_per_sm"]):
            float(r["ns_per_warp_iter_per_sm"]) for r in rows if r["sync"] == "1"}
    print(f"{'build':22} {'block':>5} {'blocks/SM':>9} {'source':>6} {'tile_KB':>7} "
          f"{'ns_step':>9} {'sync1_ns':>14} {'E_clocks':>8} {'model':>6}")
    found: list[tuple[str, int, str, float, float]] = []
    for r in rows:
        if r["sync"] != "3":
            continue
        key = (r["build"], r["block"], r["warps_per_sm"])
        if key not in base:
            continue
        warps_block = int(r["block"]) // 32
        blocks = int(r["warps_per_sm"]) // warps_block
        tm, tn = int(r["tm"]), int(r["tn"])
        tile_kb = ROWS * (tm + tn) * 32 * 4 / 1024
        t3, t1 = float(r["ns_per_warp_iter_per_sm"]), base[key]
        # per SM: the blocks' warps each do ROWS k steps a tile
        e = (t3 - t1) * int(r["warps_per_sm"]) * ROWS * CLOCK_GHZ / blocks
        source = "L2" if r["nt"] == "512" else "DRAM"
        model = L2_LATENCY_CLOCKS if source == "L2" else DRAM_LATENCY_CLOCKS
        print(f"{r['build']:22} {r['block']:>5} {blocks:>9} {source:>6} {tile_kb:>7.0f} "
              f"{t3:>9.2f} {t1:>14.2f} {e:>8.0f} {model:>6}")
        found.append((r["build"], blocks, source, e, t1 * warps_block * ROWS * CLOCK_GHZ))
    alone = {(b, src): e for b, n, src, e, _ in found if n == 1}
    print(f"\n{'build':22} {'blocks/SM':>9} {'source':>6} {'E alone':>7} {'E here':>7} "
          f"{'E / B':>6} {'queue':>6} {'f^B':>6}")
    for b, n, src, e, c in found:
        if n == 1 or (b.removesuffix("_st"), src) not in alone:
            continue
        e1 = alone[(b.removesuffix("_st"), src)]
        queue = (1 / busy_share(n, c, e1) - 1) * c
        f = e1 / (c + e1)
        drift = (1 / (1 - f ** n) - 1) * c
        print(f"{b:22} {n:>9} {src:>6} {e1:>7.0f} {e:>7.0f} {e1 / n:>6.0f} {queue:>6.0f} {drift:>6.0f}")


if __name__ == "__main__":
    main()
