"""Reads bench/results/h200-rbank (bench/rbank/ncu.sh's two runs and the SASS of the same
builds, with the `.reuse` flags Nsight's source page leaves out) and prints, per profiled
launch: the issue rate, warps a scheduler and dispatch stall an issue (Nsight's); the
register-bank conflicts a per-instruction rule counts in the hottest loop (two banks,
register number mod 2, one read a bank a clock, the reuse cache serving a source the
instruction before marked `.reuse` in the same slot); and, per FFMA of that loop, whether the
instructions such a rule marks (banks 2, 4 or 8) are the ones PC sampling finds waiting at
dispatch (a wait of about a clock each time: dispatch samples over selected samples > 0.6).
Usage: python bench/rbank/analyse.py [RECORD_DIR]"""

from __future__ import annotations

import csv
import io
import re
import sys
import tarfile
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
from occupancy.build.sass_loops import source_register  # noqa: E402
INSN = re.compile(r"^\s*/\*[0-9a-f]+\*/\s+(.*?)\s*;")
OP = re.compile(r"^(@!?U?P\w+\s+)?([A-Z][A-Z0-9_]*)(\.[A-Z0-9_.]+)?\s*(.*)$")
BANKED = {"FFMA", "FADD", "FMUL", "IMAD", "IADD3", "LOP3", "ISETP", "FSETP", "FSEL", "SEL",
          "SHF", "LEA"}


def members(tgz: Path) -> dict[str, str]:
    with tarfile.open(tgz) as t:
        return {Path(m.name).name: t.extractfile(m).read().decode()  # type: ignore[union-attr]
                for m in t.getmembers() if m.isfile()}


def table(text: str) -> list[dict[str, str]]:
    rows = list(csv.reader(io.StringIO(text)))
    head = next(i for i, r in enumerate(rows) if r and r[0] in ("Address", "ID"))
    return [dict(zip(rows[head], r)) for r in rows[head + 1:] if len(r) == len(rows[head])]


def num(x: str) -> float:
    try:
        return float(x)
    except ValueError:
        return 0.0


def hot_loop(src_csv: str, sass: str) -> list[dict]:
    """The instructions executed at least half as often as the most executed one, with
    the SASS text (the same build: checked instruction by instruction, branch targets aside)."""
    rows = table(src_csv)
    text = [m.group(1) for m in map(INSN.match, sass.splitlines()) if m]
    assert len(rows) == len(text), "the SASS is not the profiled build's"
    out = []
    for r, t in zip(rows, text):
        if "`" not in t and r["Source"].split() != t.replace(".reuse", "").split():
            raise SystemExit(f"Error: the SASS differs from the profiled build at {t!r}")
        m = OP.match(t)
        ops = [o.strip() for o in m.group(4).split(",")] if m and m.group(4) else []
        srcs = [source_register(o) for o in ops[1:]]
        out.append(dict(op=m.group(2) if m else "", srcs=srcs, ex=num(r["Instructions Executed"]),
                        disp=num(r["stall_dispatch"]), sel=num(r["stall_selected"])))
    most = max(i["ex"] for i in out)
    return [i for i in out if i["ex"] >= 0.5 * most]


def bank_reads(hot: list[dict]) -> list[list[int] | None]:
    """The source registers each instruction reads from the banks (None: not banked)."""
    out: list[list[int] | None] = []
    prev = None
    for i in hot:
        if i["op"] not in BANKED:
            if not i["op"].startswith(("LD", "ST", "BAR")):
                prev = None
            out.append(None)
            continue
        out.append([s[0] for k, s in enumerate(i["srcs"]) if s is not None and not (
            prev is not None and k < len(prev) and prev[k] == (s[0], True))])
        prev = i["srcs"]
    return out


def main() -> None:
    rec = Path(sys.argv[1]) if len(sys.argv) > 1 else ROOT / "bench/results/h200-rbank"
    sass = members(rec / "sass.tgz")
    print("launch                          issue/clk  warps/sched  dispatch/issue  "
          "mod-2 conflicts/insn  FFMAs waiting at dispatch when a rule marks / does not mark them")
    for run in ("run1.tgz", "run2.tgz", "run3.tgz"):
        files = members(rec / run)
        for name in sorted(f[:-8] for f in files if f.endswith("-src.csv")):
            raw = table(files[f"{name}-raw.csv"])[-1]
            kernel = re.sub(r"-\d+-\d+$", "", name)
            hot = hot_loop(files[f"{name}-src.csv"], sass[f"{kernel}.sass"])
            reads = bank_reads(hot)
            h2 = sum(max(Counter(r % 2 for r in rd).values()) - 1 for rd in reads if rd)
            marks = []
            for banks in (2, 4, 8):
                c: Counter = Counter()
                for i, rd in zip(hot, reads):
                    if i["op"] == "FFMA" and i["sel"] >= 20 and rd is not None:
                        marked = max(Counter(r % banks for r in rd).values(), default=0) >= 2
                        c[marked, i["disp"] / i["sel"] > 0.6] += 1
                share = [c[m, True] / max(1, c[m, True] + c[m, False]) for m in (True, False)]
                marks.append(f"{banks} banks {share[0]:.2f} / {share[1]:.2f}")
            print(f"{name:32s}{num(raw['smsp__issue_active.avg.per_cycle_active']):9.2f}"
                  f"{num(raw['smsp__warps_active.avg.per_cycle_active']):13.2f}"
                  f"{num(raw['smsp__average_warps_issue_stalled_dispatch_stall_per_issue_active.ratio']):16.2f}"
                  f"{h2 / len(hot):22.2f}   " + ", ".join(marks))
    control_bits(rec, sass, members(rec / "run3.tgz"))


def control_bits(rec: Path, sass: dict[str, str], run3: dict[str, str]) -> None:
    """point-1's FFMAs by their control bits (stall clocks, yield): the scheduling hints
    ptxas writes into each instruction (the second 64-bit word's bits 41-45)."""
    lines = sass["point-1.hex.sass"].splitlines()
    ctrl = [int(re.search(r"0x[0-9a-f]+", lines[j + 1]).group(0), 16) >> 41  # type: ignore[union-attr]
            for j, line in enumerate(lines) if INSN.match(line)]
    hot_rows = table(run3["point-1-src.csv"])
    most = max(num(r["Instructions Executed"]) for r in hot_rows)
    by: dict[tuple[int, int], list[float]] = {}
    for r, c in zip(hot_rows, ctrl):
        if num(r["Instructions Executed"]) >= 0.5 * most and r["Source"].split()[0] == "FFMA":
            v = by.setdefault((c & 15, (c >> 4) & 1), [0.0, 0.0, 0.0])
            v[0] += 1
            v[1] += num(r["stall_dispatch"])
            v[2] += num(r["stall_selected"])
    print("point-1's loop FFMAs by control bits: " + ", ".join(
        f"stall {k[0]} yield {k[1]}: {int(v[0])} FFMAs, dispatch/selected {v[1] / max(v[2], 1):.2f}"
        for k, v in sorted(by.items())))


if __name__ == "__main__":
    main()
