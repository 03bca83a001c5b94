"""`occupancy tile` and `occupancy banks`: the seeds' tables, real compiler registers, any n."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from occupancy import load_device
from occupancy.build.compilers import nvdisasm_path
from occupancy.cli import main
from occupancy.core.banks import bank_conflicts, tile_addresses
from occupancy.core.solver import solve
from occupancy.inputs.profiles import all_devices
from occupancy.output.serialize import tune_dict
from occupancy.tune.family import rank_family
from occupancy.tune.model import LAUNCH_OVERHEAD_MS, block_launch_seconds, l1_for_loads, loads_in_flight
from occupancy.tune.ptxsim import FIELDS, Traffic
from tests.needs import need, need_nvcc

ROOT = Path(__file__).resolve().parent.parent


def run(*args: str) -> object:
    return CliRunner().invoke(main, list(args), env={"COLUMNS": "80"})


@pytest.mark.slow
def test_seed_gtx1080_tiled_matmul_table() -> None:
    r = run("tile", "matmul", "--device", "gtx1080", "-n", "4096", "--json")
    assert r.exit_code == 0, r.output  # type: ignore[attr-defined]
    data = json.loads(r.stdout)  # type: ignore[attr-defined]
    n = 4096
    tiled = {c["tile"]: c for c in data["candidates"] if c["variant"] == "tiled"}
    for t, threads, smem, blocks in ((8, 64, 512, 32), (16, 256, 2048, 8), (32, 1024, 8192, 2)):
        c = tiled[t]
        assert (c["threads_per_block"], c["static_shared_memory"], c["active_blocks_per_sm"]) == \
            (threads, smem, blocks)
        assert c["block"] == [t, t] and c["occupancy"] == 1.0
        assert c["active_blocks_per_sm"] * c["static_shared_memory"] == 16 * 1024
        assert c["registers_source"] == "nvrtc 12.9 sm_61"  # the real compiler, not an estimate
        assert c["global_loads"] == 2 * n ** 3 / t
        assert c["bank_conflict_ways"] == 1
    naive = next(c for c in data["candidates"] if c["variant"] == "naive")
    assert naive["global_loads"] == 2 * n ** 3
    assert data["recommended"]["predicted_ms"] == min(
        c["predicted_ms"] for c in data["candidates"] if c["predicted_ms"] is not None)
    assert data["reasons"] and "predicted" in data["reasons"][0]
    text = run("tile", "matmul", "-d", "gtx1080", "-n", "4096")
    assert "Recommended:" in text.stdout and "nvrtc 12.9 sm_61" in text.stdout  # type: ignore[attr-defined]


def _holds(kernel: str, dev: str, real: bool) -> None:
    """tile KERNEL on a profile: every candidate has resources and occupancy, solving again
    gives the same blocks and occupancy, and a launchable point has a time (real: its
    registers come from the device's own architecture, or sm_50 marked as an estimate)."""
    device = load_device(dev)
    report = rank_family(kernel, device, 1000)  # n not a multiple of any tile
    data = tune_dict(report)
    assert data["recommended"] is not None
    arch = f"sm_{device.cc_major}{device.cc_minor}"
    for a, c in zip(report.ranked, data["candidates"], strict=True):
        assert a.candidate is not None and a.resources is not None and a.occupancy is not None
        src = c["registers_source"]
        if real:
            assert src.endswith(arch) if device.cc_major >= 5 else src.startswith("estimate ("), src
            assert c["static_shared_memory"] == a.candidate.static_shared_memory
        again = solve(device, a.candidate.threads, c["registers_per_thread"],
                      c["static_shared_memory"], 0,
                      max_threads_per_block=a.resources.max_threads_per_block,
                      block_barriers=a.occupancy.block_barriers)
        assert (again.active_blocks_per_sm, again.occupancy) == (c["active_blocks_per_sm"],
                                                                c["occupancy"])
        if c["launchable"] and not c["pruned"]:
            assert c["predicted_ms"] > 0
        else:
            assert c["cannot_launch"] and c["predicted_ms"] is None


@pytest.mark.parametrize("dev", [d.key for d in all_devices()])
@pytest.mark.parametrize("kernel", ["matmul", "transpose"])
def test_every_profile_without_a_gpu(dev: str, kernel: str, monkeypatch: pytest.MonkeyPatch
                                     ) -> None:
    """Every shipped profile, with registers from a fake compiler that answers for every
    architecture: the ranking, the solver and the hand counts hold on each profile. (Its
    resources say "estimate": no real build to read the signature's PTX from.)"""
    import occupancy.build.builds as builds
    from occupancy.build.resources import KernelResources

    def fake(build: object, loop_mix: bool = True) -> dict[str, KernelResources]:
        names = ["matmul_naive", "matmul_tiled", "matmul_regblock", "transpose_naive",
                 "transpose_tiled", "transpose_padded", "transpose_vec", "transpose_tall"]
        return {n: KernelResources(n, 40, 0, 1, 0, 0, 0, None, "estimate (fake)") for n in names}

    monkeypatch.setattr(builds, "compile_build", fake)
    _holds(kernel, dev, real=False)


# One profile per way registers are found: an estimate (GT200), NVRTC + ptxas 12.9 at its
# newest architecture (sm_70), nvcc 13 at its oldest, a middle and its newest. Each family
# takes the estimate, NVRTC and the H200; nvcc's two ends take one family each (a cold
# compile of a family for one architecture is 5-10 CPU-seconds).
@pytest.mark.slow
@pytest.mark.parametrize(("kernel", "dev"), [
    *[(k, d) for k in ("matmul", "transpose") for d in ("gt200", "v100", "h200")],
    ("transpose", "t4"), ("matmul", "rtx5090")])
def test_each_way_of_finding_registers(dev: str, kernel: str) -> None:
    _holds(kernel, dev, real=True)


def test_estimates_are_marked_without_a_compiler(monkeypatch: pytest.MonkeyPatch) -> None:
    import occupancy.build.builds as tc

    monkeypatch.setattr(tc, "compiler_for", lambda arch, nvcc=None: None)
    report = rank_family("matmul", load_device("v100"), 2048)
    assert len(report.ranked) == 7 and all(a.resources and a.resources.estimated for a in report.ranked)
    every = rank_family("transpose", load_device("h200"), 2048)  # vec and tall too (a KeyError once)
    assert len(every.ranked) == 12 and all(
        a.resources and a.candidate and a.resources.estimated and a.resources.static_shared_memory
        == a.candidate.static_shared_memory for a in every.ranked)
    assert all(a.prediction for a in every.ranked if a.can_launch)  # the hand counts predict
    assert any("pip install 'occupancy[compiler]'" in n for n in report.notes)
    assert "~" in run("tile", "matmul", "-d", "v100", "-n", "2048").stdout  # type: ignore[attr-defined]


@pytest.mark.slow
def test_model_explains_caches() -> None:
    # H200: the naive kernel's reuse is served by L1/L2, so it runs as fast as the 8x8 tile
    # (measured 5.19 vs 5.11 TFLOP/s); GT200 had no cache, so tiling paid off there.
    h = {a.label: a.prediction.predicted_ms  # type: ignore[union-attr]
         for a in rank_family("matmul", load_device("h200"), 4096).ranked}
    assert 0.67 < h["naive"] / h["tiled 8"] < 1.5
    g = {a.label: a.prediction for a in rank_family("matmul", load_device("gt200"), 1024).ranked}
    assert g["naive"].predicted_ms / g["tiled 16"].predicted_ms > 5  # type: ignore[union-attr]


def test_l1_left_beside_shared_memory() -> None:
    """The L1 an SM keeps is the unified array less the smallest shared-memory size that
    holds the resident blocks (or the carveout asked for); it caps the loads in flight by
    the lines they hold. H200: 256 KB, sizes 0 ... 228 KB."""
    h200 = load_device("h200")

    def l1(static: int, dynamic: int = 0, carveout: int | None = None) -> int | None:
        return l1_for_loads(h200, solve(h200, 128, 32, static, dynamic, carveout))

    assert l1(16_640) == 256 * 1024 - 233_472  # 13 blocks of 17,664 B: 228 KB
    assert l1(4_224) == 256 * 1024 - 102_400  # 16 blocks of 5,248 B (warps): 100 KB
    assert l1(0) == 256 * 1024 - 16_384  # 16 x 1 KB reserved
    assert l1(0, carveout=100) == 256 * 1024 - 233_472  # asked for the largest size
    assert l1_for_loads(load_device("gtx1080"), solve(load_device("gtx1080"), 128, 32)) is None
    # capped by the L1 lines the loads hold: a warp load spanning two lines holds 256 B of
    # L1 for its 128 useful bytes
    assert loads_in_flight(40_000.0, 28_672, 1.0, 128.0) == 28_672
    assert loads_in_flight(40_000.0, 28_672, 2.0, 128.0) == 14_336
    assert loads_in_flight(10_000.0, 28_672, 2.0, 128.0) == 10_000
    assert loads_in_flight(40_000.0, None, 2.0, 128.0) == 40_000


def test_launch_costs_from_the_h200_record() -> None:
    """bench/results/h200-launch: kernels that do nothing, timed as `measure` times. The
    model's fixed cost plus its block-scheduler roof give every grid of 2,112 to 65,536
    blocks of 32-512 threads within 5%."""
    rec = json.loads((ROOT / "bench/results/h200-launch/launch-overhead.json").read_text())
    h200 = load_device("h200")
    checked = 0
    for r in rec["results"]:
        if r["case"].startswith(("empty", "touch", "16 KB")) and r["blocks"] >= 2112 \
                and r["threads"] <= 512:
            model = LAUNCH_OVERHEAD_MS + block_launch_seconds(h200, r["blocks"]) * 1e3
            assert abs(model / r["min_ms"] - 1) <= 0.05, r["case"]
            checked += 1
    assert checked >= 15


def test_warp_path_floor() -> None:
    """A warp run followed to its end: its loads over the loads it keeps in flight are its
    round trips, at the DRAM latency once per round of blocks, after the SM started the
    round's blocks (157 clocks each). llm.c's layernorm 3 at 8 x 1024 x 768, 64 threads:
    120 loads, 4 at a time, 4,096 blocks over 132 SMs of 32."""
    from occupancy.tune.model import DRAM_LATENCY_CLOCKS, _warp_path
    from occupancy.tune.ptxsim import FIELDS, Traffic

    h200 = load_device("h200")
    occ = solve(h200, 64, 23)
    counts = dict.fromkeys([f for f in FIELDS if f not in ("load_cover", "covered_loads")], 0.0) \
        | {"global_loads": 120.0}
    t = Traffic(True, 32, **counts, load_cover=0.0, covered_loads=0.0)
    mix = {"ldg": 4, "ldg_batches": 1}
    clock = h200.boost_clock_mhz * 1e6
    one = _warp_path(h200, occ, 4096, mix, t)
    assert one == pytest.approx((30 * DRAM_LATENCY_CLOCKS + 32 * 157) / clock)
    assert _warp_path(h200, occ, 4 * 4224, mix, t) == pytest.approx(
        (4 * 30 * DRAM_LATENCY_CLOCKS + 32 * 157) / clock)  # four rounds
    assert _warp_path(h200, occ, 4096, mix, None) == 0.0
    cut = Traffic(False, 32, **counts, load_cover=0.0, covered_loads=0.0)
    assert _warp_path(h200, occ, 4096, mix, cut) == 0.0  # a loop's own stall term covers it


def test_a_nested_loop_counts_once_per_its_iteration() -> None:
    """SGEMM_CUDA's 2-D blocktiling at BM 128, BN 64, BK 32, TM 8, TN 4 (SASS of nvcc 13
    for sm_90): the tile loop's body has 354 instructions, 149 of them in the k loop nested
    in it (4 k unrolled: 128 FFMAs, 8 LDS.128 and 8 LDS.64); ptxsim's unit, one tile, has
    1024 FFMAs: the k loop runs 8 times a tile. Per tile: 205 + 8 x 149 instructions, the 24
    loads and 2 barriers once. A whole run or a unit of one k iteration keeps the body."""
    from occupancy.tune.model import unit_mix

    mix = {"total": 354, "ffma": 128, "fp32": 128, "lds_wavefronts": 48, "sts_wavefronts": 24,
           "ldg": 24, "stg": 0, "bar": 2, "loop": 1, "ldg_batches": 1, "ldg_cover": 96,
           "inner_total": 149, "inner_ffma": 128, "inner_fp32": 128, "inner_lds_wavefronts": 48,
           "inner_sts_wavefronts": 0, "inner_ldg": 0, "inner_stg": 0, "inner_bar": 0}
    counts = dict.fromkeys(FIELDS, 0.0)

    def unit(complete: bool, ffma: float) -> Traffic:
        return Traffic(complete, 32, **(counts | {"ffma": ffma, "flops": 64.0 * ffma}))

    tile = unit_mix(mix, unit(False, 1024.0))
    assert (tile["total"], tile["ffma"], tile["lds_wavefronts"]) == (205 + 8 * 149, 1024, 8 * 48)
    assert (tile["ldg"], tile["bar"], tile["sts_wavefronts"], tile["ldg_batches"]) == (24, 2, 24, 1)
    assert unit_mix(mix, unit(True, 1024.0)) == mix
    assert unit_mix(mix, unit(False, 128.0)) == mix and unit_mix(mix, None) == mix
    flat = {k: v for k, v in mix.items() if not k.startswith("inner_")}
    assert unit_mix(flat, unit(False, 1024.0)) == flat  # a mix without nested counts


BAD = [
    (["tile", "conv", "-d", "v100"], "'conv' is neither matmul nor transpose nor a manifest"),
    (["tile", "matmul", "-d", "v100", "-n", "0"], "-n"),
    (["tile", "matmul", "-d", "nope"], "unknown device 'nope'"),
    (["banks", "--words", "a,b"], "--words"),
    (["banks", "--element-bytes", "3"], "--element-bytes"),
]


@pytest.mark.parametrize(("args", "message"), BAD, ids=[" ".join(a) for a, _ in BAD])
def test_bad_input(args: list[str], message: str) -> None:
    r = run(*args)
    assert r.exit_code == 2 and message in r.stderr, r.stderr  # type: ignore[attr-defined]
    assert len(r.stderr.strip().splitlines()) == 1  # type: ignore[attr-defined]


def test_seed_bank_cases() -> None:
    assert bank_conflicts([1 * 4, 33 * 4]).ways == 2  # thread 0 word 1, thread 1 word 33
    assert bank_conflicts(tile_addresses(32, column=True)).ways == 32  # float tile[32][32]
    assert bank_conflicts(tile_addresses(33, column=True)).ways == 1  # float tile[32][33]
    assert bank_conflicts(tile_addresses(32, column=False)).ways == 1  # a row
    assert bank_conflicts([0] * 32).ways == 1  # a broadcast
    assert bank_conflicts(tile_addresses(32, False, stride=2)).ways == 2
    assert bank_conflicts(tile_addresses(32, False, element_bytes=8), 8).ways == 1  # per half-warp
    assert bank_conflicts(tile_addresses(32, False, element_bytes=16), 16).wavefronts == 4
    for args, ways in ((["--words", "1,33"], 2), (["--column"], 32), (["--column", "--pitch", "33"], 1)):
        data = json.loads(run("banks", *args, "--json").stdout)  # type: ignore[attr-defined]
        assert data["ways"] == ways, args
    text = run("banks", "--words", "1,33").stdout  # type: ignore[attr-defined]
    assert "2-way bank conflict" in text and "bank(s) 1 serve 2 different words" in text


@pytest.mark.slow
def test_a_dram_bound_near_tie_picks_the_higher_occupancy() -> None:
    """The shipped transposes at n = 11000 on the H200: tall 16x16 (75% occupancy) is
    predicted 1.2% faster than vec 16x16 (100%), closer than a measurement tells apart, and
    measured 12% slower (bench/results/h200-transpose-shipped). At a bandwidth roof the
    pick among points within RESOLUTION is the most resident; the order keeps the rest."""
    from occupancy.tune.model import RESOLUTION

    report = rank_family("transpose", load_device("h200"), 11000)
    timed = [r for r in report.ranked if r.prediction]
    pick, fastest = report.recommended, min(timed, key=lambda r: r.prediction.predicted_ms)
    assert pick is not None and pick.prediction and fastest.prediction and pick.occupancy
    assert fastest.label == "tall 16x16" and fastest.prediction.bound == "dram"
    assert pick.prediction.predicted_ms <= fastest.prediction.predicted_ms * (1 + RESOLUTION)
    assert pick.occupancy.occupancy == 1.0 and pick.label.startswith("vec 16x16")
    assert report.ranked[1] is fastest  # the rest keep the predicted order
    why = " ".join(report.why)
    assert "tall 16x16 is predicted 1.2% faster" in why and "(100% vs 75%)" in why
    data = tune_dict(report)
    assert data["recommended"]["label"] == pick.label and data["recommended"]["occupancy"] == 1.0


@pytest.mark.slow
def test_an_fp32_bound_near_tie_keeps_the_fastest_predicted() -> None:
    """At the FP32 roof more warps add no issue slots: regblock128 8x8 k16 (12.5%) stays
    the pick over regblock128 8x8 (25%), 1.3% slower predicted, on the GTX 1080."""
    report = rank_family("matmul", load_device("gtx1080"), 4096)
    pick = report.recommended
    assert pick is not None and pick.prediction and pick.prediction.bound == "fp32"
    assert pick.label == "regblock128 8x8 k16"
    assert report.ranked[1].label == "regblock128 8x8"


@pytest.mark.slow
def test_a_rolled_k_loop_is_named_as_a_doubt() -> None:
    """bench/doubts/kroll.cu at one tile, its k loop unrolled (KU = BK) or kept rolled
    (KU = 1): the points whose SASS has a loop of FFMAs nested in the hot loop carry the
    doubt `rolled k loop` (what measure --budget groups by, tune/budget.py), the others
    none, and a finding names them."""
    need_nvcc()
    need(nvdisasm_path(), "nvdisasm")
    r = run("tile", str(ROOT / "bench/doubts/tune.yaml"), "--kernel", "kroll_small",
            "-d", "h200", "--json")
    assert r.exit_code == 0, r.output  # type: ignore[attr-defined]
    data = json.loads(r.stdout)  # type: ignore[attr-defined]
    got = {(c["params"]["BK"], c["params"]["KU"]): c["doubts"] for c in data["candidates"]}
    assert got == {(8, 1): ["rolled k loop"], (16, 1): ["rolled k loop"], (8, 8): [], (16, 16): []}
    assert any(f.startswith("The k loop is kept rolled in 2 of 4 points") for f in data["findings"])


def _traffic(**counts: float) -> Traffic:
    base = dict.fromkeys([f for f in FIELDS if f not in ("load_cover", "covered_loads")], 0.0)
    return Traffic(True, 32, **(base | counts), load_cover=0.0, covered_loads=0.0)


def test_a_warp_that_never_fills_the_unrolled_loop_waits_per_load() -> None:
    """kernel_tuner's sum_floats with `#pragma unroll 8`: the SASS's hottest loop issues 8
    loads before it waits; a warp with 4 elements to add never runs it (ptxas's rolled
    remainder loop takes them one round trip each), one with 20 runs it twice and waits 4
    times more. Measured at n = 2^24 on the H200 (bench/results/h200-corpus-calibration):
    512 x 8192 blocks, 4 elements a thread, 40.5 us unrolled and 40.8 us rolled."""
    from occupancy.tune.model import _loads_per_batch

    mix = {"ldg": 8, "ldg_batches": 1}
    assert _loads_per_batch(mix, _traffic(global_loads=4.0)) == 1.0
    assert _loads_per_batch(mix, _traffic(global_loads=16.0)) == 8.0
    assert _loads_per_batch(mix, _traffic(global_loads=20.0)) == pytest.approx(20 / 6)
    assert _loads_per_batch({"ldg": 8, "ldg_batches": 2}, _traffic(global_loads=16.0)) == 4.0
    # a warp run to its end also walks its row in the kernel's other passes that wait for
    # each load: llm.c's online softmax, 2 loads an element in 1/4 + 1 waits; a cut run (an
    # iteration of the hottest loop) is that loop's alone
    online = {"ldg": 4, "ldg_batches": 1, "pass_loops": 1}
    assert _loads_per_batch(online, _traffic(global_loads=256.0)) == pytest.approx(8 / 5)
    assert _loads_per_batch({**online, "pass_loops": 0}, _traffic(global_loads=256.0)) == 4.0
    cut = dataclasses.replace(_traffic(global_loads=4.0), complete=False)
    assert _loads_per_batch(online, cut) == 4.0
    # a row too short to fill the hottest loop goes through its remainder, a trip a load, in
    # that pass as in the others: never more loads a wait than without the other passes
    short = {"ldg": 8, "ldg_batches": 1, "pass_loops": 1}
    assert _loads_per_batch(short, _traffic(global_loads=4.0)) == 1.0
    assert _loads_per_batch(short, _traffic(global_loads=20.0)) <= _loads_per_batch(
        {"ldg": 8, "ldg_batches": 1}, _traffic(global_loads=20.0))


def test_a_stream_that_only_reads_reaches_more_of_dram() -> None:
    """The copy's 88% holds for half-written streams; a read-only one (a reduction) reaches
    DRAM_READ_EFFICIENCY; a manifest without arrays keeps the copy's."""
    from occupancy.tune.model import DRAM_EFFICIENCY, DRAM_READ_EFFICIENCY, dram_efficiency

    assert dram_efficiency(None) == DRAM_EFFICIENCY
    assert dram_efficiency(0.0) == DRAM_READ_EFFICIENCY > DRAM_EFFICIENCY
    assert dram_efficiency(0.5) == dram_efficiency(0.9) == pytest.approx(DRAM_EFFICIENCY)
    assert dram_efficiency(0.25) == pytest.approx((DRAM_EFFICIENCY + DRAM_READ_EFFICIENCY) / 2)


def test_rereads_that_l1_holds_take_no_round_trip() -> None:
    """llm.c's softmax 4 at 16,384 x 4,096: a warp loads 64 lines, 48 of them again (its
    later passes over the row). 256-thread blocks (8 a SM, 64 warps) re-read 3 KB a warp
    apart, 192 KB a SM: L1 holds it and only the 16 first loads are trips; 128-thread blocks
    re-read 6 KB apart (389 KB a SM): every load is a trip."""
    from occupancy.tune.model import l1_reread_loads

    h200 = load_device("h200")
    near = _traffic(global_loads=64.0, global_load_lines=64.0, reread_lines=48.0,
                    reread_distance=48 * 3008.0)
    far = _traffic(global_loads=128.0, global_load_lines=128.0, reread_lines=96.0,
                   reread_distance=96 * 6080.0)
    assert l1_reread_loads(h200, solve(h200, 256, 23, 0, 32), 16384, near) == 48.0
    assert l1_reread_loads(h200, solve(h200, 128, 23, 0, 16), 16384, far) == 0.0
    assert l1_reread_loads(h200, solve(h200, 256, 23, 0, 32), 16384, _traffic(global_loads=8.0)) == 0.0


def test_a_reread_of_the_line_just_loaded_never_reaches_dram() -> None:
    """llm.c's online softmax 8 at 8,192 x 50,257 (a warp per 201 KB row, 64 warps an SM):
    its rows start off their 128-B lines, so each warp load straddles two and the next load
    reads the second again. Those near re-reads hit; only the second pass's re-reads of the
    row miss, which Nsight Compute measured as 2.0x the input read from DRAM, not 2.9x
    (bench/results/h200-softmax-ncu). A miss brings the sectors the loads touch: the row's
    6,282. And 1 KB a warp fits L2 on every shipped GPU full of warps, the bound under
    which a re-read counts as near (ptx_warp.NEAR_REREAD_BYTES)."""
    from occupancy.inputs.profiles import all_devices
    from occupancy.tune.ptx_warp import NEAR_REREAD_BYTES
    from occupancy.tune.reuse import reread_miss_bytes

    h200 = load_device("h200")
    occ = solve(h200, 256, 24, 0, 8)
    row = 1571  # lines of a 201 KB row
    far = {"reread_lines": float(row), "reread_distance": row * 201028.0,
           "far_reread_sectors": 6282.0,
           "far_l2_distance": row * 201028.0, "far_l2_sq": row * 201028.0 ** 2}
    near = {"near_reread_lines": 2.0 * row, "near_reread_distance": 2.0 * row * 256}
    both = _traffic(global_loads=3142.0, global_load_lines=3.0 * row, reread_lines=3.0 * row,
                    reread_distance=far["reread_distance"] + near["near_reread_distance"],
                    far_reread_sectors=6282.0,
                    far_l2_distance=far["far_l2_distance"], far_l2_sq=far["far_l2_sq"], **near)
    units = 8192.0
    misses = reread_miss_bytes(h200, occ, 1024, both, units)
    assert misses == reread_miss_bytes(h200, occ, 1024, _traffic(**far), units)
    assert misses == pytest.approx(units * 6282 * 32)
    assert reread_miss_bytes(h200, occ, 1024, _traffic(**near, reread_lines=2.0 * row,
                                                       reread_distance=2.0 * row * 256), units) == 0
    with_l2 = [d for d in all_devices() if d.l2_cache_bytes]
    assert len(with_l2) >= 20
    for d in with_l2:
        assert NEAR_REREAD_BYTES * d.max_warps_per_sm * d.sm_count < d.l2_cache_bytes, d.name


def test_a_cut_run_still_gives_the_bytes_of_a_warp_load() -> None:
    """A warp run cut at 12,000 steps without declared FLOPs counts no units, but its loop
    iteration still says how wide a warp load is: kernel_tuner's sum_floats over float4
    (512 B a warp load) keeps 4x the bytes in flight of the float one, and is faster."""
    from occupancy.tune.model import predict_work

    h200 = load_device("h200")
    occ = solve(h200, 64, 16)
    mix = (("ldg", 1), ("ldg_batches", 1), ("loop", 1), ("total", 12))
    base = dict.fromkeys([f for f in FIELDS if f not in ("load_cover", "covered_loads")], 0.0)
    def cut(width: int) -> Traffic:
        return Traffic(False, 32, **(base | {"global_loads": 1.0, "load_bytes": 32.0 * width,
                                             "global_load_lines": width / 4}),
                       load_cover=0.0, covered_loads=0.0)
    narrow = predict_work(h200, occ, 128, 0.0, 4 * 2 ** 26, 16, mix, cut(4), 0.0)
    wide = predict_work(h200, occ, 128, 0.0, 4 * 2 ** 26, 16, mix, cut(16), 0.0)
    assert wide.hiding > 3 * narrow.hiding and wide.predicted_ms < narrow.predicted_ms / 3
