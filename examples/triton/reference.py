# SPDX-License-Identifier: MIT
"""What `occupancy measure` checks the example Triton kernels against, in PyTorch (imported
only by measure, on the GPU machine; tile and check never load it).

A reference function gets one dict: the problem sizes, constexprs, the config and every
argument of the call (arrays as the kernel got them, numbers); it returns the expected
first output (or a dict of outputs). An inputs function gets the sizes, constexprs and
config, and returns the arguments random values cannot stand for.
"""

import torch


def softmax(a):
    return torch.softmax(a["in_ptr"].double(), dim=1)


def moe_inputs(a):
    """Each token routed to top_k of E experts (seeded: the same routing for every config),
    the (token, slot) pairs grouped by expert and padded per expert to a multiple of
    BLOCK_SIZE_M (vLLM's moe_align_block_size; padding holds M * top_k)."""
    m, experts, top_k, bm = a["M"], a["E"], a["top_k"], a["BLOCK_SIZE_M"]
    g = torch.Generator().manual_seed(0)
    topk_ids = torch.rand(m, experts, generator=g).topk(top_k, dim=1).indices.flatten()
    ids, blocks = [], []
    for e in range(experts):
        mine = (topk_ids == e).nonzero().flatten().tolist()
        if mine:
            n = -(-len(mine) // bm) * bm
            ids += mine + [m * top_k] * (n - len(mine))
            blocks += [e] * (n // bm)

    def gpu(v):
        return torch.tensor(v, dtype=torch.int32, device="cuda")

    return {"sorted_token_ids_ptr": gpu(ids), "expert_ids_ptr": gpu(blocks),
            "num_tokens_post_padded_ptr": gpu([len(ids)]), "EM": len(ids)}


def moe(a):
    """C[t] = A[t // top_k] @ B[e]^T for every (token, slot) t routed to expert e."""
    top_k, bm, valid = a["top_k"], a["BLOCK_SIZE_M"], a["num_valid_tokens"]
    x, w = a["a_ptr"].double(), a["b_ptr"].double()  # [M, K], [E, N, K]
    ids = a["sorted_token_ids_ptr"].long()
    out = torch.zeros(valid, w.shape[1], dtype=torch.float64, device=x.device)
    for i, e in enumerate(a["expert_ids_ptr"].tolist()):
        t = ids[i * bm:(i + 1) * bm]
        t = t[t < valid]
        out[t] = x[t // top_k] @ w[e].T
    if a["MUL_ROUTED_WEIGHT"]:
        out *= a["topk_weights_ptr"].double()[:, None]
    return out
