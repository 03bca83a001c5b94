"""Which form ptxas gave each rolled k loop of bench/lsu/lds_ffma.cu's records, beside what
the loop lost against its unrolled build (docs/model.md items 45-46; CPU only, needs nvcc
and nvdisasm). Each rolled row of the records given is rebuilt from its fields with the
committed lds_ffma.cu (which builds the SASS each record ran: item 43); the innermost loop
with FFMAs is read for the shared loads' addresses: `top` where every LDS reads address
registers that no instruction of the step wrote before it (pointers stepped at the end of
the last step), else `chainN`, N the longest run of dependent instructions in the step
that computes an address (from the k counter, uniform registers included). Then each
rolled row beside its unrolled twin (every other field equal, warps an SM included: a
launch whose two builds reach different occupancies pairs with nothing): the rolled row's
ns per warp step over the unrolled one's.

The records before bench/results/h200-lsu-form varied one flag at a time, and ptxas chose
the form by them (with SYNC = 32 and 128 a chain, with 4-16 mostly the top form): groups
are kept apart by every build flag, SYNC included, so that a comparison of forms is one
with the rest held.

Usage: python bench/lsu/loop_forms.py RECORD.txt...   (bench/results/h200-lsu-*/lsu_*.txt)"""

from __future__ import annotations

import hashlib
import re
import statistics
import subprocess
import sys
import tempfile
from collections import defaultdict
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench" / "sched"))
import sim  # noqa: E402  (bench/sched/sim.py: the SASS with its control fields)

from occupancy.build.compilers import nvdisasm_path  # noqa: E402

SRC = ROOT / "bench" / "lsu" / "lds_ffma.cu"
_REG = re.compile(r"\bU?R\d+\b")
_FLAGS = ("refill", "half", "plain", "hoist", "btile", "pattern", "dot")
NOT_KEY = ("median_ms", "ns_per_warp_iter_per_sm", "check", "rolled")  # a pair's own fields
_NO_WRITE = ("ST", "BAR", "BRA", "RED", "ATOM", "EXIT", "NOP")  # no register destination


def flags(row: dict[str, str]) -> tuple[str, ...]:
    """The nvcc defines a row's build had, from its fields (a field a record lacks: off)."""
    on = lambda k: row.get(k, "0") not in ("0", "")  # noqa: E731
    out = [f"-DTM={row['tm']}", f"-DTN={row['tn']}"]
    out += ["-DROLLED"] * on("rolled") + [f"-DSYNC={row['sync']}"] * on("sync")
    out += [f"-D{k.upper()}" for k in _FLAGS if on(k)] + ["-DBATCH=256"] * on("batch")
    out += {"1": ["-DPTR"], "2": ["-DCHAIN"]}.get(row.get("form", "0"), [])
    return tuple(out)


def compile_cubin(defines: tuple[str, ...], tmp: str) -> Path:
    """lds_ffma.cu built with these defines for sm_90, under `tmp`."""
    cubin = Path(tmp) / (hashlib.md5(" ".join(defines).encode()).hexdigest() + ".cubin")
    subprocess.run(["nvcc", "-O3", "-arch=sm_90", "-cubin", *defines, "-o", str(cubin), str(SRC)],
                   check=True, capture_output=True)
    return cubin


def innermost_body(cubin: Path) -> list[sim.Insn]:
    """The cubin's innermost loop with FFMAs (its shortest over its functions; [] if none)."""
    sass = subprocess.run([nvdisasm_path() or "nvdisasm", "-c", "-hex", str(cubin)], check=True,
                          capture_output=True, text=True).stdout
    funcs, labels = sim.parse(sass)
    return min((sim.innermost_ffma_loop(insns, labels) for insns in funcs.values()),
               key=lambda b: len(b) or sys.maxsize, default=[])


def form_of(body: list[sim.Insn]) -> str:
    """`top` or `chainN` for one k loop's instructions (see the module's text); `none`
    for no loop."""
    if not body:
        return "none"
    depth: dict[str, int] = {}  # register -> dependent instructions of this step behind it
    longest = 0
    for ins in body:
        text = re.sub(r"^@!?U?P\w+\s+", "", ins.text)
        operands = text[len(ins.op):].split(",")
        if ins.base.startswith(_NO_WRITE):
            continue
        if ins.base in ("LDS", "LDSM"):
            longest = max([longest] + [depth.get(r, 0) for r in _REG.findall(text[text.find("["):])])
            depth.update(dict.fromkeys(_REG.findall(operands[0]), 0))  # a load's result: no chain
        elif ins.base == "FFMA":
            depth.update(dict.fromkeys(_REG.findall(operands[0]), 0))
        else:
            d = max([depth.get(r, 0) for r in _REG.findall(",".join(operands[1:]))], default=0)
            depth.update(dict.fromkeys(_REG.findall(operands[0]), d + 1))
    return "top" if longest == 0 else f"chain{longest}"


def loop_form(defines: tuple[str, ...], tmp: str) -> tuple[str, int]:
    """(form_of, its instructions a step) for the innermost FFMA loop of one build."""
    body = innermost_body(compile_cubin(defines, tmp))
    return form_of(body), len(body)


def main(paths: list[str]) -> None:
    rows = []
    for p in paths:
        for line in Path(p).read_text().splitlines():
            row = dict(kv.split("=", 1) for kv in line.split() if "=" in kv)
            row["record"] = Path(p).name
            rows.append(row)
    builds = sorted({flags(r) for r in rows if r.get("rolled") == "1"})
    with tempfile.TemporaryDirectory() as tmp, ThreadPoolExecutor(2) as pool:
        forms = dict(zip(builds, pool.map(lambda d: loop_form(d, tmp), builds), strict=True))
    twins: dict[tuple[tuple[str, str], ...], dict[str, dict[str, str]]] = defaultdict(dict)
    for r in rows:
        twins[tuple(sorted((k, v) for k, v in r.items() if k not in NOT_KEY))][r["rolled"]] = r
    groups: dict[tuple[str, ...], list[float]] = defaultdict(list)
    steps: dict[tuple[str, ...], list[int]] = defaultdict(list)
    unpaired = sum(len(p) for p in twins.values() if len(p) < 2)
    print(f"{'record':16} {'rolled loop':11} {'tiles':7} {'tm x tn':7} {'sync':>4} "
          f"{'warps':>5} {'waves':>5} rolled / unrolled")
    for pair in twins.values():
        if "0" not in pair or "1" not in pair:
            continue
        r, u = pair["1"], pair["0"]
        ratio = float(r["ns_per_warp_iter_per_sm"]) / float(u["ns_per_warp_iter_per_sm"])
        tiles = ("batch" if r.get("batch") == "1" else "spread") if r.get("refill") == "1" else "none"
        form, step = forms[flags(r)]
        print(f"{r['record']:16} {form:11} {tiles:7} {r['tm'] + 'x' + r['tn']:7} "
              f"{r.get('sync', '0'):>4} {r['warps_per_sm']:>5} {r.get('waves', '4'):>5} {ratio:.3f}")
        # every build flag but ROLLED and the form's own (-DPTR / -DCHAIN) apart
        rest = " ".join(f for f in flags(r) if f not in ("-DROLLED", "-DPTR", "-DCHAIN"))
        key = (form if form in ("top", "none") else "chain", r["warps_per_sm"], rest)
        groups[key].append(ratio)
        steps[key].append(step)
    print(f"\n{sum(len(v) for v in groups.values())} pairs; {unpaired} rows without a twin "
          "(their two builds reach different warps an SM, or one of them was not run)")
    print("\nby form, warps an SM and the build's other flags: pairs, median [min, max]")
    for k in sorted(groups, key=lambda k: (k[2], int(k[1]), k[0])):
        v = groups[k]
        print(f"  {k[0]:5} {k[1]:>3} warps  {k[2]:62}: {len(v):3} "
              f"{statistics.median(v):.3f} [{min(v):.3f}, {max(v):.3f}]")
    # What a chain costs a step beyond the top form where both ran with every other flag
    # and the warps the same: the chain pairs' median loss over the top pairs', times the
    # chain builds' instructions a step (issue clocks; docs/model.md item 46, not kept)
    clocks = []
    print("\na chain's clocks a step beyond the top form, every other flag the same "
          "(chain / top, x its step)")
    for k in sorted(groups, key=lambda k: (k[2], int(k[1]))):
        top = ("top", *k[1:])
        if k[0] != "chain" or top not in groups:
            continue
        excess = statistics.median(groups[k]) / statistics.median(groups[top]) - 1
        step = statistics.median(steps[k])
        clocks.append(excess * step)
        print(f"  {k[1]:>3} warps  {k[2]:62}: {excess:+.1%} x {step:.0f} = {clocks[-1]:.1f}")
    if clocks:
        print(f"  median over {len(clocks)} groups: {statistics.median(clocks):.1f} clocks a step")
    else:
        print("  no group has both forms")


if __name__ == "__main__":
    main(sys.argv[1:])
