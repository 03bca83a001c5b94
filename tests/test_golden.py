"""The seeds' worked examples and REFERENCE.md's measured traps, as exact golden cases."""

from __future__ import annotations

import pytest

from occupancy import available_dynamic_smem, load_device, solve


@pytest.mark.parametrize(("tile", "threads", "smem", "blocks"),
                         [(8, 64, 512, 32), (16, 256, 2048, 8), (32, 1024, 8192, 2)])
def test_seed_gtx1080_tiled_matmul(tile: int, threads: int, smem: int, blocks: int) -> None:
    # Seed 000: two float tiles of TILE_WIDTH^2 per block; 28 registers from ptxas sm_61.
    dev = load_device("gtx1080")
    assert tile * tile == threads and 2 * tile * tile * 4 == smem
    r = solve(dev, threads, 28, static_shared_memory=smem)
    assert r.active_blocks_per_sm == blocks
    assert r.active_threads_per_sm == 2048 and r.occupancy == 1.0
    assert r.active_blocks_per_sm * r.allocated_shared_memory_per_block == 16 * 1024
    assert dev.shared_memory_per_sm_bytes == 96 * 1024


@pytest.mark.parametrize(("threads", "blocks", "occupancy", "limiter"),
                         [(768, 2, 0.75, "warps"), (32, 32, 0.5, "blocks")])
def test_seed_occupancy_examples(threads: int, blocks: int, occupancy: float,
                                 limiter: str) -> None:
    r = solve(load_device("gtx1080"), threads, 16)
    assert (r.active_blocks_per_sm, r.occupancy) == (blocks, occupancy)
    assert r.limiters == {limiter}


def test_seed_100kb_smem_per_block_on_228kb_sm() -> None:
    r = solve(load_device("h100"), 256, 32, dynamic_shared_memory=100 * 1024)
    assert r.active_blocks_per_sm == 2 and r.limiters == {"shared_memory"}
    assert r.requires_opt_in


def test_h200_per_warp_rounding_and_sub_partition_floor() -> None:
    r = solve(load_device("h200"), 224, 92)
    assert r.active_blocks_per_sm == 2  # not 3: 92*32 rounds to 3,072 per warp
    assert r.allocated_registers_per_block == 7 * 3072


def test_cc52_launch_check_rounds_warps_to_sub_partitions() -> None:
    r = solve(load_device("gtx980"), 416, 72)
    assert r.active_blocks_per_sm == 0 and not r.launchable
    assert "36,864 registers" in r.cannot_launch[0]
    assert "use <= 64 registers or 384 threads" in r.cannot_launch[0]


def test_register_count_that_fits_per_thread_but_not_per_block() -> None:
    r = solve(load_device("v100"), 1024, 72)
    assert r.active_blocks_per_sm == 0
    assert r.cannot_launch == (
        "1 block of 1024 threads at 72 registers needs 73,728 registers; the device allows "
        "65,536 per block: use <= 64 registers or 896 threads",)


@pytest.mark.parametrize("name", ["h200", "a100", "rtx3090"])
def test_reserved_smem_not_counted_toward_default_cap(name: str) -> None:
    dev = load_device(name)
    ok = solve(dev, 128, 32, dynamic_shared_memory=49152, opt_in=False)
    assert ok.active_blocks_per_sm >= 1 and not ok.requires_opt_in
    bad = solve(dev, 128, 32, dynamic_shared_memory=50000, opt_in=False)
    assert bad.active_blocks_per_sm == 0
    assert "cudaFuncAttributeMaxDynamicSharedMemorySize" in bad.cannot_launch[0]


def test_h200_measured_smem_points() -> None:
    dev = load_device("h200")
    assert solve(dev, 128, 32, dynamic_shared_memory=49152, opt_in=False).active_blocks_per_sm == 4
    for dyn, blocks in [(65536, 3), (100000, 2), (232448, 1), (232449, 0)]:
        assert solve(dev, 128, 32, dynamic_shared_memory=dyn).active_blocks_per_sm == blocks, dyn
    r = solve(dev, 128, 32, dynamic_shared_memory=65536)
    assert r.requires_opt_in
    assert any("cudaFuncAttributeMaxDynamicSharedMemorySize, 65536" in n for n in r.notes)


def test_h200_available_smem_for_two_blocks() -> None:
    a = available_dynamic_smem(load_device("h200"), 2, 128, 32)
    assert (a.bytes, a.driver_bytes) == (115_712, 116_736)
    dev = load_device("h200")
    assert solve(dev, 128, 32, dynamic_shared_memory=115_712).active_blocks_per_sm == 2
    assert solve(dev, 128, 32, dynamic_shared_memory=116_736).active_blocks_per_sm == 1


@pytest.mark.parametrize(("carveout", "dyn", "blocks"), [(0, 0, 8), (25, 8192, 7), (50, 8192, 14)])
def test_h200_carveout(carveout: int, dyn: int, blocks: int) -> None:
    r = solve(load_device("h200"), 128, 32, dynamic_shared_memory=dyn, carveout=carveout)
    assert r.active_blocks_per_sm == blocks


def test_launch_bound_is_a_launch_failure() -> None:
    dev = load_device("h200")
    r = solve(dev, 512, 32, max_threads_per_block=256)
    assert r.active_blocks_per_sm == 0 and r.limiters == frozenset()
    assert "launch bound of 256" in r.cannot_launch[0]
    # The same config without the bound: what the occupancy API would say.
    assert solve(dev, 512, 32).active_blocks_per_sm == 4


def test_barriers_limit_from_cc9() -> None:
    h = solve(load_device("h200"), 64, 16, block_barriers=4)
    assert h.block_limits["barriers"] == 16 and h.active_blocks_per_sm == 16
    assert h.limiters == {"barriers"}
    v = solve(load_device("v100"), 64, 16, block_barriers=4)
    assert v.block_limits["barriers"] is None and v.active_blocks_per_sm == 32


def test_partitioned_global_caching_on_gtx1080() -> None:
    dev = load_device("gtx1080")
    on = solve(dev, 1024, 32, partitioned_global_caching=True)
    assert on.partitioned_global_caching and on.active_blocks_per_sm == 2
    off = solve(dev, 1024, 64, partitioned_global_caching=True)
    assert not off.partitioned_global_caching and off.active_blocks_per_sm == 1
    assert any("turned off" in n for n in off.notes)


@pytest.mark.parametrize(("threads", "regs", "static", "blocks", "limiters"), [
    # GT200 (CC 1.3): registers per block in units of 512, warps rounded up to 2.
    (96, 10, 0, 8, {"blocks"}),  # 4 warps x 32 x 10 = 1,280 -> 1,536 per block: 10 by regs
    (192, 20, 0, 4, {"registers"}),  # 6 x 32 x 20 = 3,840 -> 4,096: 4 blocks; warps allow 5
    (64, 8, 5000, 3, {"shared_memory"}),  # 5,000 B -> 5,120 B (512-B units): 16 KB holds 3
])
def test_gt200_old_spreadsheet_rules(threads: int, regs: int, static: int, blocks: int,
                                     limiters: set[str]) -> None:
    r = solve(load_device("gt200"), threads, regs, static_shared_memory=static)
    assert r.active_blocks_per_sm == blocks and r.limiters == limiters


def test_gt200_register_and_thread_maxima() -> None:
    dev = load_device("gt200")
    assert solve(dev, 64, 125).active_blocks_per_sm == 0  # max 124 registers per thread
    assert solve(dev, 576, 8).active_blocks_per_sm == 0  # max 512 threads per block


def test_fermi_per_warp_allocation() -> None:
    # M2050 (CC 2.0): 21 x 32 = 672 -> 704 per warp (64-register units); 46 warps fit.
    r = solve(load_device("m2050"), 256, 21)
    assert r.active_blocks_per_sm == 5 and r.limiters == {"registers"}
    assert r.allocated_registers_per_block == 8 * 704
    assert solve(load_device("m2050"), 64, 64).active_blocks_per_sm == 0  # max 63
