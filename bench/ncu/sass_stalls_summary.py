"""What bench/ncu/sass_stalls.sh's Nsight Compute run says, per point (CPU):

1. its issue rate, warps a scheduler, a warp's cycles per issued instruction split by stall
   reason (the per-instruction samples' shares of it), the L2 hit rate and the shared
   wavefronts with their bank conflicts;
2. which instructions hold the dispatch stalls (share of them against share of the
   instructions executed, by opcode);
3. the FFMAs split by the register-bank rule of bench/sched/sim.py (two banks, register
   number mod 2, a source the previous instruction left in the reuse cache not read): the
   dispatch samples an execution of the conflicted ones against the others';
4. the clocks a warp waits an issued instruction by the stall counts ptxas wrote in the
   control bits (weighted by Nsight's executions), against Nsight's "wait" and dispatch.
The cubin is the one the project builds for the point (compiled here, cached), aligned with
Nsight's rows by offset; its opcodes must match Nsight's at every row.

Usage: python bench/ncu/sass_stalls_summary.py DIR   (DIR: the unpacked record, P-sass.csv
and P-details.csv for each point of bench/ncu/sass_stalls.yaml)
"""

from __future__ import annotations

import csv
import functools
import io
import re
import subprocess
import sys
import tempfile
from collections import defaultdict
from dataclasses import replace
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench/sched"))
import sim  # noqa: E402

from occupancy import load_device  # noqa: E402
from occupancy.build.builds import build_cubin  # noqa: E402
from occupancy.build.compilers import nvdisasm_path  # noqa: E402
from occupancy.inputs.manifest.tuning import load_tuning  # noqa: E402
from occupancy.tune.spaces import points, rank  # noqa: E402

MANIFEST = ROOT / "bench/ncu/sass_stalls.yaml"
POINTS = ("sgemm1d_best", "vec_best", "own_sgemm", "own_best_8192", "own_one_block",
          "sgemm2d_c", "sgemm2d_d", "wt_fast", "wt_lead")
REASONS = ("dispatch", "wait", "short_sb", "long_sb", "barrier", "mio", "math", "not_selected",
           "selected")
_PRED = re.compile(r"^@!?U?P\w+\s+")


def source_rows(path: Path) -> list[dict[str, str]]:
    lines = path.read_text().splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith('"Address"'))
    return list(csv.DictReader(io.StringIO("\n".join(lines[start:]))))


def num(text: str | None) -> float:
    try:
        return float((text or "0").replace(",", ""))
    except ValueError:
        return 0.0


def opcode(row: dict[str, str]) -> str:
    return _PRED.sub("", row["Source"].strip()).split(" ")[0]


def details(d: Path, p: str) -> dict[str, float]:
    return {r["Metric Name"]: num(r["Metric Value"])
            for r in csv.DictReader((d / f"{p}-details.csv").open())}


def cycles_by_reason(det: dict[str, float], rows: list[dict[str, str]]) -> dict[str, float]:
    """A warp's cycles per issued instruction in each of REASONS: Nsight's cycles per issue
    split by the reasons' shares of the per-instruction samples."""
    every = sum(num(v) for x in rows for k, v in x.items()
                if k.startswith("stall_") and "Not Issued" not in k)
    cpi = det["Warp Cycles Per Issued Instruction"]
    return {r: cpi * sum(num(x.get(f"stall_{r}")) for x in rows) / every for r in REASONS}


def table(d: Path) -> None:
    print(f"{'point':14} {'IPC':>5} {'warps':>5} {'cycles/issue':>12} "
          + " ".join(f"{r:>8}" for r in REASONS) + "  L2 hit  shared wavefronts (conflicts)")
    for p in POINTS:
        det = details(d, p)
        by = cycles_by_reason(det, source_rows(d / f"{p}-sass.csv"))
        print(f"{p:14} {det['smsp__issue_active.avg.per_cycle_active']:5.2f} "
              f"{det['smsp__warps_active.avg.per_cycle_active']:5.2f} "
              f"{det['Warp Cycles Per Issued Instruction']:12.2f} "
              + " ".join(f"{by[r]:8.2f}" for r in REASONS)
              + f"  {det['lts__t_sector_hit_rate.pct']:5.1f}%"
              f"  {det['l1tex__data_pipe_lsu_wavefronts_mem_shared.sum'] / 1e6:7.1f} M"
              f" ({det['l1tex__data_bank_conflicts_pipe_lsu_mem_shared.sum'] / 1e6:.1f} M)")


def dispatch_by_opcode(d: Path) -> None:
    for p in POINTS:
        rows = source_rows(d / f"{p}-sass.csv")
        stall: dict[str, float] = defaultdict(float)
        ran: dict[str, float] = defaultdict(float)
        for r in rows:
            base = opcode(r).split(".")[0]
            stall[base] += num(r.get("stall_dispatch"))
            ran[base] += num(r.get("Instructions Executed"))
        s, n = sum(stall.values()), sum(ran.values())
        top = sorted(stall, key=lambda b: -stall[b])[:5]
        print(f"{p:14} " + ", ".join(f"{b} {stall[b] / s:.2f} ({ran[b] / n:.2f})" for b in top))


@functools.cache
def sass_of(point: str) -> tuple[list[sim.Insn], str]:
    """The point's instructions (one kernel in its cubin) with their control fields (built
    and read once: sections 3 and 4 both align them)."""
    spec = load_tuning(MANIFEST, point)
    r = rank(spec, load_device("h200"), points(spec)[0]).ranked[0]
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "k.cubin"
        path.write_bytes(build_cubin(r.build))
        out = subprocess.run([nvdisasm_path() or "nvdisasm", "-c", "-hex", str(path)],
                             capture_output=True, text=True, check=True).stdout
    funcs, _ = sim.parse(out)
    (name, insns), = funcs.items()
    return insns, name


def aligned(d: Path, p: str) -> list[tuple[sim.Insn, sim.Insn, dict[str, str]]]:
    """Each Nsight row of the point with its instruction in the cubin built here and the
    instruction before it (the first: itself, reusing nothing)."""
    insns, _ = sass_of(p)
    at = {i.addr: k for k, i in enumerate(insns)}
    rows = source_rows(d / f"{p}-sass.csv")
    first = int(rows[0]["Address"], 16)
    out = []
    for r in rows:
        k = at.get(int(r["Address"], 16) - first)
        if k is None or insns[k].op != opcode(r):
            raise ValueError(f"{p}: the cubin built here is not the one Nsight ran "
                             f"(at {r['Address']}: {r['Source'].strip()!r})")
        i = insns[k]
        out.append((i, insns[k - 1] if k else replace(i, reuse=0), r))
    return out


def banks(d: Path) -> None:
    for p in POINTS:
        split: dict[int, list[float]] = defaultdict(lambda: [0.0, 0.0, 0.0])
        for i, prev, r in aligned(d, p):
            if i.base != "FFMA":
                continue
            s = split[min(sim.bank_stalls(prev, i), 1)]
            s[0] += num(r.get("stall_dispatch"))
            s[1] += num(r.get("Instructions Executed"))
            s[2] += 1
        rate = sum(s[0] for s in split.values()) / sum(s[1] for s in split.values())
        print(f"{p:14} " + "; ".join(
            f"{'conflicted' if b else 'clear'}: {int(s[2])} FFMAs, dispatch an execution "
            f"x{s[0] / s[1] / rate:.2f} the FFMAs'" for b, s in sorted(split.items())))


def fixed_waits(d: Path) -> None:
    """The control bits' stall counts (a warp may not issue again for that many cycles; 1 is
    the next cycle) over the instructions as Nsight counted their executions: the clocks a
    warp waits an issued instruction by them, against Nsight's "wait" (its fixed-latency
    dependencies) and its dispatch stall."""
    print(f"{'point':14} {'control bits':>12} {'Nsight wait':>11} {'dispatch':>8}")
    for p in POINTS:
        rows = aligned(d, p)
        ran = sum(num(r.get("Instructions Executed")) for _, _, r in rows)
        bits = sum(num(r.get("Instructions Executed")) * (max(i.stall, 1) - 1)
                   for i, _, r in rows) / ran
        by = cycles_by_reason(details(d, p), [r for _, _, r in rows])
        print(f"{p:14} {bits:12.2f} {by['wait']:11.2f} {by['dispatch']:8.2f}")


def main(d: Path) -> None:
    print("1. Per point: a warp's cycles per issued instruction by stall reason")
    table(d)
    print("\n2. Dispatch stalls by opcode: share of them (share of the instructions executed)")
    dispatch_by_opcode(d)
    print("\n3. FFMAs by bench/sched/sim.py's register-bank rule")
    banks(d)
    print("\n4. Clocks a warp waits an issued instruction by the control bits' stall counts")
    fixed_waits(d)


if __name__ == "__main__":
    if len(sys.argv) != 2:
        print("Error: usage: python bench/ncu/sass_stalls_summary.py DIR (the unpacked "
              "ncu-csv.tar.gz of bench/results/h200-sass-stalls)", file=sys.stderr)
        sys.exit(2)
    try:
        main(Path(sys.argv[1]))
    except (OSError, KeyError, StopIteration, ValueError, ZeroDivisionError,
            subprocess.CalledProcessError) as e:
        print(f"Error: {sys.argv[1]}: {type(e).__name__}: {e} (a file or metric of the "
              "record is missing or unreadable; see the module's docstring)", file=sys.stderr)
        sys.exit(2)
