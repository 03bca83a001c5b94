"""What the solver tells a user, word for word: the cannot-launch reasons with their fixes,
the notes, the opt-in flag and the input errors. The differential test checks the numbers
against cuda_occupancy.h; these pin the explanations the header does not have (mutation
testing found them unchecked)."""

from __future__ import annotations

from typing import Any

import pytest

from occupancy import load_device
from occupancy.core.errors import OccupancyError
from occupancy.core.solver import solve

H200, V100, GTX1080 = load_device("h200"), load_device("v100"), load_device("gtx1080")
OPT_IN_NOTE = ("needs cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, "
               "{0}): {1} B is over the default 49,152 B per block")

CASES: list[tuple[str, Any, dict[str, Any], int, bool, int, tuple[str, ...], tuple[str, ...]]] = [
    ("fits, no opt-in", H200, {"static_shared_memory": 1024}, 8, False, 2048, (), ()),
    ("dynamic over 48 KB, opting in", H200, {"dynamic_shared_memory": 102400}, 2, True, 103424,
     (), (OPT_IN_NOTE.format(102400, "102,400"),)),
    ("dynamic over 48 KB, never opting in", H200,
     {"dynamic_shared_memory": 102400, "opt_in": False}, 0, False, 103424,
     ("102,400 B of shared memory per block (+1,024 B reserved, 103,424 B allocated) exceeds "
      "the default per-block limit of 49,152 B: opt in with cudaFuncSetAttribute(kernel, "
      "cudaFuncAttributeMaxDynamicSharedMemorySize, 102400) or use <= 49,152 B",), ()),
    ("static over 48 KB", H200, {"static_shared_memory": 51200}, 0, False, 52224,
     ("51,200 B of static shared memory exceeds the 49,152 B that static __shared__ arrays may "
      "use per block (ptxas refuses it): move the array to dynamic shared memory (extern "
      "__shared__, the launch's third argument) and opt in with cudaFuncSetAttribute(kernel, "
      "cudaFuncAttributeMaxDynamicSharedMemorySize, bytes)",), ()),
    ("over the opt-in limit", H200, {"static_shared_memory": 40960, "dynamic_shared_memory": 204800},
     0, False, 246784,
     ("245,760 B of shared memory per block (+1,024 B reserved, 246,784 B allocated) exceeds "
      "the opt-in per-block limit of 232,448 B: use <= 191,488 B of dynamic smem",), ()),
    ("carveout rounds up", H200, {"dynamic_shared_memory": 10000, "carveout": 25}, 5, False,
     11136, (), ("carveout 25% of 233,472 B rounds up to 65,536 B of shared memory per SM",)),
    ("carveout too small for a block", H200, {"dynamic_shared_memory": 100000, "carveout": 0}, 1,
     True, 101120, (),
     ("carveout 0% cannot hold one block of 101,120 B; the driver configures 102,400 B instead",
      OPT_IN_NOTE.format(100000, "100,000"))),
    ("fixed shared memory", GTX1080, {"carveout": 50}, 8, False, 0, (),
     ("carveout 50% ignored: NVIDIA GeForce GTX 1080 has a fixed shared-memory size",)),
    ("exactly the opt-in limit, never opting in", H200,
     {"dynamic_shared_memory": 232448, "opt_in": False}, 0, False, 233472,
     ("232,448 B of shared memory per block (+1,024 B reserved, 233,472 B allocated) exceeds "
      "the default per-block limit of 49,152 B: opt in with cudaFuncSetAttribute(kernel, "
      "cudaFuncAttributeMaxDynamicSharedMemorySize, 232448) or use <= 49,152 B",), ()),
    ("over the opt-in limit, never opting in", H200,
     {"dynamic_shared_memory": 307200, "opt_in": False}, 0, False, 308224,
     ("307,200 B of shared memory per block (+1,024 B reserved, 308,224 B allocated) exceeds "
      "the default per-block limit of 49,152 B: use <= 49,152 B of dynamic smem",), ()),
    ("carveout exactly one block", H200, {"dynamic_shared_memory": 64512, "carveout": 25}, 1,
     True, 65536, (), ("carveout 25% of 233,472 B rounds up to 65,536 B of shared memory per SM",
                       OPT_IN_NOTE.format(64512, "64,512"))),
    ("too many barriers", H200, {"threads_per_block": 64, "block_barriers": 65}, 0, False, 1024,
     ("65 barriers per block exceed the 64 available per SM",), ()),
    ("partitioned caching where there is none", V100, {"partitioned_global_caching": True}, 8,
     False, 0, (), ("partitioned global caching does not exist on NVIDIA Tesla V100 SXM2: "
                    "ignored",)),
    ("partitioned caching turned off", GTX1080,
     {"threads_per_block": 1024, "registers_per_thread": 64, "partitioned_global_caching": True},
     1, False, 0, (), ("partitioned global caching turned off: a block does not fit in half an "
                       "SM",)),
    ("launch bound", V100, {"threads_per_block": 512, "max_threads_per_block": 256}, 0, False, 0,
     ("a block of 512 threads exceeds the kernel's launch bound of 256 (__launch_bounds__); the "
      "occupancy API ignores launch bounds, but this launch fails",), ()),
    ("block too large", V100, {"threads_per_block": 1056}, 0, False, 0,
     ("a block of 1056 threads exceeds the device's maximum of 1024 threads per block",), ()),
]


CARVED = {"carveout rounds up": 65536, "carveout exactly one block": 65536,
          "carveout too small for a block": 102400}


@pytest.mark.parametrize(("name", "dev", "kw", "blocks", "opt_in", "allocated", "problems", "notes"),
                         CASES, ids=[c[0] for c in CASES])
def test_what_the_solver_says(name: str, dev: Any, kw: dict[str, Any], blocks: int,
                              opt_in: bool, allocated: int, problems: tuple[str, ...],
                              notes: tuple[str, ...]) -> None:
    r = solve(dev, **{"threads_per_block": 256, "registers_per_thread": 32, **kw})
    assert r.active_blocks_per_sm == blocks
    assert r.requires_opt_in is opt_in
    assert r.allocated_shared_memory_per_block == allocated
    assert r.cannot_launch == problems
    assert r.notes == notes
    # the SM's shared memory is reported whether or not a block fits
    assert r.shared_memory_per_sm_bytes == CARVED.get(name, dev.shared_memory_per_sm_bytes)


@pytest.mark.parametrize(("kw", "message"), [
    ({"threads_per_block": 0}, "threads per block must be a positive integer, got 0"),
    ({"threads_per_block": 2**31},
     "threads per block: 2147483648 is over 2,147,483,647, more than CUDA's own 32-bit sizes hold"),
    ({"registers_per_thread": 2**31}, "registers per thread: 2147483648 is over"),
    ({"static_shared_memory": 2**31}, "static shared memory: 2147483648 is over"),
    ({"dynamic_shared_memory": 2**31}, "dynamic shared memory: 2147483648 is over"),
    ({"max_threads_per_block": 2**31}, "the launch bound: 2147483648 is over"),
    ({"block_barriers": 2**31}, "block barriers: 2147483648 is over"),
    ({"virtual_resources": 2**31}, "virtual resources: 2147483648 is over"),
    ({"registers_per_thread": -1}, "registers per thread must be >= 0, got -1"),
    ({"static_shared_memory": -1}, "shared memory sizes must be >= 0 bytes"),
    ({"dynamic_shared_memory": -1}, "shared memory sizes must be >= 0 bytes"),
    ({"carveout": 101}, "carveout is a percentage 0-100, got 101"),
    ({"carveout": -1}, "carveout is a percentage 0-100, got -1"),
    ({"max_threads_per_block": 0}, "the launch bound must be a positive integer, got 0"),
    ({"block_barriers": -1}, "block barriers must be >= 0, got -1"),
    ({"virtual_resources": -1}, "virtual resources must be >= 0, got -1"),
])
def test_input_errors(kw: dict[str, Any], message: str) -> None:
    with pytest.raises(OccupancyError) as e:
        solve(H200, **{"threads_per_block": 64, **kw})
    assert str(e.value).startswith(message)


def test_edges_that_are_allowed() -> None:
    """The bounds themselves are valid inputs: 0 % and 100 % carveouts, 0 barriers, 48 KB of
    static shared memory. A 0 % carveout still holds the 1 KB each block reserves: the
    smallest size, 8 KB, holds 8."""
    assert solve(H200, 64, 0, 0, 0, carveout=0).active_blocks_per_sm == 8
    assert solve(H200, 64, 0, 0, 0, carveout=100).active_blocks_per_sm == 32
    assert solve(H200, 64, block_barriers=0, max_threads_per_block=64).active_blocks_per_sm == 32
    assert solve(H200, 2**10, 2**5, 49152).active_blocks_per_sm == 2


def test_defaults_and_bounds() -> None:
    """One barrier and no virtual resources unless told; 2^31 - 1 is still a size; a
    cluster is three dimensions of 1-1024."""
    r = solve(H200, 32)
    assert r.block_limits["barriers"] == 64 and r.block_limits["virtual_resources"] is None
    assert r.block_limits["registers"] is None  # 0 registers: no register limit
    assert solve(load_device("b200"), 32).block_limits["virtual_resources"] is None
    big = solve(H200, 64, static_shared_memory=2**31 - 1)
    assert big.active_blocks_per_sm == 0 and big.cannot_launch
    for bad in ((0, 1, 1), (1, 2), (2000, 1, 1), (1.5, 1, 1)):
        with pytest.raises(OccupancyError, match="a cluster is"):
            solve(H200, 64, cluster=bad)  # type: ignore[arg-type]


def test_what_is_reported_beside_the_answer() -> None:
    """The carveout's capacity even when no block fits, the device key, the virtual
    resources asked for, and a cluster judged with the launch's grid and 0 active blocks
    when none fits; cluster dimensions up to 1024 are accepted (and then judged)."""
    assert solve(H200, 256, 32, 51200, carveout=25).shared_memory_per_sm_bytes == 65536
    assert solve(H200, 256, 32, 0, 307200, carveout=25, opt_in=False
                 ).shared_memory_per_sm_bytes == 65536
    r = solve(H200, 32)
    assert r.device == "h200" and r.virtual_resources == 0
    assert solve(load_device("b200"), 32, virtual_resources=4).virtual_resources == 4
    r = solve(H200, 128, cluster=(2, 1, 1), grid=(3, 1, 1))
    assert r.cannot_launch == ("the grid 3x1x1 is not a multiple of the cluster 2x1x1 in "
                               "every dimension",)
    r = solve(H200, 128, 32, 51200, cluster=(2, 1, 1))
    assert r.cluster is not None and r.cluster.active_clusters == 0
    assert r.cannot_launch[-1] == "no block of this launch fits on an SM"
    big = solve(H200, 64, cluster=(1024, 1, 1)).cluster
    assert big is not None and big.problems == (
        "a cluster of 1024 blocks exceeds the 16 NVIDIA H200 allows (portable: 8)",)
    with pytest.raises(OccupancyError, match="a cluster is"):
        solve(H200, 64, cluster=(1025, 1, 1))
