"""Resident blocks of a tile loop: a closed queue or independent? (docs/model.md item 36; GPU)

A microbenchmark written here. Each block of 128 threads (4 warps) runs TILES tiles of:
one coalesced global load a thread from a 1 GiB buffer, a new stretch of it every tile
and every run, so that the loads miss L2 (the wait), a store to shared memory and a
barrier, then FMA_ITERS x 8 independent FFMAs a thread on what it read (the compute; 8
chains a thread keep a lone warp issuing), and a barrier. Dynamic shared memory holds B = 1, 2, 3, 4, 6, 8 blocks an SM, the grid is
B x SMs (one round), and the compute is 8 to 128 FFMA steps a tile.

Per (compute, B): the clocks a tile takes per SM, measured, against two predictions made
from the same kernel's own runs at B = 1: its tile time with the load (compute + wait) and
without it (`LOAD=0`, the load replaced by a register value: compute alone). With c the
compute and w the wait a block sees, the SM's clocks a tile are c / busy, busy being
  queue:        busy_share(B, c, w) (tune/model.py, the closed queue),
  independent:  1 - (w / (c + w))^B  (the form before item 36).
Every output is checked against the same loop on the host (float64).
Usage (GPU, CuPy): python bench/queue/tileloop.py OUT_DIR
"""

from __future__ import annotations

import json
import statistics
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
from occupancy.tune.model import busy_share  # noqa: E402

THREADS, TILES, CHAINS = 128, 512, 8
BLOCKS = (1, 2, 3, 4, 6, 8)
FMA_ITERS = (1, 2, 4, 8, 16)
SOURCE = r"""
extern "C" __global__ void tileloop(const float* __restrict__ src, float* __restrict__ out,
                                    int tiles, long long stride, long long n, int fma_iters,
                                    int load, long long offset) {
  extern __shared__ float sh[];
  float acc[8];
  for (int j = 0; j < 8; j++) acc[j] = 0.0f;
  long long base = (long long)blockIdx.x * blockDim.x + threadIdx.x;
  for (int t = 0; t < tiles; t++) {
    float v = load ? src[(base + (long long)t * stride + offset) % n] : (float)(t + 1);
    sh[threadIdx.x] = v;
    __syncthreads();
    float x = sh[(threadIdx.x + 1) % blockDim.x] * 0.5f;
    for (int i = 0; i < fma_iters; i++) {
#pragma unroll
      for (int j = 0; j < 8; j++) acc[j] = fmaf(acc[j], 0.999f, x);
    }
    __syncthreads();
  }
  float s = 0.0f;
  for (int j = 0; j < 8; j++) s += acc[j];
  out[base] = s;
}
"""


def main(out_dir: Path) -> None:
    import cupy as cp
    import numpy as np

    dev = cp.cuda.Device()
    sms = dev.attributes["MultiProcessorCount"]
    clock_khz = dev.attributes["ClockRate"]
    smem_sm = dev.attributes["MaxSharedMemoryPerMultiprocessor"]
    kernel = cp.RawModule(code=SOURCE).get_function("tileloop")
    kernel.max_dynamic_shared_size_bytes = smem_sm - 1024
    n = 1 << 28  # 1 GiB of floats
    rng = np.random.default_rng(7)
    src = cp.asarray(rng.random(n, dtype=np.float32))
    stride = 1_048_573 * 32  # a warp's next line 128 MB on
    host = cp.asnumpy(src)
    rows = []
    for iters in FMA_ITERS:
        for b in BLOCKS:
            # the largest dynamic size that still fits b blocks an SM (1 KB reserved each)
            smem = (smem_sm // b - 1024) // 256 * 256
            grid = b * sms
            out = cp.full(grid * THREADS, cp.nan, dtype=cp.float32)
            times = {}
            for load in (1, 0):
                def args(run: int) -> tuple:
                    return (src, out, np.int32(TILES), np.int64(stride), np.int64(n),
                            np.int32(iters), np.int32(load), np.int64(run * 7_919 * 32))
                out.fill(cp.nan)
                kernel((grid,), (THREADS,), args(0), shared_mem=smem)  # warm-up
                cp.cuda.Device().synchronize()
                check(out, host, grid, iters, load, stride, n)
                start, end = cp.cuda.Event(), cp.cuda.Event()
                runs = []
                for run in range(1, 16):
                    start.record()
                    kernel((grid,), (THREADS,), args(run), shared_mem=smem)
                    end.record()
                    end.synchronize()
                    runs.append(cp.cuda.get_elapsed_time(start, end))
                times[load] = statistics.median(runs)
            occ = occupancy(kernel, smem)
            rows.append({"fma_iters": iters, "blocks": b, "resident": occ,
                         "ms_load": times[1], "ms_compute": times[0],
                         "clocks_per_tile_sm": times[1] * clock_khz / (TILES * b)})
    for r in rows:
        one = next(x for x in rows if x["fma_iters"] == r["fma_iters"] and x["blocks"] == 1)
        c = one["ms_compute"] * clock_khz / TILES  # a lone block's tile without the load
        w = max(one["ms_load"] * clock_khz / TILES - c, 0.0)
        b = r["blocks"]
        r["queue"] = c / busy_share(b, c, w)
        r["independent"] = c / (1 - (w / (c + w)) ** b) if w else c
        r["c"], r["w"] = c, w
    (out_dir / "tileloop.json").write_text(json.dumps(
        {"device": dev.attributes.get("Name", ""), "sms": sms, "clock_khz": clock_khz,
         "rows": rows}, indent=1))
    print(f"{'FFMA steps':>10} {'B':>2} {'res':>3} {'c':>6} {'w':>6} {'measured':>9} "
          f"{'queue':>9} {'indep.':>9}  (SM clocks a tile)")
    for r in rows:
        m = r["clocks_per_tile_sm"]
        print(f"{r['fma_iters'] * CHAINS:>10} {r['blocks']:>2} {r['resident']:>3} {r['c']:6.0f} "
              f"{r['w']:6.0f} {m:9.0f} {r['queue']:9.0f} ({r['queue'] / m - 1:+.0%})"
              f" {r['independent']:9.0f} ({r['independent'] / m - 1:+.0%})")
    errs = {k: [abs(r[k] / r["clocks_per_tile_sm"] - 1) for r in rows if r["blocks"] > 1]
            for k in ("queue", "independent")}
    print({k: f"median |error| {statistics.median(v):.1%}, largest {max(v):.1%}"
           for k, v in errs.items()})


def occupancy(kernel, smem: int) -> int:
    """The driver's resident blocks an SM at this dynamic shared size (-1: not known)."""
    try:
        from cuda.bindings import driver  # type: ignore[import-not-found]

        err, blocks = driver.cuOccupancyMaxActiveBlocksPerMultiprocessor(
            driver.CUfunction(kernel.ptr), THREADS, smem)
        return int(blocks) if int(err) == 0 else -1
    except Exception:  # noqa: BLE001 - a probe's extra column
        return -1


def check(out, host, grid: int, iters: int, load: int, stride: int, n: int) -> None:
    """The first and last block's outputs against the loop in float64."""
    import numpy as np

    got = out.get()
    for blk in (0, grid - 1):
        for t_in in (0, THREADS - 1):
            nxt = blk * THREADS + (t_in + 1) % THREADS
            acc = 0.0  # the 8 chains are alike
            for t in range(TILES):
                v = host[(nxt + t * stride) % n] if load else float(t + 1)
                x = float(np.float32(v)) * 0.5
                for _ in range(iters):
                    acc = acc * 0.999 + x
            want = CHAINS * acc
            have = got[blk * THREADS + t_in]
            if not np.isfinite(have) or abs(have - want) > 1e-3 * max(1.0, abs(want)):
                raise SystemExit(f"Error: wrong output at block {blk}, thread {t_in}: "
                                 f"{have} against {want}")


if __name__ == "__main__":
    main(Path(sys.argv[1]))
