"""CUDA's fixed sizes that every layer checks its input against, defined once."""

from __future__ import annotations

from collections.abc import Sequence

INT32_MAX = 2**31 - 1  # CUDA's own sizes (block dims, grid, smem, counts) are 32-bit ints

# Registers per thread when a kernel's count is not given: 0, as cuda_occupancy.h's
# cudaOccFuncAttributes starts (numRegs = 0): registers are not counted and never limit.
# solve, the what-if Config, best's inputs and every command's -r default to it.
DEFAULT_REGISTERS_PER_THREAD = 0

# cudaDeviceProp.maxThreadsDim: the same on every compute capability from 2.0 to 12.x
MAX_BLOCK_DIMS = (1024, 1024, 64)


def block_shape_problem(block: Sequence[int], threads: int, max_threads: int) -> str | None:
    """Why a block of this shape cannot launch though its thread count could: a dimension
    over CUDA's maxThreadsDim (x and y 1,024, z 64). z's 64 is the limit a block under the
    thread limit can break; a block over it is said so already (None)."""
    if threads > max_threads:
        return None
    for axis, n, most in zip("xyz", block, MAX_BLOCK_DIMS, strict=False):
        if n > most:
            return (f"a block's {axis} dimension of {n} exceeds CUDA's maximum of {most} "
                    f"(maxThreadsDim {MAX_BLOCK_DIMS[0]} x {MAX_BLOCK_DIMS[1]} x "
                    f"{MAX_BLOCK_DIMS[2]})")
    return None
