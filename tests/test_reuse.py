"""Re-reads L2 still holds (tune/reuse.py) and how far apart ptxsim counts them
(ptx_counters.Distinct): the law measured on the H200 (bench/results/h200-l2reuse)."""

from __future__ import annotations

import random
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import pytest

from occupancy import load_device
from occupancy.core.solver import solve
from occupancy.tune.ptx_counters import FIELDS, Distinct, Traffic
from occupancy.tune.reuse import L2_KEPT_FROM, L2_KEPT_TO, far_kept, l2_kept, reread_miss_bytes
from tests.needs import need_nvcc

ROOT = Path(__file__).resolve().parents[1]
RECORD = ROOT / "bench" / "results" / "h200-l2reuse"


def _traffic(**counts: float) -> Traffic:
    base = dict.fromkeys(FIELDS, 0.0)
    return Traffic(True, 32, **(base | counts))


def test_distinct_counts_each_sector_once_since_a_moment() -> None:
    """The stack distance against a brute-force count over random accesses: the sectors whose
    last touch came after the moment, however often each was touched, each by the share of
    its bytes ever touched (the tree grows past its first 1,024 moments)."""
    rng = random.Random(3)
    d = Distinct()
    history: list[tuple[int, dict[int, int]]] = []
    for k in range(3000):
        masks = {rng.randrange(400): rng.choice([(1 << 32) - 1, 0xF, 0xFFFFFFF0, 1 << 31])
                 for _ in range(rng.randrange(1, 6))}
        history.append((d.touch(masks), masks))
        if k % 37 == 0:
            moment = rng.randrange(0, d.now + 1)
            last: dict[int, int] = {}
            union: dict[int, int] = {}
            for m, ms in history:
                for sector, mask in ms.items():
                    last[sector] = m
                    union[sector] = union.get(sector, 0) | mask
            want = sum(union[x].bit_count() / 32 for x, t in last.items() if t > moment)
            assert d.since(moment) == pytest.approx(want)
    assert len(d.tree) > 1024
    assert d.since(d.now) == 0
    # bytes another warp touches too weigh nothing: a sector half foreign weighs a half
    f = Distinct({1: 0xFFFF, 2: (1 << 32) - 1})
    start = f.touch({0: (1 << 32) - 1})
    f.touch({1: (1 << 32) - 1, 2: (1 << 32) - 1, 3: 0xFF})
    assert f.since(start) == pytest.approx(0.5 + 0.0 + 0.25)


def test_l2_keeps_every_reread_until_its_share_of_the_l2_then_none() -> None:
    """All of them up to L2_KEPT_FROM of the L2, none from L2_KEPT_TO, half at the middle;
    a device without L2 keeps none."""
    h200 = load_device("h200")
    c = h200.l2_cache_bytes
    assert l2_kept(h200, 0.5 * c) == l2_kept(h200, L2_KEPT_FROM * c) == 1.0
    assert l2_kept(h200, L2_KEPT_TO * c) == l2_kept(h200, 3 * c) == 0.0
    assert l2_kept(h200, (L2_KEPT_FROM + L2_KEPT_TO) / 2 * c) == pytest.approx(0.5)
    assert l2_kept(replace(h200, l2_cache_bytes=0), 1.0) == 0.0


def test_rereads_at_two_distances_are_kept_each_at_its_own() -> None:
    """A warp's re-reads at two distances, one where L2 keeps everything and one where it
    keeps nothing: the same mean distance taken alone would put both where L2 keeps half;
    at their own distances one is kept, the other lost (half the lines in all). Bytes every
    warp reads (`shared_bytes`) add once to the footprint."""
    h200 = load_device("h200")
    occ = solve(h200, 256, 24, 0, 8)  # 8 blocks of 8 warps an SM
    resident = 8 * 8 * h200.sm_count
    c = h200.l2_cache_bytes
    near_d, far_d = 0.4 * c / resident, 1.3 * c / resident  # footprints 0.4 and 1.3 of L2
    spread = _traffic(reread_lines=2.0, far_l2_distance=near_d + far_d,
                      far_l2_sq=near_d ** 2 + far_d ** 2)
    assert far_kept(h200, occ, 10 ** 6, spread) == (2.0, pytest.approx(0.5))
    same = _traffic(reread_lines=2.0, far_l2_distance=near_d + far_d,
                    far_l2_sq=2 * ((near_d + far_d) / 2) ** 2)
    mid = l2_kept(h200, (near_d + far_d) / 2 * resident)
    assert far_kept(h200, occ, 10 ** 6, same) == (2.0, pytest.approx(mid))
    # a grid smaller than the GPU holds puts only its own warps between
    assert far_kept(h200, occ, 10, spread)[1] == 1.0
    # a table every warp reads, as large as the L2: counted once, it tips the near ones over
    table = replace(spread, shared_bytes=float(c))
    assert far_kept(h200, occ, 10 ** 6, table) == (2.0, 0.0)
    # none far: nothing to lose
    assert far_kept(h200, occ, 10 ** 6, _traffic()) == (0.0, 1.0)
    # a miss brings the sectors the loads touched in the line, 3 of its 4 here
    assert reread_miss_bytes(h200, occ, 10 ** 6, _traffic(
        reread_lines=2.0, far_l2_distance=near_d + far_d, far_l2_sq=near_d ** 2 + far_d ** 2,
        far_reread_sectors=6.0), 10.0) == pytest.approx(10 * 6 * 32 * 0.5)


def test_the_law_is_the_fit_of_the_h200_record() -> None:
    """bench/l2reuse/fit.py on the committed record's MODE 0 points gives the constants
    tune/reuse.py holds, and fit.txt is its output."""
    out = subprocess.run([sys.executable, str(ROOT / "bench" / "l2reuse" / "fit.py"),
                          str(RECORD / "ncu-table.txt")], capture_output=True, text=True,
                         check=True).stdout
    assert f"a = {L2_KEPT_FROM:.2f} x L2" in out and f"b = {L2_KEPT_TO:.2f} x L2" in out
    assert out == (RECORD / "fit.txt").read_text()
    assert out.startswith("39 points")


def test_the_model_reads_the_output_back_as_the_h200_did() -> None:
    """The check the fit never saw: MODE 1 reads a row, writes it scaled and reads the output
    back (two distances a warp). The model's DRAM reads (ptxsim on the kernel, the law at
    each distance) against Nsight Compute's on all 39 points: median within 3%, none over
    35% (the steps of the law at 64 warps an SM); the committed model-check.txt is the
    same run's output."""
    need_nvcc()
    out = subprocess.run([sys.executable, str(ROOT / "bench" / "l2reuse" / "model_check.py"),
                          str(RECORD / "ncu-table.txt")], capture_output=True, text=True,
                         check=True, cwd=ROOT).stdout
    assert out == (RECORD / "model-check.txt").read_text()
    summary = {line.split(":")[0]: line for line in out.splitlines() if line.startswith("MODE")}
    rows = [line.split() for line in out.splitlines()[1:] if line[:1].isdigit()]
    mode1 = [float(r[5]) / float(r[4]) - 1 for r in rows if r[0] == "1"]
    assert len(mode1) == 39 and "MODE 1: 39 points" in summary["MODE 1"]
    assert sorted(abs(e) for e in mode1)[19] <= 0.03 and max(abs(e) for e in mode1) <= 0.35


ROW_KERNELS = r"""
// one warp on a row of n floats: lane l at i + l for i = 0, step, 2 step, ...
extern "C" __global__ void twice(float* out, const float* in, int n, int step) {
    float s = 0.0f;
    for (int i = 0; i < n; i += step) s += in[i + threadIdx.x];
    for (int i = 0; i < n; i += step) s += in[i + threadIdx.x];
    out[threadIdx.x] = s;
}
extern "C" __global__ void rows(float* out, const float* in, int n, int step) {
    for (int i = 0; i < n; i += step) out[i + threadIdx.x] = in[i + threadIdx.x];
}
// a warp per row, each pass also reading a table every warp reads (a layernorm's weights)
extern "C" __global__ void weighted(float* out, const float* in, const float* w, int n) {
    const float* x = in + (size_t)blockIdx.x * n;
    float s = 0.0f;
    for (int i = threadIdx.x; i < n; i += 32) s += x[i] * w[i];
    for (int i = threadIdx.x; i < n; i += 32) s += x[i] * w[i];
    out[blockIdx.x * 32 + threadIdx.x] = s;
}
// lane l writes every 32nd float: 4 B of a sector each, no sector whole
extern "C" __global__ void scatter(float* out, const float* in, int n, int step) {
    for (int i = 0; i < n; i += step) out[(i + threadIdx.x) * 32] = in[i + threadIdx.x];
}
// the same passes over a row as a layernorm's: two that read it, one that reads it again and
// writes the output, streaming (__stcs) or plain
extern "C" __global__ void passes3(float* out, const float* in, int n, int streaming) {
    float s = 0.0f;
    for (int i = threadIdx.x; i < n; i += 32) s += in[i];
    for (int i = threadIdx.x; i < n; i += 32) s += in[i] * in[i];
    for (int i = threadIdx.x; i < n; i += 32) {
        if (streaming) __stcs(out + i, in[i] * s); else out[i] = in[i] * s;
    }
}
extern "C" __global__ void rewrite(float* out, const float* in, int n, int step) {
    for (int i = 0; i < n; i += step) out[i + threadIdx.x] = in[i + threadIdx.x];
    for (int i = 0; i < n; i += step) out[i + threadIdx.x] *= 2.0f;
}
// a warp per row of n floats, copied (row = block x warps + warp)
extern "C" __global__ void perrow(float* out, const float* in, int n) {
    size_t row = blockIdx.x * (blockDim.x / 32) + threadIdx.x / 32;
    for (int i = threadIdx.x % 32; i < n; i += 32) out[row * n + i] = in[row * n + i];
}
// the same with the rows' blocks along y
extern "C" __global__ void perrow_y(float* out, const float* in, int n) {
    size_t row = blockIdx.y * (blockDim.x / 32) + threadIdx.x / 32;
    for (int i = threadIdx.x % 32; i < n; i += 32) out[row * n + i] = in[row * n + i];
}
// the row added into the output atomically (L2 performs them: no partial sector to merge)
extern "C" __global__ void added(float* out, const float* in, int n, int step) {
    for (int i = 0; i < n; i += step) atomicAdd(out + i + threadIdx.x, in[i + threadIdx.x]);
}
"""


def _row_ptx(tmp_path: Path) -> str:
    from occupancy.build.builds import build_ptx
    from occupancy.build.compilers import make_build

    need_nvcc()
    src = tmp_path / "rows.cu"
    src.write_text(ROW_KERNELS)
    return build_ptx(make_build(src, "sm_90"))


def test_a_second_pass_brings_each_sector_of_the_row_once(tmp_path: Path) -> None:
    """A warp reads a row twice, 4 B past a 32-B boundary: each warp load touches 5 sectors,
    the last shared with the next load. The second pass's far sectors are the row's own,
    each once (the shared one's two parts add to one), not 5 a load; with a gap after each
    load (step 64: the block's next warp would read it) a load's 3 whole sectors and its
    two parts, 28 B and 4 B, make its 128 B: 4 sectors."""
    from occupancy.tune.ptxsim import ARRAY_STRIDE, run_warp

    ptx = _row_ptx(tmp_path)
    a, b = ARRAY_STRIDE, 2 * ARRAY_STRIDE
    n = 32 * 200
    whole = run_warp(ptx, "twice", [a, b + 4, n, 32], (32,), (1,), whole=True)
    assert whole.complete and whole.global_load_sectors == 2 * 200 * 5
    assert whole.far_reread_sectors == pytest.approx(n * 4 / 32)  # its ends' parts: 28 + 4 B
    gaps = run_warp(ptx, "twice", [a, b + 4, 2 * n, 64], (32,), (1,), whole=True)
    assert gaps.far_reread_sectors == pytest.approx(200 * 4)


def test_stores_leave_open_only_the_sectors_another_warp_completes(tmp_path: Path) -> None:
    """A warp copying a row 4 B past a sector boundary: stored contiguously, each store
    completes the sector the one before left partly written, and only the row's two ends
    stay open; with a gap after each store (step 64, the block's next warp writes it) both
    ends of every store stay open. A store that fills no whole sector opens nothing
    (scattered writes are the scatter roof's, not this); atomics split nothing (L2 performs
    them)."""
    from occupancy.tune.ptxsim import ARRAY_STRIDE, run_warp

    ptx = _row_ptx(tmp_path)
    a, b = ARRAY_STRIDE, 2 * ARRAY_STRIDE
    n = 32 * 200
    contiguous = run_warp(ptx, "rows", [a + 4, b, n, 32], (32,), (1,), whole=True)
    assert contiguous.complete and contiguous.partial_store_sectors == 2 * 200
    assert contiguous.open_store_sectors == 2
    assert contiguous.split_store_sectors == 2 * 200  # every store's ends, completed or not
    strided = run_warp(ptx, "rows", [a + 4, b, 2 * n, 64], (32,), (1,), whole=True)
    assert strided.open_store_sectors == strided.split_store_sectors == 2 * 200
    aligned = run_warp(ptx, "rows", [a, b, n, 32], (32,), (1,), whole=True)
    assert aligned.open_store_sectors == aligned.split_store_sectors == 0
    # the same parts written again (the copy scaled in place) are left open again: a second
    # partial write for the other warp to complete, where the first may already be gone
    again = run_warp(ptx, "rewrite", [a + 4, b, 2 * n, 64], (32,), (1,), whole=True)
    assert (again.global_stores, again.open_store_sectors) == (2 * 200, 2 * 2 * 200)
    own = run_warp(ptx, "rewrite", [a + 4, b, n, 32], (32,), (1,), whole=True)
    assert own.open_store_sectors == 2 * 2  # the row's two ends, each pass
    added = run_warp(ptx, "added", [a + 4, b, n, 32], (32,), (1,), whole=True)
    assert added.global_stores == 200 and added.split_store_sectors == 0
    scattered = run_warp(ptx, "scatter", [a, b, n, 32], (32,), (1,), whole=True)
    assert scattered.partial_store_sectors == 32 * 200
    assert scattered.open_store_sectors == scattered.split_store_sectors == 0


def test_a_row_written_twice_far_apart_is_written_twice(tmp_path: Path) -> None:
    """A warp copies its row, then scales the copy in place: each sector is stored again,
    counted once, after the distinct bytes of the rest of both rows and the part of the copy
    the second pass went over first: 1.5 rows on average."""
    from occupancy.tune.ptxsim import ARRAY_STRIDE, run_warp

    ptx = _row_ptx(tmp_path)
    a, b = ARRAY_STRIDE, 2 * ARRAY_STRIDE
    n = 32 * 200
    for offset in (0, 4, 68):  # on its sectors, and off them (each store's last sector
        # completed by the next store: its bytes at the far touch's distance, not the near)
        t = run_warp(ptx, "rewrite", [a + offset, b, n, 32], (32,), (1,), whole=True)
        assert t.complete and t.far_rewrite_sectors == pytest.approx(n * 4 / 32)
        mean = t.far_rewrite_distance / t.far_rewrite_sectors
        assert 1.45 * n * 4 < mean < 1.55 * n * 4, offset


def test_read_backs_follow_the_blocks_an_sm_holds() -> None:
    """The measured shares at their counts, between them linear in log2(blocks), the nearest
    outside; bytes only where stores left sectors open."""
    from occupancy.tune.reuse import READ_BACK_BY_BLOCKS, by_blocks, read_back_bytes

    for blocks, share in READ_BACK_BY_BLOCKS:
        assert by_blocks(READ_BACK_BY_BLOCKS, blocks) == pytest.approx(share)
    (b0, p0), (b1, p1) = READ_BACK_BY_BLOCKS[2:4]
    assert by_blocks(READ_BACK_BY_BLOCKS, (b0 * b1) ** 0.5) == pytest.approx((p0 + p1) / 2)
    assert by_blocks(READ_BACK_BY_BLOCKS, 1) == READ_BACK_BY_BLOCKS[0][1]
    assert by_blocks(READ_BACK_BY_BLOCKS, 64) == READ_BACK_BY_BLOCKS[-1][1]
    h200 = load_device("h200")
    occ = solve(h200, 128, 32, 0, 0)  # 16 blocks of 128 an SM
    assert occ.active_blocks_per_sm == 16
    assert read_back_bytes(h200, occ, 10 ** 5, _traffic(open_store_sectors=3.0), 10.0) \
        == pytest.approx(10 * 3 * 32 * by_blocks(READ_BACK_BY_BLOCKS, 16))
    assert read_back_bytes(h200, occ, 10 ** 5, _traffic(), 10.0) == 0.0


def test_merging_partial_sectors_costs_dram_time_not_bytes() -> None:
    """Each end of a split store costs SPLIT_SECTOR_BYTES of DRAM time, one left open for
    another warp OPEN_SECTOR_BYTES_BY_BLOCKS more at the SM's blocks; the kernel's DRAM bytes
    (what Nsight Compute counts) stay as they were. The cost is the throughput's: where the
    warps' loads in flight already bound the time below it, it shows; where they bound it
    above, it hides in their wait."""
    from occupancy.tune.model import predict_work
    from occupancy.tune.reuse import (
        OPEN_SECTOR_BYTES_BY_BLOCKS,
        SPLIT_SECTOR_BYTES,
        by_blocks,
        store_merge_bytes,
    )

    h200 = load_device("h200")
    occ = solve(h200, 128, 32, 0, 0)  # 16 blocks of 128 an SM
    split = _traffic(split_store_sectors=2.0)
    both = _traffic(split_store_sectors=2.0, open_store_sectors=2.0)
    assert store_merge_bytes(h200, occ, 10 ** 5, _traffic(), 10.0) == 0.0
    assert store_merge_bytes(h200, occ, 10 ** 5, split, 10.0) == 10 * 2 * SPLIT_SECTOR_BYTES
    assert store_merge_bytes(h200, occ, 10 ** 5, both, 10.0) == pytest.approx(
        10 * 2 * (SPLIT_SECTOR_BYTES + by_blocks(OPEN_SECTOR_BYTES_BY_BLOCKS, 16)))
    # a warp of a 128-thread block copying its rows, `n` warp stores of 128 B and as many
    # loads, all in flight at once (no SASS read: the run's loads are one batch), against the
    # same with both ends of each store split
    def copy(n: float, split: float) -> Traffic:
        return _traffic(global_loads=n, global_load_lines=n, global_load_sectors=4 * n,
                        load_bytes=128 * n, global_stores=n, global_store_lines=n,
                        global_store_sectors=4 * n, steps=6 * n, split_store_sectors=split)

    grid = 132 * 16 * 100
    cost = 2 * SPLIT_SECTOR_BYTES / 256  # the merges against the bytes a store and its load move
    plain = predict_work(h200, occ, grid, 0.0, 64 * 256.0 * 4 * grid, 32, None, copy(64, 0), 0.5)
    merged = predict_work(h200, occ, grid, 0.0, 64 * 256.0 * 4 * grid, 32, None,
                          copy(64, 128), 0.5)
    assert plain.bound == merged.bound == "dram" and plain.hiding > 0.99
    assert merged.dram_bytes == plain.dram_bytes
    assert merged.roofs_ms["dram"] == pytest.approx(plain.roofs_ms["dram"] * (1 + cost))
    # one load in flight a warp at 2 blocks an SM: the wait is longer than the merges
    few = solve(h200, 128, 32, 0, 80_000)
    assert few.active_blocks_per_sm == 2
    slow = predict_work(h200, few, grid, 0.0, 256.0 * 4 * grid, 32, None, copy(1, 0), 0.5)
    slow_merged = predict_work(h200, few, grid, 0.0, 256.0 * 4 * grid, 32, None, copy(1, 2), 0.5)
    assert slow.bound == "dram" and slow.hiding < 1 / (1 + cost)
    assert slow_merged.roofs_ms["dram"] == pytest.approx(slow.roofs_ms["dram"])


def test_a_second_store_is_a_second_write_once_l2_let_the_first_go() -> None:
    """Sectors stored again far apart: written back twice where the footprint between the two
    stores passes what L2 keeps, once where it holds them."""
    from occupancy.tune.reuse import rewrite_miss_bytes

    h200 = load_device("h200")
    occ = solve(h200, 256, 24, 0, 8)
    resident = 8 * 8 * h200.sm_count
    c = h200.l2_cache_bytes
    far = _traffic(far_rewrite_sectors=10.0, far_rewrite_distance=10 * 2.0 * c / resident)
    near = _traffic(far_rewrite_sectors=10.0, far_rewrite_distance=10 * 0.3 * c / resident)
    assert rewrite_miss_bytes(h200, occ, 10 ** 6, far, 5.0) == pytest.approx(5 * 10 * 32)
    assert rewrite_miss_bytes(h200, occ, 10 ** 6, near, 5.0) == 0.0
    assert rewrite_miss_bytes(h200, occ, 10 ** 6, _traffic(), 5.0) == 0.0


def test_what_every_warp_reads_is_not_in_one_warps_footprint(tmp_path: Path) -> None:
    """A warp per row whose passes also read a table every warp reads: between its two loads
    of a line of its row it reads the rest of its row and the table. Told the bytes another
    warp of the sample touched (run_warp's `foreign`: the table), its distances leave the
    table out (L2 holds one copy for every warp), and the bytes both touch are the table's."""
    from occupancy.tune.ptxsim import ARRAY_STRIDE, run_warp

    ptx = _row_ptx(tmp_path)
    a, b, c = ARRAY_STRIDE, 2 * ARRAY_STRIDE, 3 * ARRAY_STRIDE
    n = 32 * 64
    first: dict[int, int] = {}
    alone = run_warp(ptx, "weighted", [a, b, c, n], (32,), (3,), whole=True, touched=first)
    second: dict[int, int] = {}
    told = run_warp(ptx, "weighted", [a, b, c, n], (32,), (3,), whole=True, next_block=True,
                    foreign=first, touched=second)
    both = sum((m & first.get(x, 0)).bit_count() for x, m in second.items())
    assert both == 4 * n  # the table
    row = 4 * n
    assert alone.far_rereads[1] / alone.far_rereads[0] == pytest.approx(2 * row, rel=0.02)
    assert told.far_rereads[1] / told.far_rereads[0] == pytest.approx(row, rel=0.02)


def test_the_sample_holds_what_every_warp_reads_once(tmp_path: Path) -> None:
    """traffic.warp_traffic on a warp per row whose passes read a table every warp reads: the
    sample's second warp (the next block's) and the first, run again, leave the table out
    of their distances, and the table's bytes are the sample's shared_bytes."""
    from occupancy.build.compilers import make_build
    from occupancy.tune.ptxsim import ARRAY_STRIDE
    from occupancy.tune.traffic import warp_traffic

    need_nvcc()
    src = tmp_path / "rows.cu"
    src.write_text(ROW_KERNELS)
    build = make_build(src, "sm_90")
    a, b, c = ARRAY_STRIDE, 2 * ARRAY_STRIDE, 3 * ARRAY_STRIDE
    n = 32 * 64
    t = warp_traffic(build, "weighted", [a, b, c, n], (32,), (8,), 32, whole=True)
    assert t is not None and t.complete
    assert t.shared_bytes == 4 * n
    assert t.far_rereads[1] / t.far_rereads[0] == pytest.approx(4 * n, rel=0.02)


def test_the_store_ends_are_the_rows_mean_not_the_sampled_rows(tmp_path: Path) -> None:
    """traffic.warp_traffic on a warp per row of 641 floats (a pitch 4 B past a multiple of
    32: 7 rows in 8 start off their sectors, each of their 20 whole warp stores splitting
    two sectors, the 21st storing one float): the split sectors are the rows' mean, 35 a
    warp, with 1, 2, 3, 6 or 8 warps a block, rows indexed along x or y, and a grid of one
    block of 8 warps. The two warps of the middle block alone say 20, 40 or 20 with 1, 2
    or 8 warps; rows on y were not sampled at all (0). Rows on their sectors (a pitch of
    640 floats) split nothing."""
    from occupancy.build.compilers import make_build
    from occupancy.tune.ptxsim import ARRAY_STRIDE
    from occupancy.tune.traffic import warp_traffic

    need_nvcc()
    src = tmp_path / "rows.cu"
    src.write_text(ROW_KERNELS)
    build = make_build(src, "sm_90")
    a, b = ARRAY_STRIDE, 2 * ARRAY_STRIDE
    for kernel, threads, grid in (("perrow", 32, (64,)), ("perrow", 64, (64,)),
                                  ("perrow", 96, (64,)), ("perrow", 192, (64,)),
                                  ("perrow", 256, (64,)), ("perrow", 256, (1,)),
                                  ("perrow_y", 64, (1, 64))):
        t = warp_traffic(build, kernel, [a, b, 641], (threads,), grid, 32, whole=True)
        assert t is not None and t.complete and t.global_stores == 21
        assert t.split_store_sectors == pytest.approx(35), (kernel, threads, grid)
    on = warp_traffic(build, "perrow", [a, b, 640], (256,), (64,), 32, whole=True)
    assert on is not None and on.global_stores == 20 and on.split_store_sectors == 0


def test_streaming_stores_take_no_room_in_l2(tmp_path: Path) -> None:
    """A layernorm's passes: the third reads the row again and writes the output. Written
    with __stcs (PTX st.global.cs, evict first), the output adds nothing to the re-reads'
    distances as L2 sees them (far_l2_distance), where L1's (reread_distance) keep it;
    written plainly, both count it."""
    from occupancy.tune.ptxsim import ARRAY_STRIDE, run_warp

    ptx = _row_ptx(tmp_path)
    a, b = ARRAY_STRIDE, 2 * ARRAY_STRIDE
    n = 32 * 64
    plain = run_warp(ptx, "passes3", [a, b, n, 0], (32,), (1,), whole=True)
    stream = run_warp(ptx, "passes3", [a, b, n, 1], (32,), (1,), whole=True)
    assert plain.far_rereads == stream.far_rereads
    assert plain.far_l2_distance == pytest.approx(plain.far_rereads[1])
    assert stream.far_l2_distance < 0.9 * stream.far_rereads[1]
    row = 4 * n  # the input's row alone between a line's two reads, in L2's view
    assert stream.far_l2_distance / stream.far_rereads[0] == pytest.approx(row, rel=0.02)


def test_tile_names_stores_off_their_sectors() -> None:
    """`tile`'s findings name the points whose warp stores leave sectors partly written (one
    or more a store) and the worst of them, and nothing where the stores fill their sectors."""
    from occupancy.tune.ranked import Point, Ranked, findings

    h200 = load_device("h200")
    occ = solve(h200, 128, 32, 0, 0)

    def point(block: int, split: float) -> Ranked:
        t = _traffic(global_stores=10.0, global_store_sectors=40.0 + split,
                     partial_store_sectors=split, split_store_sectors=split)
        return Ranked(Point({"B": block}, "k", (), (block,), (4096,), 0), None, occ, None, (),
                      traffic=t)

    said = findings([point(64, 20.0), point(128, 10.0), point(256, 0.0)], h200)
    assert len(said) == 1 and said[0].startswith("Stores off their 32-byte sectors in 2 of 3")
    assert "2.0 partly written sectors a warp store (B=64)" in said[0]
    assert findings([point(64, 5.0), point(256, 0.0)], h200) == []  # half a store: not named


# bench/results/h200-sass-stalls (summary.txt, 1; its measure logs' blocks an SM): point ->
# (BM, BN, threads a block, blocks an SM, n), each a square GEMM through tiles of A (BM rows,
# which the blocks of a grid row share) and of B (BN columns, a grid column's)
NSIGHT_L2_POINTS = {"sgemm1d_best": (64, 64, 256, 4, 2048), "vec_best": (128, 128, 512, 2, 2048),
                    "own_sgemm": (64, 128, 128, 3, 2048), "own_best_8192": (64, 128, 128, 3, 8192),
                    "own_one_block": (128, 128, 512, 1, 8192),
                    "sgemm2d_c": (128, 64, 256, 2, 2048), "sgemm2d_d": (128, 128, 256, 2, 2048),
                    "wt_fast": (128, 128, 256, 2, 2048), "wt_lead": (128, 128, 128, 3, 2048)}


def test_panel_hits_match_nsight_on_the_h200() -> None:
    """panel_hit_share against the L2 hit rates Nsight Compute measured on nine SGEMM points
    (50-89%): within 7 points on each with the H200's two L2 partitions (the one-block point
    at 8192^3 at 49% against 50%); a single L2 would put that point 25 points high. Fewer
    blocks at once share fewer tiles; nothing shared, nothing hits; a chip with one L2
    (the V100) misses half as often."""
    from occupancy.tune.reuse import panel_hit_share

    h200 = load_device("h200")
    table = (RECORD.parent / "h200-sass-stalls" / "summary.txt").read_text().splitlines()
    measured = {r.split()[0]: float(r.split()[13].rstrip("%")) / 100 for r in table[2:11]}
    assert set(measured) == set(NSIGHT_L2_POINTS)
    for name, (bm, bn, threads, blocks, n) in NSIGHT_L2_POINTS.items():
        occ = solve(h200, threads, 65536 // (threads * blocks) // 8 * 8)
        assert occ.active_blocks_per_sm == blocks, name
        t = _traffic(x_shared=bm / (bm + bn), y_shared=bn / (bm + bn))
        hit = panel_hit_share(h200, occ, (n // bn, n // bm), t)
        assert abs(hit - measured[name]) < 0.07, (name, hit, measured[name])
    one = solve(h200, 512, 128)
    t = _traffic(x_shared=0.5, y_shared=0.5)
    assert panel_hit_share(h200, one, (64, 64), t) == pytest.approx(1 - 2 * 67 / 264)
    assert panel_hit_share(h200, one, (64, 64), _traffic()) == 0
    v100 = load_device("v100")
    single = panel_hit_share(v100, solve(v100, 512, 128), (64, 64), t)
    assert v100.sm_count == 80 and single == pytest.approx(1 - (2 + 64) / 2 / 80)


def test_panel_hits_wait_l2_only_where_blocks_do_not_run_in_step() -> None:
    """The first round's blocks load their shared tiles at once, and one block an SM runs in
    step with its peers every round (a hit on a line still on its way waits as long as the
    miss): a grid of one round, or of one block an SM, keeps DRAM's latency for all of its
    tile loads; 3 blocks an SM over 4,096 blocks wait L2's for 2 in 3 of the hits of the
    blocks dealt after the first 396 (bench/results/h200-l2panel)."""
    from occupancy.tune.reuse import panel_hit_share, panel_l2_share

    h200 = load_device("h200")
    t = _traffic(x_shared=0.5, y_shared=0.5)
    one = solve(h200, 512, 128)
    assert panel_l2_share(h200, one, (64, 64), t) == 0
    three = solve(h200, 128, 168)
    assert three.active_blocks_per_sm == 3
    assert panel_l2_share(h200, three, (12, 33), t) == 0  # 396 blocks: one round
    hit = panel_hit_share(h200, three, (64, 64), t)
    assert 0.5 < hit < 1
    assert panel_l2_share(h200, three, (64, 64), t) == pytest.approx(
        hit * (1 - 396 / 4096) * (1 - 1 / 3))
    assert panel_l2_share(h200, three, (64, 64), _traffic()) == 0
