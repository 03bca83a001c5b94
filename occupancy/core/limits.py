"""CUDA's fixed sizes that every layer checks its input against, defined once."""

from __future__ import annotations

INT32_MAX = 2**31 - 1  # CUDA's own sizes (block dims, grid, smem, counts) are 32-bit ints

# Registers per thread when a kernel's count is not given: 0, as cuda_occupancy.h's
# cudaOccFuncAttributes starts (numRegs = 0): registers are not counted and never limit.
# solve, the what-if Config, best's inputs and every command's -r default to it.
DEFAULT_REGISTERS_PER_THREAD = 0
