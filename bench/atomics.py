"""What atomics to one address cost on the GPU: the microbenchmark behind the model's
same-address atomic roof (occupancy/tune/model.py, ATOMIC_SAME_ADDRESS_NS).

Atomics to one address are serialized where the address lives (its L2 slice): a grid whose
blocks each add their partial sum to one counter (a norm, a reduction's total) pays one
slot of that unit per atomic, however many SMs issue them. Here: kernels that do nothing
but K atomicAdds per block to one float (RED, the result unused; ATOM, the result used), to
one int, spread over M addresses, and the same kernel without the atomic, across grids of
4,096 to 4,194,304 blocks; the cost per atomic is the slope of time over atomics.

On the GPU machine: python bench/atomics.py  (writes $OUT/atomics.json)
"""

from __future__ import annotations

import datetime
import json
import os
import statistics
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

SRC = r"""
extern "C" __global__ void none(float* sum, int per_block, int spread) {
  if (per_block < 0) sum[0] = 1.0f;
}
// per_block atomics of one block, by its first per_block threads (warps apart or not)
extern "C" __global__ void red_f32(float* sum, int per_block, int spread) {
  if (threadIdx.x < per_block) atomicAdd(sum + (blockIdx.x % spread) * 32, 1.0f);
}
extern "C" __global__ void atom_f32(float* sum, int per_block, int spread) {
  if (threadIdx.x < per_block) {
    float old = atomicAdd(sum + (blockIdx.x % spread) * 32, 1.0f);
    if (old < -1.0f) sum[1] = old;
  }
}
extern "C" __global__ void red_i32(int* sum, int per_block, int spread) {
  if (threadIdx.x < per_block) atomicAdd(sum + (blockIdx.x % spread) * 32, 1);
}
// one atomic per warp (lane 0 of each warp)
extern "C" __global__ void red_f32_warp(float* sum, int per_block, int spread) {
  if (threadIdx.x % 32 == 0) atomicAdd(sum + (blockIdx.x % spread) * 32, 1.0f);
}
"""


def main() -> None:
    import cupy as cp

    from occupancy.gpu.measure import Timer

    timer = Timer(cp, cp.cuda.Device().attributes["L2CacheSize"])
    mod = cp.RawModule(code=SRC)
    buf = cp.zeros(32 * 4096, dtype=cp.float32)
    ibuf = cp.zeros(32 * 4096, dtype=cp.int32)
    rows = []

    def run(kernel: str, grid: int, block: int, per_block: int, spread: int) -> None:
        fn = mod.get_function(kernel)
        arr = ibuf if kernel.endswith("i32") else buf
        args = (arr, cp.int32(per_block), cp.int32(spread))
        ms = timer.time(lambda: fn((grid,), (block,), args), reps=15)
        atomics = 0 if kernel == "none" else grid * (block // 32 if kernel.endswith("warp")
                                                     else per_block)
        rows.append({"kernel": kernel, "blocks": grid, "threads": block, "per_block": per_block,
                     "spread": spread, "atomics": atomics, "median_ms": statistics.median(ms),
                     "min_ms": min(ms)})

    for grid in (4096, 16384, 65536, 262144, 1048576, 4194304):
        for block in (64, 256):
            run("none", grid, block, 1, 1)
            run("red_f32", grid, block, 1, 1)
        run("atom_f32", grid, 256, 1, 1)
        run("red_i32", grid, 256, 1, 1)
    for grid in (16384, 65536, 262144):
        run("red_f32_warp", grid, 256, 0, 1)
        for per_block in (2, 8, 32):
            run("red_f32", grid, 256, per_block, 1)
        for spread in (2, 8, 64, 1024):
            run("red_f32", grid, 256, 1, spread)
    # the slope per atomic: one red per block, 1M and 4M blocks, less the empty kernel
    by = {(r["kernel"], r["blocks"], r["threads"], r["per_block"], r["spread"]): r["median_ms"]
          for r in rows}
    slope = {}
    for block in (64, 256):
        d_red = by[("red_f32", 4194304, block, 1, 1)] - by[("red_f32", 1048576, block, 1, 1)]
        d_none = by[("none", 4194304, block, 1, 1)] - by[("none", 1048576, block, 1, 1)]
        slope[f"red_f32_per_block_{block}_ns"] = (d_red - d_none) * 1e6 / (4194304 - 1048576)
        slope[f"red_f32_total_{block}_ns"] = d_red * 1e6 / (4194304 - 1048576)
    props = cp.cuda.runtime.getDeviceProperties(0)
    out = {"date": datetime.date.today().isoformat(), "device": props["name"].decode(),
           "driver": cp.cuda.runtime.driverGetVersion(),
           "commit": subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True,
                                    text=True, cwd=ROOT).stdout.strip() or os.environ.get("COMMIT"),
           "slopes": slope, "rows": rows}
    dest = Path(os.environ.get("OUT", ".")) / "atomics.json"
    dest.write_text(json.dumps(out, indent=1) + "\n")
    print(json.dumps(slope, indent=1))
    for r in rows:
        print(f"{r['kernel']:13s} blocks={r['blocks']:8d} threads={r['threads']:4d} per_block={r['per_block']:3d} "
              f"spread={r['spread']:5d} atomics={r['atomics']:9d} {r['median_ms']:.4f} ms")


if __name__ == "__main__":
    main()
