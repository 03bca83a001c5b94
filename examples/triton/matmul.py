# SPDX-License-Identifier: MIT
"""A tiled FP16 matmul in the shape of Triton's tutorial 03 (grouped program order, fp32
accumulator, BLOCK_SIZE_M/N/K + GROUP_SIZE_M meta-parameters), written for this project.

C[M, N] = A[M, K] @ B[K, N]; one program per BLOCK_SIZE_M x BLOCK_SIZE_N tile of C,
launched on grid (cdiv(M, BLOCK_SIZE_M) * cdiv(N, BLOCK_SIZE_N),).
"""

import triton
import triton.language as tl


@triton.jit
def matmul_kernel(a_ptr, b_ptr, c_ptr, M, N, K,
                  stride_am, stride_ak, stride_bk, stride_bn, stride_cm, stride_cn,
                  BLOCK_SIZE_M: tl.constexpr, BLOCK_SIZE_N: tl.constexpr,
                  BLOCK_SIZE_K: tl.constexpr, GROUP_SIZE_M: tl.constexpr):
    pid = tl.program_id(axis=0)
    tiles_m = tl.cdiv(M, BLOCK_SIZE_M)
    tiles_n = tl.cdiv(N, BLOCK_SIZE_N)
    # Programs walk GROUP_SIZE_M rows of tiles column by column, so neighbours share
    # tiles of A and B in L2.
    per_group = GROUP_SIZE_M * tiles_n
    first_m = (pid // per_group) * GROUP_SIZE_M
    rows = min(tiles_m - first_m, GROUP_SIZE_M)
    tile_m = first_m + (pid % per_group) % rows
    tile_n = (pid % per_group) // rows

    rm = (tile_m * BLOCK_SIZE_M + tl.arange(0, BLOCK_SIZE_M)) % M
    rn = (tile_n * BLOCK_SIZE_N + tl.arange(0, BLOCK_SIZE_N)) % N
    rk = tl.arange(0, BLOCK_SIZE_K)
    a_tile = a_ptr + rm[:, None] * stride_am + rk[None, :] * stride_ak
    b_tile = b_ptr + rk[:, None] * stride_bk + rn[None, :] * stride_bn

    acc = tl.zeros((BLOCK_SIZE_M, BLOCK_SIZE_N), dtype=tl.float32)
    for k in range(0, tl.cdiv(K, BLOCK_SIZE_K)):
        left = K - k * BLOCK_SIZE_K
        a = tl.load(a_tile, mask=rk[None, :] < left, other=0.0)
        b = tl.load(b_tile, mask=rk[:, None] < left, other=0.0)
        acc = tl.dot(a, b, acc)
        a_tile += BLOCK_SIZE_K * stride_ak
        b_tile += BLOCK_SIZE_K * stride_bk

    cm = tile_m * BLOCK_SIZE_M + tl.arange(0, BLOCK_SIZE_M)
    cn = tile_n * BLOCK_SIZE_N + tl.arange(0, BLOCK_SIZE_N)
    c_tile = c_ptr + cm[:, None] * stride_cm + cn[None, :] * stride_cn
    tl.store(c_tile, acc.to(tl.float16), mask=(cm[:, None] < M) & (cn[None, :] < N))
