"""One warp of a kernel, run on its PTX: the addresses it touches.

SASS says how wide a shared-memory access is, not which banks its lanes hit; the
declared DRAM bytes say nothing of how many 128-byte lines a warp's global load spans.
Both decide the speed of real kernels (a transpose's 32-way column read, llm.c's
row-per-thread loads), so ptxsim runs one warp of one block through the kernel's
PTX with the launch's real arguments (sizes as numbers, arrays as aligned base
addresses, data as zeros) and counts, per warp instruction, the shared-memory
wavefronts (`banks.bank_conflicts`), the global lines and sectors, the barriers and the
floating-point work.

The warp runs in lock step with per-lane program counters (the lanes at the lowest
counter step together, the usual reconvergence rule for structured code). ptxas merges
scalar shared accesses at consecutive offsets of one base register into 64- and 128-bit
ones when the address is aligned; that is applied here too, per basic block, so the
wavefronts are those of the SASS. The run stops at MAX_STEPS warp instructions, a fixed
bound that no input changes (or earlier, once three iterations of a loop with
floating-point work repeat exactly): a kernel that runs longer is measured per iteration
of its hottest loop (the backward branch whose iterations hold the most floating-point
work), a kernel that ends before it, per warp. A run followed to its end (a kernel
without declared FLOPs) jumps through the iterations of a loop whose state moves by a
fixed step, with the counters they would add, so that a warp walking a long row (a
softmax's three passes over 50,257 columns) still ends within the bound.

Data-dependent addresses (gathers through loaded indices) see zeros; unknown
instructions leave their destination at zero. It is an estimate of the access pattern,
exact for the affine addressing of tiled kernels.

The emulator, by job: ptx_parse (the PTX text decoded, ptxas's vector merges, the address
space), ptx_warp (a warp's registers, operands and the accesses it counts), ptx_alu (what
the other instructions compute), ptx_run (the lock-step run and where it stops), ptx_skip
(the jumps through repeating loops) and ptx_counters (the counters, the unit a run
reports, a block's sample of two warps). This
module is their one face: the names the rest of the package uses.
"""

from __future__ import annotations

from occupancy.tune.ptx_counters import FIELDS, Traffic, block_sample
from occupancy.tune.ptx_parse import (
    ARRAY_STRIDE,
    LOCAL_TAG,
    MAX_PTX_BYTES,
    SHARED_TAG,
    PtxError,
    parse_kernel,
)
from occupancy.tune.ptx_run import MAX_STEPS, run_warp
from occupancy.tune.ptx_warp import MAX_ATOMIC_LOG, WARP

__all__ = ["ARRAY_STRIDE", "FIELDS", "LOCAL_TAG", "MAX_ATOMIC_LOG", "MAX_PTX_BYTES", "MAX_STEPS",
           "SHARED_TAG", "WARP", "PtxError", "Traffic", "block_sample", "parse_kernel", "run_warp"]
