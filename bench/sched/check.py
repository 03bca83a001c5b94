"""bench/sched/sim.py against this project's own microbenchmarks on the H200 (CPU only; a
probe, docs/model.md item 34): every row of bench/results/h200-lsu-overlap/lsu.txt
(lds_ffma.cu), h200-icache/icache.txt (unroll.cu) and h200-pipemix/pipemix.txt
(pipemix.cu), each variant compiled here (nvcc -O3 -arch=sm_90) and its hottest loop issued
by the simulated sub-partition with the row's warps. The SM's sub-partitions get its warps
as evenly as they go (6 warps: 2, 2, 1, 1); the busiest sets the time.

Prints per set the median and 90th percentile of |simulated / measured - 1| at the boost
clock (1.98 GHz; pipemix's FFMA-only loops ran at 1.963-1.967) and at the one clock that
fits the set best, then (-v) every row.
Usage: python bench/sched/check.py [-v]
"""

from __future__ import annotations

import re
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(Path(__file__).resolve().parent))
import sim  # noqa: E402

from occupancy.build.compilers import nvdisasm_path  # noqa: E402

BOOST_GHZ = 1.98
RES = ROOT / "bench" / "results"
_PIPEMIX = re.compile(r"ILi(\d+)ELi(\d+)ELi(\d+)ELi(\d+)E")


def disassemble(src: Path, defines: list[str]) -> dict[str, list[sim.Insn]]:
    """Every function's hottest loop, of `src` compiled for sm_90."""
    with tempfile.TemporaryDirectory() as tmp:
        cubin = Path(tmp) / "k.cubin"
        subprocess.run(["nvcc", "-O3", "-arch=sm_90", "-cubin", *defines, "-o", str(cubin),
                        str(src)], check=True, capture_output=True)
        sass = subprocess.run([nvdisasm_path() or "nvdisasm", "-c", "-hex", str(cubin)],
                              check=True, capture_output=True, text=True).stdout
    funcs, labels = sim.parse(sass)
    return {fn: sim.hottest_loop(insns, labels) for fn, insns in funcs.items()}


def sm_clocks(body: list[sim.Insn], warps_per_sm: int) -> float:
    """Clocks a warp-iteration per SM: the busiest of its 4 sub-partitions."""
    per = [warps_per_sm // 4 + (s < warps_per_sm % 4) for s in range(4)]
    return max(w * sim.simulate(body, w) for w in per if w) / warps_per_sm


def outer_rows() -> list[tuple[str, int, float, float]]:
    """(variant, warps an SM, simulated clocks a k step an SM, measured ns) of lds_ffma.cu
    and unroll.cu."""
    built: dict[tuple[str, ...], list[sim.Insn]] = {}
    out = []
    sets = ((RES / "h200-lsu-overlap/lsu.txt", ROOT / "bench/lsu/lds_ffma.cu"),
            (RES / "h200-icache/icache.txt", ROOT / "bench/icache/unroll.cu"))
    for record, src in sets:
        for line in record.read_text().splitlines():
            v = dict(f.split("=", 1) for f in line.split())
            if v.get("check") != "ok":
                continue
            defs = [f"-DTM={v['tm']}", f"-DTN={v['tn']}"]
            if "rolled" in v:
                name = f"lds_ffma {'rolled' if v['rolled'] == '1' else 'unroll 4'}"
                defs += ["-DROLLED"] if v["rolled"] == "1" else []
            else:
                name = f"unroll.cu unroll {v['unroll']}"
                defs += [f"-DUNROLL={v['unroll']}"]
            key = (str(src), *defs)
            if key not in built:
                built[key] = max(disassemble(src, defs).values(),
                                 key=lambda b: sum(i.base == "FFMA" for i in b))
            body = built[key]
            steps = sum(i.base == "FFMA" for i in body) / (int(v["tm"]) * int(v["tn"]))
            out.append((f"{name} {v['tm']}x{v['tn']}", int(v["warps_per_sm"]),
                        sm_clocks(body, int(v["warps_per_sm"])) / steps,
                        float(v["ns_per_warp_iter_per_sm"])))
    return out


def pipemix_rows() -> list[tuple[str, int, float, float]]:
    """(variant, warps a sub-partition, simulated clocks a warp-iteration of the SASS loop,
    measured ns) of pipemix.cu, as bench/pipemix/fit.py reads them."""
    bodies = {tuple(int(x) for x in m.groups()): b
              for fn, b in disassemble(ROOT / "bench/pipemix/pipemix.cu", []).items()
              if (m := _PIPEMIX.search(fn))}
    out = []
    for line in (RES / "h200-pipemix/pipemix.txt").read_text().splitlines():
        v = dict(f.split("=", 1) for f in line.split())
        key = (int(v["nf"]), int(v["na"]), int(v["ni"]), int(v["nl"]))
        body = bodies[key]
        nf, na, ni, _ = key
        count = {"FFMA": nf, "FMNMX": na, "IMAD": ni}
        op = next(k for k, c in count.items() if c)
        unroll = max(1, round(sum(i.base == op and ".MOV" not in i.op for i in body) / count[op]))
        per_scheduler = int(v["blocks"]) // int(v["sms"]) * int(v["threads"]) // 32 // 4
        ns = float(v["median_ms"]) * 1e6 / (int(v["iters"]) / unroll * per_scheduler)
        out.append((f"pipemix {key}", per_scheduler, sim.simulate(body, per_scheduler), ns))
    return out


def report(name: str, rows: list[tuple[str, int, float, float]], verbose: bool) -> None:
    best = statistics.median(c / ns for _, _, c, ns in rows)
    for label, ghz in (("boost 1.98 GHz", BOOST_GHZ), (f"best {best:.3f} GHz", best)):
        errs = sorted(abs(c / ghz / ns - 1) for _, _, c, ns in rows)
        print(f"{name}: {len(rows)} rows, at the {label}: median |error| "
              f"{statistics.median(errs):.1%}, 90th percentile {errs[int(0.9 * len(errs))]:.1%}")
    if verbose:
        for v, w, c, ns in rows:
            print(f"  {v:32s} warps {w:3d}  {c / BOOST_GHZ / ns - 1:+.1%}")


def main() -> None:
    verbose = "-v" in sys.argv
    report("lds_ffma.cu and unroll.cu (warps an SM)", outer_rows(), verbose)
    report("pipemix.cu (warps a sub-partition)", pipemix_rows(), verbose)


if __name__ == "__main__":
    main()
