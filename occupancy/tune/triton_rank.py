"""A predicted time for tiled-GEMM Triton configs (matmul, fused-MoE grouped GEMM), to
rank a config space per device and problem size before anything runs on the GPU.

A deliberately small model (no measured constants beyond the device profile): programs
run in waves of programs-per-SM x SMs (the solver's exact occupancy); within a wave an
SM's resident programs share its tensor-core rate and its share of L2 bandwidth, and
the bytes in flight (num_stages - 1 tiles of A and B per program) must cover the memory
latency (Little's law); the last wave is partial; the DRAM time of the bytes the kernel
must read once needs the whole GPU's bytes in flight to cover the latency too, and
overlaps the rest imperfectly. Spilled registers cost local-memory traffic.
It ranks; it does not claim absolute times. Standard library only.

A fused-MoE layer is taken under uniform random routing (each token picks top_k of E
experts, as vLLM's tuner draws them): an expert's token count is binomial, so its rows
are padded to BLOCK_SIZE_M unevenly (64 tokens an expert on average need 1.47 blocks of
64 rows, not 1), and its weights are read from DRAM once per GROUP_SIZE_M of its row
blocks (a group's programs run together and share B's tiles in L2; the next group of the
same expert comes a whole expert's weights later). Neither adds a measured constant. On
the H200 fused-MoE space of bench/results/h200-triton/prune (876 configs that ran), the
best of the predicted top 16 of the validation half (bench/triton_rank_check.py: a fixed
sha256 split of the configs) is its best (1.0000; 1.0369 before), the top 4 within 0.9%
(1.0797 before); the whole space's top 32, the hook's figure, is its best (1.0372 before).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from functools import lru_cache

from occupancy.build.triton import TritonKernel, occupancy
from occupancy.core.device import Device

# Dense FP16 tensor-core FLOPs per FP32 FLOP of the profile's rate, by compute capability
# (A100 312/19.5, H100 SXM 989/67, B200 2250/80; the GeForce / L-series parts with FP32
# accumulation run about 2-4x their FP32 rate: 4 is taken for all of them).
TENSOR_PER_FP32 = {"8.0": 16.0, "9.0": 14.7, "10.0": 28.0}
TENSOR_PER_FP32_OTHER = 4.0
L2_PER_DRAM = 2.5  # L2 bandwidth over DRAM bandwidth (A100/H100 class)
LATENCY_NS = 700.0  # a tile load's round trip from L2 / DRAM, as the pipeline must cover it
LAUNCH_MS = 0.004


@dataclass(frozen=True)
class GemmProblem:
    """C[M x N] += A[M x K] B[K x N], or a fused-MoE layer: M tokens routed to top_k of E
    experts, each expert's rows padded to BLOCK_SIZE_M (vLLM's moe_align_block_size)."""

    M: int
    N: int
    K: int
    experts: int = 1
    top_k: int = 1
    dtype_bytes: int = 2

    def rows(self, block_m: int) -> float:
        """Rows the kernel walks (EM): per expert, its tokens padded to BLOCK_SIZE_M, in
        expectation over uniform random routing (each token picks top_k of E experts, so an
        expert gets Binomial(M, top_k / E) of them: uneven, and the padding with it)."""
        if self.experts <= 1:
            return self.M
        return self.experts * _routed(self.M, self.top_k, self.experts, block_m, 1)[0] * block_m

    def weights_read(self, block_m: int = 1, group_m: int = 1) -> float:
        """B's bytes read from DRAM: per expert with tokens, once per GROUP_SIZE_M of its
        row blocks (the programs of one group run together and share a tile of B in L2;
        the next group of the same expert comes a whole N x K expert later, longer than
        L2 keeps it)."""
        if self.experts <= 1:
            return self.N * self.K * self.dtype_bytes
        reads = _routed(self.M, self.top_k, self.experts, block_m, group_m)[1]
        return self.experts * reads * self.N * self.K * self.dtype_bytes


@lru_cache(maxsize=4096)
def _routed(tokens: int, top_k: int, experts: int, block_m: int, group_m: int
            ) -> tuple[float, float]:
    """E[blocks] and E[ceil(blocks / group_m)] of one expert's row blocks, blocks =
    ceil(X / block_m), X ~ Binomial(tokens, top_k / experts); the sum runs over the
    binomial's mass within 12 standard deviations of its mean."""
    q = min(1.0, top_k / experts)
    if q >= 1.0:
        b = math.ceil(tokens / block_m)
        return float(b), float(math.ceil(b / group_m))
    mean, sd = tokens * q, math.sqrt(tokens * q * (1 - q))
    lo, hi = max(0, int(mean - 12 * sd) - 1), min(tokens, int(mean + 12 * sd) + 2)
    log_q, log_r = math.log(q), math.log1p(-q)
    step = max(1, (hi - lo) // 20_000)  # millions of tokens: every step-th count, weighted
    blocks = groups = 0.0
    for x in range(lo, hi + 1, step):
        pmf = math.exp(math.lgamma(tokens + 1) - math.lgamma(x + 1) - math.lgamma(tokens - x + 1)
                       + x * log_q + (tokens - x) * log_r) * step
        b = math.ceil(x / block_m)
        blocks += pmf * b
        groups += pmf * math.ceil(b / group_m)
    return blocks, groups


def _meta(kernel: TritonKernel) -> dict[str, int]:
    kw = dict(kernel.config.kwargs)
    try:
        out = {k: int(kw[k]) for k in ("BLOCK_SIZE_M", "BLOCK_SIZE_N", "BLOCK_SIZE_K")}
        out["GROUP_SIZE_M"] = max(int(kw.get("GROUP_SIZE_M", 1)), 1)
        return out
    except KeyError as e:
        raise ValueError(f"a GEMM config needs BLOCK_SIZE_M/N/K, missing {e}") from None


def predict_gemm_ms(kernel: TritonKernel, dev: Device, p: GemmProblem) -> float:
    """Predicted milliseconds of one launch; inf where the config cannot run."""
    occ = occupancy(kernel, dev)
    if not occ.launchable or occ.active_blocks_per_sm == 0:
        return math.inf
    m = _meta(kernel)
    bm, bn, bk = m["BLOCK_SIZE_M"], m["BLOCK_SIZE_N"], m["BLOCK_SIZE_K"]
    rows = p.rows(bm)
    grid = math.ceil(rows / bm) * math.ceil(p.N / bn)
    if grid == 0:  # no tokens: the launch alone
        return LAUNCH_MS
    k_iters = math.ceil(p.K / bk)
    sms, per_sm = dev.sm_count, occ.active_blocks_per_sm
    tensor = dev.fp32_gflops * 1e9 * TENSOR_PER_FP32.get(dev.compute_capability,
                                                         TENSOR_PER_FP32_OTHER) / sms
    l2 = dev.dram_bandwidth_gb_s * 1e9 * L2_PER_DRAM / sms
    iter_flops = 2.0 * bm * bn * bk
    iter_bytes = float((bm * bk + bk * bn) * p.dtype_bytes)
    # a warp's share of the tile: tensor cores idle below ~64 x 64 outputs per 4 warps
    per_warp = bm * bn / kernel.config.num_warps
    mma_eff = min(1.0, per_warp / 1024.0) ** 0.5
    spill = 1.0 + kernel.stack_frame_bytes / 256.0

    def wave_seconds(resident: int) -> float:
        compute = resident * iter_flops / (tensor * mma_eff)
        in_flight = resident * max(kernel.config.num_stages - 1, 1) * iter_bytes
        mem_rate = min(l2, in_flight / (LATENCY_NS * 1e-9))
        memory = resident * iter_bytes / mem_rate
        epilogue = resident * bm * bn * p.dtype_bytes / l2
        return (k_iters * max(compute, memory) + epilogue) * spill

    slots = per_sm * sms
    full, rest = divmod(grid, slots)
    seconds = full * wave_seconds(per_sm)
    if rest:
        seconds += wave_seconds(math.ceil(rest / sms))
    # DRAM: the bytes read once stream at the bandwidth only if the GPU keeps enough of
    # them in flight (every resident program's num_stages - 1 tiles)
    dram_bw = dev.dram_bandwidth_gb_s * 1e9
    resident = min(grid, slots)
    in_flight = resident * max(kernel.config.num_stages - 1, 1) * iter_bytes
    dram_eff = min(1.0, in_flight / (dram_bw * LATENCY_NS * 1e-9))
    dram = (p.weights_read(bm, m["GROUP_SIZE_M"]) + (rows * p.K + rows * p.N) * p.dtype_bytes) \
        / (dram_bw * dram_eff)
    # the two overlap, never perfectly: the smaller adds a quarter of itself
    return (max(seconds, dram) + 0.25 * min(seconds, dram)) * 1e3 + LAUNCH_MS


def gemm_predictor(N: int, K: int, experts: int = 1, top_k: int = 1,
                   dtype_bytes: int = 2) -> Callable[[TritonKernel, Device, int], float]:
    """predict(kernel, device, M) for build_table, for one layer shape."""

    def predict(kernel: TritonKernel, dev: Device, M: int) -> float:
        return predict_gemm_ms(kernel, dev, GemmProblem(M, N, K, experts, top_k, dtype_bytes))

    return predict
