# SPDX-License-Identifier: MIT
"""A fused-MoE grouped GEMM in the shape of vLLM's `fused_moe_kernel` (fp16, no
quantization), written for this project: the same arguments, meta-parameters and
program order, so vLLM's per-device config files (`E=..,N=..,device_name=...json`:
BLOCK_SIZE_M/N/K, GROUP_SIZE_M, num_warps, num_stages) apply to it unchanged.

Tokens are routed to `top_k` experts; `sorted_token_ids` lists the (token, slot) pairs
grouped by expert and padded per expert to a multiple of BLOCK_SIZE_M (padding entries
hold num_valid_tokens); `expert_ids[i]` is the expert of the i-th BLOCK_SIZE_M block.
C[t, :] = A[t // top_k, :] @ B[e]^T (x the routing weight when MUL_ROUTED_WEIGHT).
Grid: (cdiv(EM, BLOCK_SIZE_M) * cdiv(N, BLOCK_SIZE_N),), EM = len(sorted_token_ids).
"""

import triton
import triton.language as tl


@triton.jit
def fused_moe_kernel(a_ptr, b_ptr, c_ptr, topk_weights_ptr, sorted_token_ids_ptr,
                     expert_ids_ptr, num_tokens_post_padded_ptr,
                     N, K, EM, num_valid_tokens,
                     stride_am, stride_ak, stride_be, stride_bk, stride_bn,
                     stride_cm, stride_cn,
                     BLOCK_SIZE_M: tl.constexpr, BLOCK_SIZE_N: tl.constexpr,
                     BLOCK_SIZE_K: tl.constexpr, GROUP_SIZE_M: tl.constexpr,
                     MUL_ROUTED_WEIGHT: tl.constexpr, top_k: tl.constexpr,
                     compute_type: tl.constexpr):
    pid = tl.program_id(axis=0)
    tiles_m = tl.cdiv(EM, BLOCK_SIZE_M)
    tiles_n = tl.cdiv(N, BLOCK_SIZE_N)
    per_group = GROUP_SIZE_M * tiles_n
    first_m = (pid // per_group) * GROUP_SIZE_M
    rows = min(tiles_m - first_m, GROUP_SIZE_M)
    tile_m = first_m + (pid % per_group) % rows
    tile_n = (pid % per_group) // rows

    padded = tl.load(num_tokens_post_padded_ptr)
    if tile_m * BLOCK_SIZE_M >= padded:
        return
    slot = tile_m * BLOCK_SIZE_M + tl.arange(0, BLOCK_SIZE_M).to(tl.int64)
    token = tl.load(sorted_token_ids_ptr + slot)
    valid = token < num_valid_tokens
    expert = tl.load(expert_ids_ptr + tile_m).to(tl.int64)

    rn = (tile_n * BLOCK_SIZE_N + tl.arange(0, BLOCK_SIZE_N).to(tl.int64)) % N
    rk = tl.arange(0, BLOCK_SIZE_K)
    a_tile = a_ptr + (token[:, None] // top_k * stride_am + rk[None, :] * stride_ak)
    b_tile = b_ptr + expert * stride_be + (rk[:, None] * stride_bk + rn[None, :] * stride_bn)

    acc = tl.zeros((BLOCK_SIZE_M, BLOCK_SIZE_N), dtype=tl.float32)
    for k in range(0, tl.cdiv(K, BLOCK_SIZE_K)):
        left = K - k * BLOCK_SIZE_K
        a = tl.load(a_tile, mask=valid[:, None] & (rk[None, :] < left), other=0.0)
        b = tl.load(b_tile, mask=rk[:, None] < left, other=0.0)
        acc += tl.dot(a, b)
        a_tile += BLOCK_SIZE_K * stride_ak
        b_tile += BLOCK_SIZE_K * stride_bk

    if MUL_ROUTED_WEIGHT:
        w = tl.load(topk_weights_ptr + token, mask=valid, other=0)
        acc = acc * w[:, None]
    out = acc.to(compute_type)
    cn = tile_n * BLOCK_SIZE_N + tl.arange(0, BLOCK_SIZE_N)
    c_tile = c_ptr + stride_cm * token[:, None] + stride_cn * cn[None, :]
    tl.store(c_tile, out, mask=valid[:, None] & (cn[None, :] < N))
