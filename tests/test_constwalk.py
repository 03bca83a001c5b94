"""A loop that walks a __constant__ table (occupancy/tune/constwalk.py, docs/model.md items
29-30):
what the SASS reader counts (`uldc`, `ldc3`, the module's `cbank3`), when the slow regime is
priced, and the rule checked against every row of the H200 microbenchmarks it comes from
(bench/results/h200-cwalk-gap/fit.txt, written by bench/cwalk/fit.py)."""

from __future__ import annotations

import re
import statistics
from pathlib import Path

import pytest

from occupancy import load_device
from occupancy.build.sass_loops import COUNTED_KEYS, sass_loop_mix
from occupancy.core.solver import solve
from occupancy.tune import constwalk
from occupancy.tune.constwalk import (
    PRICED_BLOCKS,
    PRICED_WARPS,
    ULDC_MISS_CLOCKS,
    constant_walk_seconds,
    walks_slow,
)
from occupancy.tune.model import LAUNCH_OVERHEAD_MS, predict_work
from tests.needs import need, need_nvcc

FIT = Path(__file__).resolve().parent.parent / "bench" / "results" / "h200-cwalk-gap" / "fit.txt"
H200 = load_device("h200")


def walk(**kw: int) -> dict[str, int]:
    """A pnpoly-like loop: 4 ULDC and 5 register-indexed LDC among 80 instructions."""
    mix = dict.fromkeys(COUNTED_KEYS, 0)
    mix.update(total=80, ffma=8, fp32=16, alu=30, imad=8, uldc=4, ldc3=5, cbank3=7200, loop=1)
    mix.update(kw)
    return mix


def test_the_reader_counts_indexed_constant_reads_only() -> None:
    """`LDC.64 R6, c[0x3][R6]` is a walk (a register index); an immediate offset, RZ, and
    the parameters' bank 0 are not."""
    sass = """
.text._Z1kPfS_j:
        /*0000*/                   LDC R1, c[0x0][0x28] ;
.L_x_1:
        /*0010*/                   LDC.64 R6, c[0x3][R6] ;
        /*0020*/                   LDC.64 R8, c[0x3][R8+0x8] ;
        /*0030*/                   LDC R2, c[0x3][0x10] ;
        /*0040*/                   LDC R3, c[0x3][RZ] ;
        /*0050*/                   LDC R4, c[0x0][R5] ;
        /*0060*/                   ULDC UR8, c[0x3][UR5] ;
        /*0070*/                   FFMA R21, R21, UR8, R6 ;
        /*0080*/               @P0 BRA `(.L_x_1) ;
        /*0090*/                   EXIT ;
"""
    mix = dict(sass_loop_mix(sass)["_Z1kPfS_j"])
    assert (mix["ldc3"], mix["uldc"], mix["total"]) == (2, 1, 8)


def test_each_condition_of_the_slow_regime() -> None:
    assert walks_slow(H200, walk(), PRICED_BLOCKS, PRICED_WARPS)
    assert not walks_slow(H200, walk(), PRICED_BLOCKS - 1, 64)  # 8: bistable, not priced
    # blocks of 64 went slow only in part at 9-12 an SM (18-24 warps), mostly at 16 (32)
    assert not walks_slow(H200, walk(), 12, 24)
    assert walks_slow(H200, walk(), 16, 32)
    assert not walks_slow(H200, walk(cbank3=256), 32, 64)  # 256 B or less stayed fast
    assert walks_slow(H200, walk(cbank3=257), 32, 64)
    assert not walks_slow(H200, walk(uldc=0), 32, 64)  # LDC alone never went slow
    # ULDC alone: slow only with little issue between its reads (80 x pipes / 4 / uldc)
    alone = walk(ldc3=0, uldc=1)
    assert constwalk.uldc_issue_clocks(H200, alone) == 20.0
    assert not walks_slow(H200, alone, 32, 64)
    assert constwalk.uldc_issue_clocks(H200, walk(ldc3=0)) == 5.0
    assert walks_slow(H200, walk(ldc3=0), 32, 64)
    assert walks_slow(H200, walk(uldc=1), 32, 64)  # beside LDC reads, whatever the issue
    # the busiest pipe counts: 80 instructions, 60 of them compares (120 ALU clocks)
    assert constwalk.uldc_issue_clocks(H200, walk(ldc3=0, alu=60)) == 7.5
    # compute capability 7.5-9.x only (ULDC from Turing; Blackwell reads through LDCU)
    from dataclasses import replace
    for cc, priced in (("7.0", False), ("7.5", True), ("8.0", True), ("9.0", True),
                       ("10.0", False), ("12.0", False), ("x", False)):
        assert walks_slow(replace(H200, compute_capability=cc), walk(), 32, 64) is priced, cc


def test_the_issue_threshold_of_a_uldc_only_loop_and_straight_line_code() -> None:
    """ULDC_ALONE_CLOCKS (10) sits between what ran slow (6.1 issue clocks between reads) and
    what did not (12.1): 9.9 is priced, 10.0 is not. Code without a loop was not measured."""
    def alone(total: int) -> dict[str, int]:  # 4 ULDC, no compares: the pipes add nothing
        return walk(ldc3=0, total=total, alu=0, imad=0, fp32=0)
    assert constwalk.uldc_issue_clocks(H200, alone(158)) == pytest.approx(9.875)
    assert walks_slow(H200, alone(158), 32, 64)
    assert constwalk.uldc_issue_clocks(H200, alone(160)) == 10.0
    assert not walks_slow(H200, alone(160), 32, 64)
    assert not walks_slow(H200, walk(loop=0), 32, 64)


def test_unpriced_walks_are_named() -> None:
    """`tile` names a walk the model did not price where such loops ran slow: 8 blocks, or
    9+ holding fewer than 32 warps, a table of 8 KB or more at any count, or the priced
    blocks and warps with no trip count (no FFMA)."""
    from occupancy.tune.constwalk import unpriced_walk
    assert not unpriced_walk(H200, walk(), 32, priced=True)
    assert unpriced_walk(H200, walk(), 32, priced=False)  # slow by the rule, not priced
    assert not unpriced_walk(H200, walk(ldc3=0, uldc=1), 32, priced=False)  # ran fast
    assert unpriced_walk(H200, walk(), 8, priced=False)
    assert not unpriced_walk(H200, walk(), 7, priced=False)
    assert unpriced_walk(H200, walk(cbank3=8192), 2, priced=False)
    assert not unpriced_walk(H200, walk(cbank3=256), 8, priced=False)
    assert not unpriced_walk(H200, walk(uldc=0), 8, priced=False)
    # only loops of the form that went slow: a ULDC-only loop with 10+ issue clocks between
    # reads ran near its issue count at 8 blocks and with large tables too; straight-line
    # code was not measured
    fast_form = walk(ldc3=0, uldc=1)
    assert not unpriced_walk(H200, fast_form, 8, priced=False)
    assert not unpriced_walk(H200, {**fast_form, "cbank3": 16384}, 4, priced=False)
    assert not unpriced_walk(H200, walk(loop=0), 8, priced=False)
    assert not unpriced_walk(H200, walk(loop=0, cbank3=16384), 4, priced=False)


def test_a_walk_without_ffma_is_named_not_priced() -> None:
    """Without FFMAs the declared FLOPs give no trip count: no floor, and `tile` names it."""
    from occupancy.build.resources import KernelResources
    from occupancy.tune.ranked import Point, Ranked, findings
    mix = tuple(walk(ffma=0, fp32=0).items())
    occ = solve(H200, 64, 26)
    pred = predict_work(H200, occ, 4096, 2e9, 1e6, 26, loop_mix=mix)
    assert pred.roofs_ms["constant"] == 0.0
    res = KernelResources("k", 26, 0, 1, 0, 0, 0, None, "fake", loop_mix=mix)
    r = Ranked(Point({"B": 64}, "k", (), (64,), (4096,), 0), res, occ, pred, ())
    assert len(findings([r], H200)) == 1


def test_the_floor_is_the_reads_at_the_miss_rate() -> None:
    runs = 1e6
    want = runs * 4 * ULDC_MISS_CLOCKS / (H200.sm_count * H200.boost_clock_mhz * 1e6)
    assert constant_walk_seconds(H200, walk(), runs, 32, 64) == pytest.approx(want)
    assert constant_walk_seconds(H200, walk(), runs, 9, 36) == pytest.approx(want)
    assert constant_walk_seconds(H200, walk(), runs, 8, 64) == 0.0
    assert constant_walk_seconds(H200, walk(), runs, 12, 24) == 0.0
    assert constant_walk_seconds(H200, walk(), 0.0, 32, 64) == 0.0
    # `slow`: the floor wherever the loop has the slow form (a named walk's upper range)
    assert constant_walk_seconds(H200, walk(), runs, 8, 64, slow=True) == pytest.approx(want)
    assert constant_walk_seconds(H200, walk(), runs, 2, 4, slow=True) == pytest.approx(want)
    assert constant_walk_seconds(H200, walk(cbank3=256), runs, 8, 64, slow=True) == 0.0
    assert constant_walk_seconds(H200, walk(uldc=0), runs, 8, 64, slow=True) == 0.0


def test_the_slow_floor_is_an_sm_s_whatever_the_grid() -> None:
    """The floor forced (`slow_walk`) on grids under one block an SM: each busy SM reads the
    same, so the floor is the same at 33, 66 and 132 blocks of the same work, and a thin
    second round is no cheaper than one round of what it adds."""
    mix = tuple(walk(cbank3=16384).items())
    occ = solve(H200, 256, 26)
    floors = [predict_work(H200, occ, g, 2 * 600 * 256 * g, 12 * 256 * g, 26, loop_mix=mix,
                           slow_walk=True).roofs_ms["constant"] for g in (33, 66, 132)]
    assert floors[0] > 0 and floors == pytest.approx([floors[0]] * 3, rel=1e-9)
    slots = occ.active_blocks_per_sm * H200.sm_count
    times = [predict_work(H200, occ, g, 2 * 600 * 256 * g, 12 * 256 * g, 26, loop_mix=mix,
                          slow_walk=True).predicted_ms for g in (slots, slots + 1)]
    assert times[1] >= times[0]


def test_the_range_reaches_the_floor_only_where_the_doubt_is_named() -> None:
    """`tile --json`'s predicted_range_ms: a point the doubt names (8 blocks of 256 an SM)
    reaches the slow floor; the same loop at 2 blocks of 1024, whose forced floor is as far
    above its prediction but which the rule does not name, keeps the plain band."""
    from dataclasses import replace

    from occupancy.build.resources import KernelResources
    from occupancy.output.serialize import candidate_dict
    from occupancy.tune.model import BAND_RATIO
    from occupancy.tune.ranked import Point, Ranked

    mix = tuple(walk().items())
    grid = 64 * H200.sm_count

    def point(block: int) -> tuple[dict[str, object], float]:
        occ = solve(H200, block, 26)
        args = (H200, occ, grid, 2.0 * 600 * block * grid, 12.0 * block * grid, 26)
        pred = predict_work(*args, loop_mix=mix)
        slow = predict_work(*args, loop_mix=mix, slow_walk=True).predicted_ms
        res = KernelResources("k", 26, 0, 1, 0, 0, 0, None, "fake", loop_mix=mix)
        r = Ranked(Point({"B": block}, "k", (), (block,), (grid,), 0), res, occ,
                   replace(pred, slow_walk_ms=slow), ())
        return candidate_dict(r, H200), slow

    (named, slow), (plain, plain_slow) = point(256), point(1024)
    assert named["active_blocks_per_sm"] == 8 and plain["active_blocks_per_sm"] == 2
    assert named["doubts"] == ["walked constant table"] and plain["doubts"] == []
    p, q = named["predicted_ms"], plain["predicted_ms"]
    assert isinstance(p, float) and isinstance(q, float)
    assert slow > 2 * p and plain_slow > 2 * q
    assert named["predicted_range_ms"] == pytest.approx([p / BAND_RATIO, slow * BAND_RATIO])
    assert plain["predicted_range_ms"] == pytest.approx([q / BAND_RATIO, q * BAND_RATIO])


def test_predict_work_puts_the_floor_under_the_issue_side() -> None:
    """At 32 blocks of 64 an SM the walk binds (`constant`); held to 4 blocks by shared
    memory the same loop is at its issue count."""
    flops = 2 * 600 * 2_000_000
    many = solve(H200, 64, 26)
    few = solve(H200, 64, 26, dynamic_shared_memory=50_000)
    assert many.active_blocks_per_sm == 32 and few.active_blocks_per_sm == 4
    grid = 2_000_000 // 128
    mix = tuple(walk().items())
    slow = predict_work(H200, many, grid, flops, 12 * 2_000_000, 26, loop_mix=mix)
    fast = predict_work(H200, few, grid, flops, 12 * 2_000_000, 26, loop_mix=mix)
    assert slow.bound == "constant" and fast.bound != "constant"
    assert fast.roofs_ms["constant"] == 0.0
    assert slow.predicted_ms > 2 * fast.predicted_ms
    # the floor is the whole time, less the launch, over the tail (15,625 blocks on 132 SMs:
    # 0.5%); the memory side adds OVERLAP x its share squared (1e-5 here)
    assert slow.predicted_ms == pytest.approx(slow.roofs_ms["constant"] / slow.wave_efficiency
                                              + LAUNCH_OVERHEAD_MS, rel=1e-4)
    # its hiding is the issue side's share of the floor
    share = max(slow.roofs_ms["fp32"], slow.roofs_ms["lsu"]) / slow.roofs_ms["constant"]
    assert slow.hiding == pytest.approx(share) and 0 < slow.hiding < 1
    assert slow.wave_efficiency < 0.999
    # a grid that gives each SM 8 blocks holds 8, whatever the occupancy allows: no floor;
    # 12 blocks of 64 hold 24 warps (not priced), 16 hold 32 (priced)
    for blocks, priced in ((8, False), (12, False), (16, True)):
        held = predict_work(H200, many, blocks * H200.sm_count, flops, 12 * 2_000_000, 26,
                            loop_mix=mix)
        assert (held.roofs_ms["constant"] > 0) is priced, blocks


def _fit_rows() -> list[dict[str, float]]:
    rows = []
    pat = re.compile(r"table\s+(\d+) B block\s+(\d+) blocks/SM\s+(\d+) uldc (\d+) ldc3 (\d+): "
                     r"measured\s+([\d.]+) clocks an iteration, issue\s+([\d.]+), floor\s+([\d.]+)")
    for line in FIT.read_text().splitlines():
        m = pat.search(line)
        if m:
            rows.append(dict(zip(("bytes", "block", "blocks", "uldc", "ldc3", "clocks", "issue",
                                  "floor"), map(float, m.groups()), strict=True)))
    return rows


def test_the_rule_against_every_row_of_the_h200_microbenchmarks() -> None:
    """The committed rows, re-judged by the rule as it stands: ULDC_MISS_CLOCKS is the median
    per-ULDC cost of the settled slow rows; where the rule holds, the measured time is its
    floor (median within 5%, 80% of rows within 0.8-1.25x); where the loop's form keeps it out
    at the blocks and warps it prices, no row ran over 2x its issue count."""
    rows = _fit_rows()
    assert len(rows) >= 800
    settled = [r["clocks"] / r["uldc"] for r in rows
               if r["uldc"] and r["blocks"] >= 16 and r["clocks"] >= 2 * r["issue"]]
    assert len(settled) >= 100
    assert ULDC_MISS_CLOCKS == pytest.approx(statistics.median(settled), abs=0.05)
    held, free = [], []
    for r in rows:
        mix = {"total": r["issue"] * 4, "alu": 0, "imad": 0, "mufu": 0, "fp32": 0, "loop": 1,
               "uldc": int(r["uldc"]), "ldc3": int(r["ldc3"]), "cbank3": int(r["bytes"])}
        slow = walks_slow(H200, mix, int(r["blocks"]), int(r["blocks"] * r["block"]) // 32)
        assert (r["floor"] > 0) == slow  # the record was written by the rule as it stands
        pred = max(r["issue"], mix["uldc"] * ULDC_MISS_CLOCKS if slow else 0.0)
        (held if slow else free).append((r, r["clocks"] / pred))
    ratios = [x for _, x in held]
    assert statistics.median(ratios) == pytest.approx(1.0, abs=0.05)
    assert sum(0.8 <= x <= 1.25 for x in ratios) >= 0.8 * len(ratios)
    priced = [(r, x) for r, x in free if r["blocks"] >= PRICED_BLOCKS
              and r["blocks"] * r["block"] // 32 >= PRICED_WARPS]
    assert len(priced) >= 150 and not [r for r, x in priced if x > 2]


@pytest.mark.slow
def test_nvcc_reads_a_two_table_walk_and_the_module_bank(tmp_path: Path) -> None:
    """nvcc 13 (sm_90) reads a pnpoly-like walk through both forms, and the build's mix
    carries the module's __constant__ bytes (.nv.constant3: 600 x 8 + 600 x 4)."""
    from occupancy.build.builds import compile_build
    from occupancy.build.compilers import make_build, nvdisasm_path

    need_nvcc()
    need(nvdisasm_path(), "nvdisasm")
    src = tmp_path / "walk.cu"
    src.write_text(
        "__constant__ float2 v[600];\n__constant__ float s[600];\n"
        "__global__ void walk(const float2* in, int* out, int n) {\n"
        "  float2 p = in[threadIdx.x]; int c = 0;\n"
        "#pragma unroll 4\n"
        "  for (int j = 0, k = n - 1; j < n; k = j++) {\n"
        "    float2 a = v[j], b = v[k];\n"
        "    if ((a.y > p.y) != (b.y > p.y) && p.x < s[j] * (p.y - a.y) + a.x) c = !c;\n"
        "  }\n  out[threadIdx.x] = c;\n}\n")
    (res,) = compile_build(make_build(src, "sm_90")).values()
    mix = dict(res.loop_mix or ())
    assert mix["cbank3"] == 7200
    assert mix["uldc"] > 0 and mix["ldc3"] > 0, mix


def test_the_pick_bound_by_the_floor_says_why_with_the_blocks_the_grid_gives() -> None:
    """`tile`'s reasons for a constant-bound pick name the walk and the blocks an SM the
    rule used (the grid's 20 of an occupancy of 32), not the issue share."""
    from occupancy.build.resources import KernelResources
    from occupancy.tune.ranked import Point, Ranked, reasons
    occ = solve(H200, 64, 26)
    grid = 20 * H200.sm_count
    mix = tuple(walk().items())
    pred = predict_work(H200, occ, grid, 2 * 600 * grid * 64, 1e6, 26, loop_mix=mix)
    assert pred.bound == "constant"
    res = KernelResources("k", 26, 0, 1, 0, 0, 0, None, "fake", loop_mix=mix)
    r = Ranked(Point({"B": 64}, "k", (), (64,), (grid,), 0), res, occ, pred, ())
    said = reasons(r, [r], [], H200.sm_count)
    walks = [x for x in said if "__constant__ table through ULDC" in x]
    assert len(walks) == 1 and "with 20 blocks an SM" in walks[0]
    assert not [x for x in said if "schedulers issue" in x or "hide" in x]


@pytest.mark.slow
def test_a_named_walk_s_range_reaches_the_floor(tmp_path: Path) -> None:
    """A walk the model names and does not price (8 blocks of 256 an SM) carries the time
    at the slow regime's floor as the top of its predicted range; the same loop at 32
    blocks of 64, where the floor is priced, keeps the plain band. On pnpoly (the corpus's
    validation part) the 66 named points measured inside such ranges, at up to 10.2x their
    prediction (docs/model.md item 48)."""
    import json

    from click.testing import CliRunner

    from occupancy.cli import main
    from occupancy.tune.model import BAND_RATIO

    need_nvcc()
    (tmp_path / "walk.cu").write_text(
        "__constant__ float2 v[600];\n__constant__ float s[600];\n"
        "__global__ void walk(const float2* in, int* out, int n) {\n"
        "  int i = blockIdx.x * blockDim.x + threadIdx.x; if (i >= n) return;\n"
        "  float2 p = in[i]; int c = 0;\n"
        "#pragma unroll 4\n"
        "  for (int j = 0, k = 599; j < 600; k = j++) {\n"
        "    float2 a = v[j], b = v[k];\n"
        "    if ((a.y > p.y) != (b.y > p.y) && p.x < s[j] * (p.y - a.y) + a.x) c = !c;\n"
        "  }\n  out[i] = c;\n}\n")
    (tmp_path / "tune.yaml").write_text(
        "devices: [h200]\nkernels:\n  - name: walk\n    source: walk.cu\n"
        "    space: {BS: [64, 256, 1024]}\n    problem: {n: 2000000}\n    block: BS\n"
        "    grid: ceil(n / BS)\n    work: {flops: 2 * 600 * n, dram_bytes: 12 * n}\n"
        "    args: [{array: in, dtype: float32, shape: [n, 2]},\n"
        "           {array: out, dtype: int32, shape: [n], output: true}, n]\n")
    r = CliRunner().invoke(main, ["tile", str(tmp_path / "tune.yaml"), "--kernel", "walk",
                                  "-d", "h200", "--json"])
    assert r.exit_code == 0, r.output
    report = json.loads(r.stdout)
    got = {c["params"]["BS"]: c for c in report["candidates"]}
    priced, named, plain = got[64], got[256], got[1024]
    assert (priced["active_blocks_per_sm"], named["active_blocks_per_sm"]) == (32, 8)
    assert priced["bound"] == "constant" and priced["doubts"] == []
    assert priced["predicted_range_ms"] == pytest.approx(
        [priced["predicted_ms"] / BAND_RATIO, priced["predicted_ms"] * BAND_RATIO])
    assert named["doubts"] == ["walked constant table"] and named["bound"] != "constant"
    low, high = named["predicted_range_ms"]
    assert low == pytest.approx(named["predicted_ms"] / BAND_RATIO)
    # the floor is the grid's reads at the miss rate, whatever the blocks: the priced point's
    assert high > 2 * named["predicted_ms"] * BAND_RATIO
    assert high == pytest.approx(priced["predicted_ms"] * BAND_RATIO, rel=0.05)
    # 2 blocks of 1024 an SM: the slow form, not named: the plain band
    assert plain["active_blocks_per_sm"] == 2 and plain["doubts"] == []
    assert plain["predicted_range_ms"] == pytest.approx(
        [plain["predicted_ms"] / BAND_RATIO, plain["predicted_ms"] * BAND_RATIO])
    said = [f for f in report["findings"] if "through a uniform register" in f]
    assert len(said) == 1 and "in 1 of 3 points" in said[0]
    assert f"up to {high / BAND_RATIO / named['predicted_ms']:.1f}x the prediction" in said[0]
