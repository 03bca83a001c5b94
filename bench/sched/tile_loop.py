"""The whole tile loop of the corpus's SGEMMs issued by sim.py (a probe, docs/model.md item
34; CPU only). Per point of a committed record: the loop that holds the tile's global loads
and barriers, its nested FFMA loop laid out by its trips (the tile's FFMAs a thread, BK x BM
x BN / threads, less the outer loop's own), a global load's result at L2_LATENCY_CLOCKS (the
tiles are re-read from L2), a barrier among the block's warps on the sub-partition; the
busiest SM's blocks in rounds of its resident ones, their warps on its busiest sub-partition.

Prints per record the model's and the probe's rank of the measured fastest, the measured
time of their pick against the fastest, and their median |error| (the probe at the boost
clock, alone and as a floor under the model's time).

Needs the cubins the model built for the records (ptxsim's build cache, as
bench/corpus's re-prediction leaves it; the corpus sources are not committed, bench/CORPUS.md).
Usage: python bench/sched/tile_loop.py CACHE_DIR RECORD.json [...]
"""

from __future__ import annotations

import json
import re
import statistics
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(Path(__file__).resolve().parent))
import sim  # noqa: E402

from occupancy.build.compilers import nvdisasm_path  # noqa: E402
from occupancy.tune.model import L2_LATENCY_CLOCKS  # noqa: E402

SMS, BOOST_CLOCKS_PER_MS = 132, 1.98e6
_NAME = re.compile(rb"_Z\d+sgemm\w+")


def index(cache: Path) -> dict[str, Path]:
    """Every SGEMM instance's mangled name, to the cubin that holds it."""
    out: dict[str, Path] = {}
    for cubin in sorted(cache.glob("*.cubin")):
        for name in _NAME.findall(cubin.read_bytes()):
            out.setdefault(name.decode(), cubin)
    return out


def tile_trace(insns: list[sim.Insn], labels: dict[str, int], ffma_tile: int) -> list[sim.Insn]:
    """The tile loop's instructions of one tile, its nested FFMA loop repeated by its trips."""
    every = sim.loops(insns, labels)
    tiles = [b for b in every if any(i.base == "LDG" for i in b) and any(i.base == "BAR" for i in b)]
    if not tiles:
        return []
    outer = max(tiles, key=len)
    inner = [b for b in every if b is not outer and outer[0].addr <= b[0].addr
             and b[-1].addr <= outer[-1].addr]
    if not inner:
        return outer
    loop = max(inner, key=lambda b: sum(i.base == "FFMA" for i in b))
    own = sum(i.base == "FFMA" for i in loop)
    rest = sum(i.base == "FFMA" for i in outer) - own
    trips = max(1, round((ffma_tile - rest) / own)) if own else 1
    a, z = outer.index(loop[0]), outer.index(loop[-1])
    return outer[:a] + loop * trips + outer[z + 1:]


def clocks(point: dict, problem: dict, where: dict[str, Path], seen: dict) -> float | None:
    """The probe's clocks for one point, None where its cubin or tile loop is not found."""
    p = point["params"]
    m = re.match(r"(\w+)<([\d, ]+)>", point["function"])
    if not m:
        return None
    mangled = "I" + "".join(f"Li{int(v)}E" for v in m.group(2).split(",")) + "E"
    name = next((n for n in where if m.group(1) in n and mangled in n), None)
    if name is None:
        return None
    if where[name] not in seen:
        sass = subprocess.run([nvdisasm_path() or "nvdisasm", "-c", "-hex", str(where[name])],
                              check=True, capture_output=True, text=True).stdout
        seen[where[name]] = sim.parse(sass)
    funcs, labels = seen[where[name]]
    threads = p.get("NUM_THREADS") or p["BM"] * p["BN"] // (p.get("TM", 1) * p.get("TN", 1))
    body = tile_trace(funcs[name], labels, p["BK"] * p["BM"] * p["BN"] // threads)
    if not body:
        return None
    warps_per_block = -(-threads // 32)
    grid = problem["M"] // p["BM"] * (problem["N"] // p["BN"])
    per_sm = -(-grid // SMS)
    resident = min(point["predicted_active_blocks_per_sm"], per_sm)
    warps = -(-resident * warps_per_block // 4)
    per_warp = sim.simulate(body, warps, iters=4, block_warps=max(1, warps_per_block // 4))
    return -(-per_sm // resident) * problem["K"] // p["BK"] * warps * per_warp


def judge(meas: list[float], pred: list[float]) -> str:
    fast = min(range(len(meas)), key=meas.__getitem__)
    pick = min(range(len(pred)), key=pred.__getitem__)
    err = statistics.median(abs(x / m - 1) for m, x in zip(meas, pred, strict=True))
    rank = 1 + sum(x < pred[fast] for x in pred)
    return f"#{rank:<3d} pick {meas[pick] / meas[fast] - 1:+6.1%} err {err:5.1%}"


def main(argv: list[str]) -> None:
    sim.OTHER_LOAD_CLOCKS = L2_LATENCY_CLOCKS
    where, seen = index(Path(argv[0])), {}
    print(f"{'record':40s} {'model':28s} {'probe alone':28s} floor under the model")
    for path in argv[1:]:
        rec = json.loads(Path(path).read_text())
        rows = [(x["measured"]["median_ms"], x["predicted_ms"],
                 clocks(x, rec["problem"], where, seen))
                for x in rec["results"] if x.get("measured")]
        rows = [(m, p, c / BOOST_CLOCKS_PER_MS) for m, p, c in rows if c]
        meas = [r[0] for r in rows]
        print(f"{Path(path).stem:40s} {judge(meas, [r[1] for r in rows]):28s} "
              f"{judge(meas, [r[2] for r in rows]):28s} "
              f"{judge(meas, [max(r[1], r[2]) for r in rows])}  ({len(rows)} points)")


if __name__ == "__main__":
    main(sys.argv[1:])
