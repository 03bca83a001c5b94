# SPDX-License-Identifier: MIT
"""Row-wise softmax in the shape of Triton's tutorial 02 (fused softmax): a persistent
grid of programs, each striding over rows, one row of BLOCK_SIZE (the next power of two
of the row length) held in registers; written for this project.

The tutorial sizes its persistent grid from an occupancy estimate; with this project
that number is `occupancy.build.triton.programs_per_sm(kernel, device)`.
"""

import triton
import triton.language as tl


@triton.jit
def softmax_kernel(out_ptr, in_ptr, in_row_stride, out_row_stride, n_rows, n_cols,
                   BLOCK_SIZE: tl.constexpr, num_stages: tl.constexpr):
    first = tl.program_id(0)
    step = tl.num_programs(0)
    for row in tl.range(first, n_rows, step, num_stages=num_stages):
        cols = tl.arange(0, BLOCK_SIZE)
        inside = cols < n_cols
        x = tl.load(in_ptr + row * in_row_stride + cols, mask=inside, other=-float("inf"))
        x = x - tl.max(x, axis=0)
        e = tl.exp(x)
        y = e / tl.sum(e, axis=0)
        tl.store(out_ptr + row * out_row_stride + cols, y, mask=inside)
