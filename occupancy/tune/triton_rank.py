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
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

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

    def rows(self, block_m: int) -> int:
        """Rows the kernel walks (EM): per active expert, its tokens padded to BLOCK_SIZE_M."""
        if self.experts <= 1:
            return self.M
        routed = self.M * self.top_k
        active = min(self.experts, routed)
        per_expert = math.ceil(routed / active)
        return active * math.ceil(per_expert / block_m) * block_m

    def weights_read(self) -> int:
        """B's bytes that must come from DRAM once (only the experts with tokens)."""
        active = min(self.experts, self.M * self.top_k) if self.experts > 1 else 1
        return active * self.N * self.K * self.dtype_bytes


def _meta(kernel: TritonKernel) -> dict[str, int]:
    kw = dict(kernel.config.kwargs)
    try:
        return {k: int(kw[k]) for k in ("BLOCK_SIZE_M", "BLOCK_SIZE_N", "BLOCK_SIZE_K")}
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
    dram = (p.weights_read() + (rows * p.K + rows * p.N) * p.dtype_bytes) / (dram_bw * dram_eff)
    # the two overlap, never perfectly: the smaller adds a quarter of itself
    return (max(seconds, dram) + 0.25 * min(seconds, dram)) * 1e3 + LAUNCH_MS


def gemm_predictor(N: int, K: int, experts: int = 1, top_k: int = 1,
                   dtype_bytes: int = 2) -> Callable[[TritonKernel, Device, int], float]:
    """predict(kernel, device, M) for build_table, for one layer shape."""

    def predict(kernel: TritonKernel, dev: Device, M: int) -> float:
        return predict_gemm_ms(kernel, dev, GemmProblem(M, N, K, experts, top_k, dtype_bytes))

    return predict
