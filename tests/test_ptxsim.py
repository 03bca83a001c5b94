"""One warp run on real PTX (ptxsim): the addresses, conflicts and lines the tuning model
prices, checked on kernels whose access patterns are known by hand, and on hostile PTX."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from occupancy.build.builds import build_ptx
from occupancy.build.compilers import make_build
from occupancy.build.sass_loops import _load_batches
from occupancy.core.banks import bank_conflicts
from occupancy.tune.ptxsim import ARRAY_STRIDE, MAX_STEPS, PtxError, block_sample, parse_kernel, run_warp
from tests.needs import need_nvcc

ROOT = Path(__file__).resolve().parent.parent
A, B, C = (ARRAY_STRIDE * i for i in (1, 2, 3))


def _ptx(source: Path, *instances: str, arch: str = "sm_90", **kw: object) -> str:
    return build_ptx(make_build(source, arch, name_expressions=list(instances), **kw))  # type: ignore[arg-type]


def _entry(ptx: str, fragment: str) -> str:
    import re

    return next(e for e in re.findall(r"\.entry\s+(\w+)", ptx) if fragment in e)


def test_banks_match_nsight_compute_on_the_h200() -> None:
    """31 load patterns (4-, 8- and 16-byte, broadcasts, strides, rows one bank apart):
    banks.py's wavefronts equal Nsight Compute's counts on the H200. In that run the first
    profiled launch was CuPy's own (filling the global buffer), so pattern i is launch i+1;
    bench/lds_wavefronts.py now matches launches by kernel name."""
    rec = json.loads((ROOT / "bench/results/h200-validate/lds-wavefronts.json").read_text())
    rows = rec["results"]
    shared = [r for r in rows if r["kernel"].startswith("lds")]
    assert len(shared) == 31
    for i, r in enumerate(shared):
        m = rows[i + 1]["metrics"]
        measured = (m["l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld.sum"]
                    / m["smsp__inst_executed_op_shared_ld.sum"])
        addrs = [o * r["bytes"] for o in r["offsets"]]
        assert bank_conflicts(addrs, element_bytes=r["bytes"]).wavefronts == measured, r["pattern"]


def test_packed_broadcasts() -> None:
    """A uniform LDS.128 takes 2 passes (thread pairs share addresses), a contiguous one 4,
    and rows 512 bytes apart read by quarter-warps conflict pairwise: 4."""
    assert bank_conflicts([0] * 32, 16).wavefronts == 2
    assert bank_conflicts([16 * i for i in range(32)], 16).wavefronts == 4
    assert bank_conflicts([(i // 8) * 512 for i in range(32)], 16).wavefronts == 4
    assert bank_conflicts([16 * (i % 8) for i in range(32)], 16).wavefronts == 4  # no pairs
    assert bank_conflicts([0] * 32, 8).wavefronts == 1
    # CC 1.x (16 banks, half-warps): no packing, two quarter phases of 8 threads
    assert bank_conflicts([0] * 16, 16, banks=16).wavefronts == 2


def test_transpose_conflicts_and_lines() -> None:
    """examples/transpose, TILE 32 x ROWS 8: each warp stores 4 rows of the tile (1 pass
    each) and reads 4 columns: 32-way conflicts without padding, conflict-free with it.
    Its 4 loads and 4 stores each touch one 128-byte line."""
    need_nvcc()
    src = ROOT / "examples" / "transpose" / "transpose.cuh"
    ptx = _ptx(src, "transpose_tiled<32, 8, 0>", "transpose_tiled<32, 8, 1>")
    for pad, wavefronts in ((0, 4 + 4 * 32), (1, 8)):
        t = run_warp(ptx, _entry(ptx, f"Li8ELi{pad}E"), [A, B, 8192], (32, 8), (256, 256))
        assert t.complete and t.lanes == 32 and t.barriers == 1
        assert t.shared_wavefronts == wavefronts
        assert (t.global_loads, t.global_load_lines, t.global_load_sectors) == (4, 4, 16)
        assert (t.global_stores, t.global_store_lines, t.partial_store_sectors) == (4, 4, 0)


def test_the_last_warp_shows_the_rows_warp_0_misses() -> None:
    """At n = 5000 a row starts 32 B further into a 128-B line than the one before. In
    TILE 32 x ROWS 4, warp 0 reads rows 4k (aligned: one line per load) and the last warp
    rows 4k + 3 (two lines each); the block's sample is their mean. A warp past the block
    is refused."""
    need_nvcc()
    src = ROOT / "examples" / "transpose" / "transpose.cuh"
    ptx = _ptx(src, "transpose_tiled<32, 4, 1>")
    entry = _entry(ptx, "transpose")
    first = run_warp(ptx, entry, [A, B, 5000], (32, 4), (157, 157))
    last = run_warp(ptx, entry, [A, B, 5000], (32, 4), (157, 157), warp=3)
    assert (first.global_loads, first.global_load_lines) == (8, 8)
    assert (last.global_loads, last.global_load_lines) == (8, 16)
    both = block_sample(first, last)
    assert (both.global_load_lines, both.global_loads, both.lanes) == (12, 8, 32)
    assert block_sample(first, None) is first
    with pytest.raises(PtxError, match="no warp 4"):
        run_warp(ptx, entry, [A, B, 5000], (32, 4), (157, 157), warp=4)


def test_whole_runs_past_a_repeating_loop() -> None:
    """A repeating loop ends the run early (its iteration is the unit) unless `whole`, for
    a kernel without declared FLOPs: then the warp runs to its end. SGEMM at K = 128: 8
    iterations of its k loop."""
    need_nvcc()
    src = ROOT / "examples" / "sgemm" / "sgemm.cuh"
    ptx = _ptx(src, "sgemm2DBlocktiling<128, 64, 16, 8, 8>")
    entry = _entry(ptx, "sgemm")
    args = [256, 256, 128, 1.0, A, B, 0.0, C]
    cut = run_warp(ptx, entry, args, (128,), (4, 2))
    whole = run_warp(ptx, entry, args, (128,), (4, 2), whole=True)
    assert not cut.complete and whole.complete
    assert whole.barriers == 8 * cut.barriers  # 8 iterations, 2 barriers each
    assert 8 * cut.flops < whole.flops < 8.1 * cut.flops  # and the alpha, beta epilogue


def test_sgemm_iteration() -> None:
    """examples/sgemm <128, 64, 16, 8, 8>: one iteration of the k loop is 16 x 8 x 8 FMAs per
    thread; ptxas's LDS.128 for A (8 lanes share a row: packed into half-warps, but each
    half reads 2 rows 512 bytes apart, 2-way: 4 passes) and B (lanes 32 bytes apart,
    2-way per quarter: 8 passes), 24 tile stores, 24 loads (A: 2 rows of 16 floats per
    warp, 2 lines; B: 1 line), 2 barriers."""
    need_nvcc()
    src = ROOT / "examples" / "sgemm" / "sgemm.cuh"
    ptx = _ptx(src, "sgemm2DBlocktiling<128, 64, 16, 8, 8>")
    t = run_warp(ptx, _entry(ptx, "sgemm"), [4096, 4096, 4096, 1.0, A, B, 0.0, C], (128,),
                 (64, 32))
    assert not t.complete
    assert t.ffma == 16 * 8 * 8 and t.flops == 2 * 32 * 1024
    assert t.shared_wavefronts == 32 * 4 + 32 * 8 + 24
    assert (t.global_loads, t.global_load_lines, t.barriers) == (24, 16 * 2 + 8, 2)
    assert t.cover == 0  # each tile load is stored to shared memory at once


def test_llmc_rows_per_lane() -> None:
    """llm.c matmul_forward_kernel1 with 32 x 32 blocks: each lane walks its own row of
    `inp` (32 lines per load) while the warp shares one row of `weight` (1 line)."""
    need_nvcc()
    src = ROOT.parent / "shared" / "realcode" / "llm.c" / "dev" / "cuda" / "matmul_forward.cu"
    if not src.is_file():
        pytest.skip("../shared/realcode not beside the checkout")
    ptx = _ptx(src, include_dirs=[str(ROOT / "tests/fixtures/cublas_stub")],
               flags=["-std=c++17", "--use_fast_math"])
    t = run_warp(ptx, _entry(ptx, "matmul_forward_kernel1"), [C, A, B, A + (1 << 30), 8192, 768,
                                                              3072], (32, 32), (256, 96))
    assert t.global_loads and t.global_load_lines / t.global_loads == pytest.approx(33 / 2, rel=0.01)


SPIN = """
.version 8.0
.target sm_90
.address_size 64
.visible .entry spin(.param .u64 p)
{
  .reg .b32 %r<9>;
$L_top:
  add.s32 %r6, %r6, 1;
  bra.uni $L_top;
}
"""

HALF = """
.visible .entry half(.param .u64 p)
{
  .reg .pred %p<3>;
  .reg .b32 %r<9>;
  .shared .align 4 .b8 buf[4096];
  mov.u32 %r1, %tid.x;
  setp.lt.u32 %p1, %r1, 16;
  @%p1 bra $L_half;
  shl.b32 %r2, %r1, 7;
  mov.u32 %r3, buf;
  add.s32 %r4, %r3, %r2;
  ld.shared.f32 %f1, [%r4];
$L_half:
  bogus.op.u32 %r5, %r1;
  ret;
}
"""


def test_hostile_ptx_is_bounded_and_refused() -> None:
    """An endless loop stops at the fixed step bound (and is measured per iteration); an
    unknown instruction is passed over; divergent lanes reconverge; what is not PTX, or
    names no such entry, is refused."""
    t0 = time.monotonic()
    t = run_warp(SPIN, "spin", [0], (32,), (1,))
    assert time.monotonic() - t0 < 10
    assert not t.complete and t.steps == 2 and t.shared_accesses == 0
    t = run_warp(HALF, "half", [0], (32,), (1,))
    # the upper 16 lanes load 128 bytes apart: 16 words of one bank, 16 passes; the lower
    # 16 skip it; both run the unknown instruction and return together
    assert t.complete and t.shared_accesses == 1 and t.shared_wavefronts == 16
    assert t.steps == 9
    assert parse_kernel(HALF, "half").symbols["buf"] == 0
    assert MAX_STEPS <= 100_000  # a fixed bound, not one the input sets
    with pytest.raises(PtxError):
        run_warp(SPIN, "missing", [], (32,), (1,))
    with pytest.raises(PtxError):
        run_warp("not ptx at all", "spin", [], (32,), (1,))


def test_load_batches_from_sass() -> None:
    """A warp waits for its loads at the first instruction that reads one: two loads, a use,
    one load, a use = 2 waits; the closest use is 1 instruction after its load."""
    body = [(0, "LDG", ".E", None, " R4, desc[UR4][R2.64] ;"),
            (16, "LDG", ".E", None, " R5, desc[UR4][R2.64+0x4] ;"),
            (32, "STS", None, None, " [R7], R4 ;"),
            (48, "LDG", ".E.128", None, " R8, desc[UR4][R2.64+0x8] ;"),
            (64, "FFMA", None, None, " R1, R11, R1, R1 ;")]
    assert _load_batches(body) == (2, 1)


@pytest.mark.parametrize("body", [
    "mov.f32 %f1, 0f0123456789ABCDEF01;",  # a float immediate of the wrong length
    "ld.param.u64 %rd1, [p];\n  ld.global.f32 %f1, [%rd1+99999999999999999999999999];",
    "div.s32 %r1, %r1, 0;\n  rem.s32 %r2, %r1, 0;\n  shl.b32 %r3, %r1, -5;",
    "ld.shared.v4.f32 {%f1, %f2, %f3, %f4}, [nosuchsymbol+8];\n  bra.uni $nowhere;",
])
def test_odd_ptx_is_followed_or_refused(body: str) -> None:
    """What a compiler would not write still ends in a Traffic or a PtxError, never another
    exception and never a hang."""
    ptx = f".visible .entry k(.param .u64 p)\n{{\n  {body}\n  ret;\n}}\n"
    try:
        t = run_warp(ptx, "k", [A], (32,), (1,))
    except PtxError:
        return
    assert t.steps >= 1


def test_unrolled_loop_merges_row_reads() -> None:
    """A register-blocked tile loop whose k loop stays rolled in PTX (SGEMM_CUDA's 2-D
    blocktiling is written this way), the merge's counting alone (no SASS share given, so
    warp_traffic merges: the mechanics, not ptxas's choice): where ptxas unrolls it 4x and
    reads each of a thread's 8 rows of As as one LDS.128 per 4 k (here it keeps them scalar,
    the next test; coldot.cu's 1-D loop has them merged). The PTX has 8 scalar loads per k, each 2
    wavefronts (a warp's two rows, 256 B apart, share banks): 16 per k. Merged: 2 wavefronts
    per LDS.128 over 4 k, 4 per k, 96 fewer per tile (8 k). The unit is the tile loop (its
    loads and barriers), not the k loop, and the unroll comes from the SASS (128 FFMAs in
    the SASS loop over 32 per PTX iteration)."""
    need_nvcc()
    from occupancy.build.builds import compile_build
    from occupancy.tune.traffic import warp_traffic

    src = ROOT / "tests/fixtures/unrolled/rowdot.cu"
    build = make_build(src, "sm_90")
    ptx = build_ptx(build)
    entry = _entry(ptx, "rowdot")
    args, block, grid = [4096, 4096, 4096, A, B, C], [128], [64, 64]
    plain = run_warp(ptx, entry, args, block, grid)
    assert (plain.ffma, plain.inner_ffma, plain.barriers, plain.global_loads) == (256, 32, 2, 8)
    assert plain.shared_wavefronts == 168
    assert run_warp(ptx, entry, args, block, grid, unroll=4).shared_wavefronts == 168 - 96
    # where the SASS has no wide shared load, ptxas merged none: no merge across iterations
    # either, and the unroll changes nothing (nor do ptxsim's static pairs stay: 200)
    scalar = run_warp(ptx, entry, args, block, grid, merge=(False, True)).shared_wavefronts
    assert scalar == 200
    assert run_warp(ptx, entry, args, block, grid, unroll=4,
                    merge=(False, True)).shared_wavefronts == scalar
    mix = dict(compile_build(build)[entry].loop_mix or ())
    if not mix:
        pytest.skip("no nvdisasm: the SASS loop is not read")
    assert mix["ffma"] == 128 and mix["lds_wavefronts"] == 32 + 4 * 4  # 32 LDS, 4 LDS.128
    t = warp_traffic(build, entry, args, block, grid, 32, sass_ffma=mix["ffma"])  # no share
    assert t is not None and t.shared_wavefronts < plain.shared_wavefronts
    # the SASS loop read is the tile loop (its loads and barriers) with the unrolled k loop
    # nested in it: that runs twice a tile, so the tile's issue slots are the body's outside
    # it plus twice its own (counted once, the tile's loads came every 128 FFMAs)
    from occupancy.tune.model import unit_mix

    assert mix["inner_ffma"] == 128 and mix["ldg"] and not mix["inner_ldg"] and mix["bar"] == 2
    tile = unit_mix(mix, t)
    assert tile["ffma"] == t.ffma == 256 and tile["bar"] == 2 and tile["ldg"] == mix["ldg"]
    assert tile["total"] == mix["total"] + mix["inner_total"]


def test_row_reads_stay_scalar_where_the_sass_loop_kept_them() -> None:
    """rowdot's loop (TM = 8): ptxas unrolls its k loop 4x but keeps the 8 row reads of As
    scalar, 32 LDS beside 4 LDS.128, 2/3 of the words its shared loads move. ptxsim's first
    run says what merging would leave: 8 words a k stepping (As), 4 in a wide group (Bs),
    none else, so merged 0 of 12 words go scalar, kept 8 of 12: the SASS's 2/3 says kept,
    and the warp is counted with its 8 scalar loads a k, not a quarter of 8 LDS.128
    (SGEMM_CUDA's kernel at BM = BN = 128, BK = 16, TM = 8, TN = 4: Nsight Compute counted
    105.6 M shared wavefronts where the merge gave 71.3 M, bench/results/h200-sgemm2d-ncu).
    coldot's 1-D loop (TM = 16, BK = 4): 16 LDS.128 beside 4 LDS (Bs), a share of 1/17; 16
    of 17 words step, 1 does not: merged, as before."""
    need_nvcc()
    from occupancy.build.builds import compile_build
    from occupancy.tune.traffic import merged_across, warp_traffic

    cases = (("rowdot", [128], (8, 0, 12), (32, 4), False),
             ("coldot", [256], (16, 1, 17), (4, 16), True))
    for name, block, (stream, plain_words, every), (scalar, wide), merges in cases:
        build = make_build(ROOT / "tests/fixtures/unrolled" / f"{name}.cu", "sm_90")
        ptx = build_ptx(build)
        entry = _entry(ptx, name)
        args, grid = [4096, 4096, 4096, A, B, C], [64, 64]
        words: dict[str, float] = {}
        plain = run_warp(ptx, entry, args, block, grid, lds_words=words)
        assert words["stream"] * every == stream * words["all"]
        assert words["plain"] * every == plain_words * words["all"]
        merged = run_warp(ptx, entry, args, block, grid, unroll=4)
        kept = run_warp(ptx, entry, args, block, grid, unroll=4, merge=(True, True, False))
        assert kept.shared_wavefronts == plain.shared_wavefronts > merged.shared_wavefronts
        mix = dict(compile_build(build)[entry].loop_mix or ())
        if not mix:
            pytest.skip("no nvdisasm: the SASS loop is not read")
        assert mix["lds_scalar"] == scalar and mix["lds_wavefronts"] == scalar + 4 * wide
        assert round(mix["ffma"] / plain.inner_ffma) == 4
        share = mix["lds_scalar"] / mix["lds_wavefronts"]
        assert merged_across(words, share) is merges
        t = warp_traffic(build, entry, args, block, grid, 32, sass_ffma=mix["ffma"],
                         scalar_share=share)
        assert t is not None
        assert t.shared_wavefronts == (merged if merges else kept).shared_wavefronts


def test_merged_across_takes_the_nearer_share() -> None:
    """merged_across: the SASS share nearer the merged one merges, a tie merges, and without
    a SASS read or a load that steps, the merge stands."""
    from occupancy.tune.traffic import merged_across

    words = {"all": 16.0, "stream": 8.0, "plain": 2.0}  # merged 2/16 scalar, kept 10/16
    assert merged_across(words, 0.0) and merged_across(words, 0.125) and merged_across(words, 0.375)
    assert not merged_across(words, 0.376) and not merged_across(words, 1.0)
    assert merged_across(words, None)
    assert merged_across({"all": 12.0, "stream": 0.0, "plain": 12.0}, 1.0)
    assert merged_across({}, 1.0)


def test_scalar_shared_loads_stay_scalar_where_ptxas_merged_none() -> None:
    """ptxas merges scalar shared accesses at [r], [r+4], ... into one wide access only where
    it proves r aligned. Rows at Qs[tx * d + x] with a runtime d (flash-attention-minimal's
    pattern) stay scalar LDS in the SASS; ptxsim, which sees the addresses aligned at this
    d, merges them unless told the SASS has none: each scalar load of a 32-lane column is 32
    wavefronts (every lane on one bank), and the broadcast of Ks one, 33 per FFMA, not 8.5.
    The SASS's `wide_lds` says which: none here, some LDS.128 in rowdot's."""
    need_nvcc()
    from occupancy.build.builds import compile_build
    from occupancy.tune.traffic import warp_traffic

    build = make_build(ROOT / "tests/fixtures/unrolled/phases.cu", "sm_90")
    ptx = build_ptx(build)
    entry = _entry(ptx, "phases")
    args, block = [A, B, C, 64, 32, 4], (32,)
    merged = run_warp(ptx, entry, args, block, (1,))
    scalar = run_warp(ptx, entry, args, block, (1,), merge=(False, False))
    assert not scalar.complete and scalar.ffma == merged.ffma == 64
    assert scalar.shared_wavefronts == 33 * 64 and merged.shared_wavefronts == 8.5 * 64
    t = warp_traffic(build, entry, args, block, (1,), 32, merge=(False, False))
    assert t is not None and t.shared_wavefronts == scalar.shared_wavefronts
    mix = dict(compile_build(build)[entry].loop_mix or ())
    rowdot = make_build(ROOT / "tests/fixtures/unrolled/rowdot.cu", "sm_90")
    wide = dict(compile_build(rowdot)[_entry(build_ptx(rowdot), "rowdot")].loop_mix or ())
    if not mix or not wide:
        pytest.skip("no nvdisasm: the SASS is not read")
    assert mix["wide_lds"] == mix["wide_sts"] == 0 and mix["lds_wavefronts"] > 0
    assert wide["wide_lds"] > 0


def test_a_cut_run_through_phases_side_by_side_is_its_unit() -> None:
    """A run cut at MAX_STEPS inside a loop that has not repeated, after two FP loops side by
    side (a conflicted pass, 17 wavefronts an FFMA at 16 lanes, then a broadcast one, 2):
    no one loop's iteration stands for the work, and the unit is the run so far, between
    the two. At 32 lanes the first pass alone fills the run, and its iteration is the unit."""
    need_nvcc()
    ptx = _ptx(ROOT / "tests/fixtures/unrolled/phases.cu")
    entry = _entry(ptx, "phases")
    both = run_warp(ptx, entry, [A, B, C, 64, 16, 8], (16,), (1,), merge=(False, False))
    assert not both.complete and both.steps == MAX_STEPS and both.phases == 1.0
    assert 2 < both.shared_wavefronts / both.ffma < 17
    first = run_warp(ptx, entry, [A, B, C, 64, 32, 4], (32,), (1,), merge=(False, False))
    assert first.steps < MAX_STEPS and first.shared_wavefronts / first.ffma == 33
    assert first.phases == 0.0


PROLOGUE = """
__global__ void pro(const float* a, float* o, int n, int m) {
    int t = threadIdx.x;
    float s = 0.f;
    for (int i = 0; i < n; i++)
        s += a[i * 37 + t] * a[i * 41 + t];
    float acc = 0.f;
    for (int j = 0; j < m; j++)
        acc += a[j * 32 + t] * s;
    o[t] = acc;
}
"""


def test_a_short_fp_prologue_is_not_a_phase(tmp_path: Path) -> None:
    """A run that stops at its steady main loop after a 3-iteration FP loop before it: the
    two loops are not phases of one enclosing loop, and the unit stays the main loop's
    iteration (the run so far would count the prologue in it)."""
    need_nvcc()
    src = tmp_path / "pro.cu"
    src.write_text(PROLOGUE)
    ptx = _ptx(src)
    t = run_warp(ptx, _entry(ptx, "pro"), [A, B, 3, 4000], (32,), (1,))
    assert not t.complete and t.phases == 0.0 and t.steps < 100
    assert t.flops == 2 * 32 * t.ffma and t.global_loads == t.ffma


WARP_ROW = """
.visible .entry rows(.param .u64 p, .param .u32 n)
{
  .reg .pred %p<3>;
  .reg .b32 %r<10>;
  .reg .b64 %rd<6>;
  .reg .f32 %f<3>;
  ld.param.u64 %rd1, [p];
  ld.param.u32 %r1, [n];
  cvta.to.global.u64 %rd2, %rd1;
  mov.u32 %r2, WARP_SZ;
  mov.u32 %r3, %tid.x;
  rem.u32 %r4, %r3, %r2;
  mov.f32 %f1, 0f00000000;
$L_loop:
  setp.ge.s32 %p1, %r4, %r1;
  @%p1 bra $L_done;
  mul.wide.s32 %rd3, %r4, 4;
  add.s64 %rd4, %rd2, %rd3;
  ld.global.f32 %f2, [%rd4];
  add.f32 %f1, %f1, %f2;
  add.s32 %r4, %r4, %r2;
  bra.uni $L_loop;
$L_done:
  ret;
}
"""


def test_warp_size_constant() -> None:
    """`warpSize` reaches PTX as the predefined constant WARP_SZ (llm.c's softmax kernels,
    CUB): a lane strides its row by 32, so a row of 4096 floats is 128 warp loads. Read as
    0 it made `lane = tid % warpSize` and the stride 0, and the warp looked done after 2."""
    t = run_warp(WARP_ROW, "rows", [A, 4096], (32,), (1,), whole=True)
    assert t.complete
    assert t.global_loads == 128 and t.global_load_lines == 128


ATOMICS = """
extern "C" __global__ void l2_norm(const float* a, float* total, int n) {
  __shared__ float part[256];
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  part[threadIdx.x] = i < n ? a[i] * a[i] : 0.0f;
  __syncthreads();
  for (int s = blockDim.x / 2; s > 0; s /= 2) {
    if (threadIdx.x < s) part[threadIdx.x] += part[threadIdx.x + s];
    __syncthreads();
  }
  if (threadIdx.x == 0) atomicAdd(total, part[0]);
}
extern "C" __global__ void per_block(const float* a, float* totals, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) atomicAdd(totals + blockIdx.x, a[i]);
}
extern "C" __global__ void counter(const float* a, int* count, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n && a[i] >= 0.0f) atomicAdd(count, 1);
}
"""


def test_atomics_every_block_shares(tmp_path: Path) -> None:
    """An atomic whose address every block shares (one total) is told from one whose
    address moves with the block, by running warp 0 of block 0 beside the middle block:
    thread 0's one atomicAdd per block is 1/8 per warp of a 256-thread block; a per-block
    total is not contended; every lane adding to one int counter is 32 per warp. The model
    prices them at the measured H200 rate (bench/results/h200-atomics.json)."""
    need_nvcc()
    from occupancy.build.compilers import make_build
    from occupancy.tune.model import ATOMIC_FLOAT_NS, ATOMIC_INT_NS, contended_atomic_seconds
    from occupancy.tune.traffic import warp_traffic

    src = tmp_path / "atomics.cu"
    src.write_text(ATOMICS)
    build = make_build(src, "sm_90")
    n = 1 << 20
    grid = (n // 256,)
    norm = warp_traffic(build, "l2_norm", [A, B, n], (256,), grid, 32, whole=True)
    assert norm is not None and norm.complete
    assert norm.contended_float_atomics * 8 == 1 and norm.contended_addresses == 1
    assert norm.contended_int_atomics == 0
    units = grid[0] * 8
    assert contended_atomic_seconds(norm, units) == pytest.approx(grid[0] * ATOMIC_FLOAT_NS * 1e-9)
    own = warp_traffic(build, "per_block", [A, B, n], (256,), grid, 32, whole=True)
    assert own is not None and own.contended_float_atomics == 0 and own.contended_addresses == 0
    assert contended_atomic_seconds(own, units) == 0
    two = warp_traffic(build, "l2_norm", [A, B, 512], (256,), (2,), 32, whole=True)
    assert two is not None and two.contended_addresses == 0  # block 1's middle is block 0
    count = warp_traffic(build, "counter", [A, B, n], (256,), grid, 32, whole=True)
    assert count is not None and count.contended_int_atomics == 32
    assert contended_atomic_seconds(count, units) == pytest.approx(n * ATOMIC_INT_NS * 1e-9)


# a softmax's row walk (llm.c's kernels at C = 50257): a lane per column, strided by the
# warp, in three consecutive loops of ~1,000 iterations (a max, a sum that also writes and
# stores once more where the index is 22,405, a countdown that writes): past MAX_STEPS
THREE_PASSES = """
.visible .entry passes(.param .u64 out, .param .u64 inp, .param .u32 n)
{
  .reg .pred %p<6>;
  .reg .b32 %r<12>;
  .reg .b64 %rd<12>;
  .reg .f32 %f<8>;
  ld.param.u64 %rd1, [out];
  ld.param.u64 %rd2, [inp];
  ld.param.u32 %r1, [n];
  cvta.to.global.u64 %rd3, %rd1;
  cvta.to.global.u64 %rd4, %rd2;
  mov.u32 %r2, %tid.x;
  mov.f32 %f1, 0fFF800000;
  mov.u32 %r3, %r2;
$L_max:
  setp.ge.s32 %p1, %r3, %r1;
  @%p1 bra $L_sum0;
  mul.wide.s32 %rd5, %r3, 4;
  add.s64 %rd6, %rd4, %rd5;
  ld.global.f32 %f2, [%rd6];
  max.f32 %f1, %f1, %f2;
  add.s32 %r3, %r3, 32;
  bra.uni $L_max;
$L_sum0:
  mov.f32 %f3, 0f00000000;
  mov.u32 %r4, %r2;
$L_sum:
  mul.wide.s32 %rd7, %r4, 4;
  add.s64 %rd8, %rd4, %rd7;
  ld.global.f32 %f4, [%rd8];
  sub.f32 %f5, %f4, %f1;
  ex2.approx.f32 %f5, %f5;
  add.f32 %f3, %f3, %f5;
  add.s64 %rd9, %rd3, %rd7;
  st.global.f32 [%rd9], %f5;
  setp.eq.s32 %p4, %r4, 22405;
  @%p4 st.global.f32 [%rd3], %f3;
  add.s32 %r4, %r4, 32;
  setp.lt.s32 %p2, %r4, %r1;
  @%p2 bra $L_sum;
  mov.u32 %r5, 500;
  mul.wide.s32 %rd10, %r2, 4;
  add.s64 %rd11, %rd3, %rd10;
$L_down:
  st.global.f32 [%rd11], %f3;
  add.s64 %rd11, %rd11, 128;
  add.s32 %r5, %r5, -1;
  setp.ne.s32 %p3, %r5, 0;
  @%p3 bra $L_down;
  ret;
}
"""

# loops whose state does not move by a fixed step: a squared index, a doubling one
# a loop test's entry (inp, n): its registers, the arguments, %r2 the lane, %r3 = 0
LOOP_HEAD = """
{
  .reg .pred %p<4>;
  .reg .b32 %r<12>;
  .reg .b64 %rd<8>;
  .reg .f32 %f<4>;
  ld.param.u64 %rd1, [inp];
  ld.param.u32 %r1, [n];
  mov.u32 %r2, %tid.x;
  mov.u32 %r3, 0;
"""
NOT_AFFINE = """
.visible .entry odd(.param .u64 inp, .param .u32 n)""" + LOOP_HEAD + """$L_sq:
  mul.lo.s32 %r4, %r3, %r3;
  add.s32 %r5, %r4, %r2;
  mul.wide.s32 %rd2, %r5, 4;
  add.s64 %rd3, %rd1, %rd2;
  ld.global.f32 %f1, [%rd3];
  add.s32 %r3, %r3, 1;
  setp.lt.s32 %p1, %r3, 300;
  @%p1 bra $L_sq;
  mov.u32 %r6, 1;
$L_dbl:
  mul.wide.s32 %rd4, %r6, 4;
  add.s64 %rd5, %rd1, %rd4;
  ld.global.f32 %f2, [%rd5];
  shl.b32 %r6, %r6, 1;
  setp.lt.s32 %p2, %r6, %r1;
  @%p2 bra $L_dbl;
  ret;
}
"""


def _unskipped(monkeypatch: pytest.MonkeyPatch, *args: object, **kw: object) -> dict[str, object]:
    """The run with skip-ahead off and a step bound far past what it needs."""
    from dataclasses import asdict

    from occupancy.tune import ptx_run, ptx_skip

    with monkeypatch.context() as m:
        m.setattr(ptx_run, "MAX_STEPS", 1_000_000)
        m.setattr(ptx_skip, "MAX_PROBES", 0)
        return asdict(run_warp(*args, **kw))  # type: ignore[arg-type]


def test_skip_ahead_finishes_long_loops_exactly(monkeypatch: pytest.MonkeyPatch) -> None:
    """Three loops of 1,001, 1,001 and 500 iterations (about 23,000 warp instructions)
    end within MAX_STEPS by jumping through their repeating iterations, with the counters
    of the run that steps through every one: the lanes past the row's end (n = 32 * 1000
    + 17), the lone store at index 22,405 and the countdown's exit by equality are where
    they are, and the sum pass re-reads the max pass's lines."""
    from dataclasses import asdict

    from occupancy.tune.ptx_skip import Skipper

    jumps: list[int] = []
    jump = Skipper._jump
    monkeypatch.setattr(Skipper, "_jump", lambda s, tpl, n: (jumps.append(n), jump(s, tpl, n)))
    args = (THREE_PASSES, "passes", [A, B, 32 * 1000 + 17], (32,), (1,))
    t = run_warp(*args, whole=True)
    assert t.complete and len(jumps) >= 3 and sum(jumps) > 2000
    full = _unskipped(monkeypatch, *args, whole=True)
    assert full["steps"] > 1.5 * MAX_STEPS and asdict(t) == full
    assert (t.global_loads, t.global_stores) == (2 * 1001, 1001 + 1 + 500)
    assert t.reread_lines == 1001 * 1  # each warp load is one line, read again once
    # a run that may stop early skips nothing: its outermost loops end it when steady
    assert not run_warp(*args).complete


def test_a_row_off_its_lines_rereads_each_straddled_line_near(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """The same three passes over a row that starts 68 B into a line (llm.c's softmax at C =
    50,257: row r starts at r x 201,028 B): each warp load straddles two lines, and the
    next load reads the second again. Those 2,000 re-reads are near (the load before
    touched the line: model.reread_miss_bytes leaves them out); the sum pass's re-reads of
    the max pass's lines stay far, at the row's distance. Skipping ahead counts the same."""
    from dataclasses import asdict

    from occupancy.tune.ptx_warp import NEAR_REREAD_BYTES

    aligned = run_warp(THREE_PASSES, "passes", [A, B, 32 * 1000 + 17], (32,), (1,), whole=True)
    args = (THREE_PASSES, "passes", [A, B + 68, 32 * 1000 + 17], (32,), (1,))
    t = run_warp(*args, whole=True)
    assert (t.global_loads, t.global_load_lines) == (2002, 4004)
    assert (aligned.near_reread_lines, t.near_reread_lines) == (0, 2000)
    assert t.near_reread_distance <= 2000 * NEAR_REREAD_BYTES
    lines, distance = t.far_rereads
    assert lines == 1002 and distance / lines > 1000 * 128  # a row's worth of loads between
    # counted as distinct bytes, not as the lines each load touched (two of them): between a
    # line's two loads the warp reads the row once and writes half of it, on average
    row = 4 * (32 * 1000 + 17)
    assert 1.45 * row < distance / lines < 1.55 * row
    assert aligned.far_rereads[0] == 1001
    assert asdict(t) == _unskipped(monkeypatch, *args, whole=True)


def test_skip_ahead_refuses_what_does_not_move_by_a_fixed_step(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """A loop that reads at a squared index, one whose index doubles: no jump, and the
    run counts what the plain run counts."""
    from dataclasses import asdict

    from occupancy.tune.ptx_skip import Skipper

    monkeypatch.setattr(Skipper, "_jump", lambda *a: pytest.fail("jumped"))
    args = (NOT_AFFINE, "odd", [A, 1 << 20], (32,), (1,))
    t = run_warp(*args, whole=True)
    assert t.complete and t.global_loads == 300 + 20
    assert asdict(t) == _unskipped(monkeypatch, *args, whole=True)


WRAP = """
.visible .entry wrap(.param .u64 inp, .param .u32 n)""" + LOOP_HEAD + """$L_w:
  and.b32 %r4, %r3, 3;
  add.s32 %r5, %r4, %r2;
  mul.wide.s32 %rd2, %r5, 4;
  add.s64 %rd3, %rd1, %rd2;
  ld.global.f32 %f1, [%rd3];
  add.s32 %r3, %r3, 1;
  setp.lt.s32 %p1, %r3, %r1;
  @%p1 bra $L_w;
  ret;
}
"""


def test_a_wrapping_index_still_ends_where_it_ended(monkeypatch: pytest.MonkeyPatch) -> None:
    """A loop whose index wraps (i & 3) moves by a fixed step for three iterations and then
    does not: every search fails. Its 1,400 iterations (11,205 steps) ended within MAX_STEPS
    before skip-ahead; the failed probes have a budget of their own and the loop waits
    longer after each, so the run still ends, with the plain run's counters (counted in
    MAX_STEPS, the probes cut it after one iteration)."""
    from dataclasses import asdict

    args = (WRAP, "wrap", [A, 1400], (32,), (1,))
    t = run_warp(*args, whole=True)
    assert t.complete and t.global_loads == 1400
    assert asdict(t) == _unskipped(monkeypatch, *args, whole=True)


def test_skip_ahead_stays_bounded() -> None:
    """An endless loop in a run that only MAX_STEPS ends: the probes have their own budget, the
    jumps are bounded, and the run is measured per iteration. A loop of 2^31 iterations
    ends, counted whole. A warp of 3,000 registers whose loop never repeats by a fixed
    step: each back edge's mark copies every register, until MAX_MARKED (without it,
    4,500 marks of 96,000 values: a minute)."""
    t0 = time.monotonic()
    t = run_warp(SPIN, "spin", [0], (32,), (1,), whole=True)
    assert not t.complete and t.steps == 2
    long = SPIN.replace("bra.uni $L_top;", "setp.lt.s32 %p1, %r6, 2147483647;\n  @%p1 bra $L_top;")
    long = long.replace(".reg .b32 %r<9>;", ".reg .b32 %r<9>;\n  .reg .pred %p<2>;")
    t = run_warp(long, "spin", [0], (32,), (1,), whole=True)
    assert t.complete and t.steps == 3 * 2147483647  # (then it runs off the end)
    movs = "\n".join(f"  mov.u32 %r{i}, {i};" for i in range(2, 3000))
    many = SPIN.replace("$L_top:\n  add.s32 %r6, %r6, 1;", movs + "\n  mov.u32 %r1, 1;\n$L_top:\n"
                        "  mul.lo.s32 %r1, %r1, 3;").replace("%r<9>", "%r<3001>")
    t = run_warp(many, "spin", [0], (32,), (1,), whole=True)
    assert not t.complete and t.steps == 2
    assert time.monotonic() - t0 < 20


ROW_PER_WARP = """
extern "C" __global__ void row_sum(const float* a, float* out, int n) {
  float s = 0.0f;
  for (int i = threadIdx.x; i < n; i += 32) s += a[(long)blockIdx.x * n + i];
  if (threadIdx.x == 0) out[blockIdx.x] = s;
}
"""


def test_a_one_warp_block_is_sampled_on_two_rows(tmp_path: Path) -> None:
    """A block of one warp has no last warp to stand beside warp 0, so the next block's
    warp 0 is the second sample: a row of 1,000 floats starts 32 B further into a 128-B line
    than the one before it, and the two rows re-read their lines at other distances."""
    need_nvcc()
    from occupancy.build.builds import build_ptx
    from occupancy.build.compilers import make_build
    from occupancy.tune.traffic import warp_traffic

    src = tmp_path / "rows.cu"
    src.write_text(ROW_PER_WARP)
    build = make_build(src, "sm_90")
    n, rows = 1000, 64
    args = [A, B, n]
    ptx = build_ptx(build)
    mid = run_warp(ptx, "row_sum", args, (32,), (rows,), whole=True)
    nxt = run_warp(ptx, "row_sum", args, (32,), (rows,), whole=True, next_block=True)
    assert mid.complete and nxt.complete
    assert mid.reread_distance != nxt.reread_distance
    both = warp_traffic(build, "row_sum", args, (32,), (rows,), 32, whole=True)
    assert both is not None
    assert both.reread_distance == pytest.approx((mid.reread_distance + nxt.reread_distance) / 2)
    one = warp_traffic(build, "row_sum", args, (32,), (1,), 32, whole=True)  # no next block
    assert one is not None
    alone = run_warp(ptx, "row_sum", args, (32,), (1,), whole=True)
    assert one.reread_distance == alone.reread_distance


def test_tile_loads_shared_along_a_row_and_a_column() -> None:
    """examples/sgemm <128, 64, 16, 8, 8> at 2048^3 (grid 32 x 16): a block loads a 128 x 16
    tile of A, which every block of its row loads too, and a 16 x 64 tile of B, which every
    block of its column does: of warp 0's bytes, 2/3 are shared along x and 1/3 along y.
    A transpose through a shared tile shares nothing with the blocks of its row or column."""
    need_nvcc()
    from occupancy.build.compilers import make_build
    from occupancy.tune.traffic import warp_traffic

    build = make_build(ROOT / "examples" / "sgemm" / "sgemm.cuh", "sm_90",
                       name_expressions=["sgemm2DBlocktiling<128, 64, 16, 8, 8>"])
    entry = _entry(build_ptx(build), "sgemm")
    t = warp_traffic(build, entry, [2048, 2048, 2048, 1.0, A, B, 0.0, C], (128,), (32, 16), 32)
    assert t is not None and not t.complete and t.barriers
    assert t.x_shared == pytest.approx(2 / 3) and t.y_shared == pytest.approx(1 / 3)
    build = make_build(ROOT / "examples" / "transpose" / "transpose.cuh", "sm_90",
                       name_expressions=["transpose_tiled<32, 8, 1>"])
    entry = _entry(build_ptx(build), "transpose")
    t = warp_traffic(build, entry, [A, B, 2048], (32, 8), (64, 64), 32, whole=True)
    assert t is not None and t.barriers and t.global_loads
    assert t.x_shared == 0 and t.y_shared == 0
