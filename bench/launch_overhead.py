"""The fixed cost in a `measure` timing: CUDA events around one launch (occupancy.gpu.measure.Timer,
L2 flushed before each run) of kernels that do nothing, from one block to full grids of
the transposes' shapes, and the example transpose at small N. The model adds
LAUNCH_OVERHEAD_MS to every prediction; this measures it.

On the GPU machine: python bench/launch_overhead.py  (writes $OUT/launch-overhead.json)
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

EMPTY = r"""
extern "C" __global__ void empty(float* out) { if (out == nullptr) out[0] = 1.0f; }
template <int TILE>
__global__ void touch(const float* __restrict__ in, float* __restrict__ out, int n) {
  __shared__ float tile[TILE];
  tile[threadIdx.x % TILE] = 0.0f;
  __syncthreads();
  if (n < 0) out[0] = tile[0];
}
"""


BIG_SMEM = r"""
extern "C" __global__ void smem16k(float* out) {
  __shared__ float tile[4096];
  tile[threadIdx.x] = 0.0f;
  __syncthreads();
  if (out == nullptr) out[0] = tile[threadIdx.x + 1];
}
"""


def main() -> None:
    import cupy as cp

    from occupancy.gpu.measure import Timer

    timer = Timer(cp, cp.cuda.Device().attributes["L2CacheSize"])
    mod = cp.RawModule(code=EMPTY, options=("-std=c++17",), name_expressions=["touch<32>"])
    empty, touch = mod.get_function("empty"), mod.get_function("touch<32>")
    buf = cp.zeros(1, dtype=cp.float32)
    rows = []

    def run(name: str, fn: object, **info: object) -> None:
        ms = timer.time(fn, reps=50)
        rows.append({"case": name, **info, "median_ms": statistics.median(ms), "min_ms": min(ms)})

    run("empty <<<1, 32>>>", lambda: empty((1,), (32,), (buf,)), blocks=1, threads=32)
    for g in (132, 132 * 16, 132 * 64, 16384, 65536):
        run(f"empty <<<{g}, 128>>>", lambda g=g: empty((g,), (128,), (buf,)), blocks=g,
            threads=128)
        run(f"touch (barrier) <<<{g}, 128>>>", lambda g=g: touch((g,), (128,), (buf, buf, 1)),
            blocks=g, threads=128)
    # the block scheduler's rate against block size: 16,384 and 65,536 blocks of each
    for t in (32, 64, 256, 512, 1024):
        for g in (16384, 65536):
            run(f"empty <<<{g}, {t}>>>", lambda g=g, t=t: empty((g,), (t,), (buf,)), blocks=g,
                threads=t)
    big = cp.RawModule(code=BIG_SMEM).get_function("smem16k")
    for g in (16384, 65536):
        run(f"16 KB static smem <<<{g}, 128>>>", lambda g=g: big((g,), (128,), (buf,)),
            blocks=g, threads=128, static_shared_memory=16384)
    src = (ROOT / "examples" / "transpose" / "transpose.cuh").read_text()
    tr = cp.RawModule(code=src, options=("-std=c++17",),
                      name_expressions=["transpose_tiled<32, 4, 1>"])
    fn = tr.get_function("transpose_tiled<32, 4, 1>")
    for n in (256, 512, 1024, 2048):
        a = cp.random.standard_normal((n, n), dtype=cp.float32)
        o = cp.empty_like(a)
        g = (n + 31) // 32
        run(f"transpose 32x4 n={n}", lambda fn=fn, a=a, o=o, n=n, g=g:
            fn((g, g), (32, 4), (a, o, cp.int32(n))), blocks=g * g, bytes=8 * n * n)
    props = cp.cuda.runtime.getDeviceProperties(0)
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT,
                            capture_output=True, text=True).stdout.strip() or \
        os.environ.get("COMMIT", "unknown")
    rec = {"date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M:%S UTC"),
           "device": props["name"].decode(), "driver": cp.cuda.runtime.driverGetVersion(),
           "runtime": cp.cuda.runtime.runtimeGetVersion(), "cupy": cp.__version__,
           "commit": os.environ.get("COMMIT", commit), "reps": 50, "results": rows}
    out = Path(os.environ.get("OUT", ".")) / "launch-overhead.json"
    out.write_text(json.dumps(rec, indent=1) + "\n")
    for r in rows:
        print(f"{r['case']:36s} {r['median_ms'] * 1e3:8.2f} us (min {r['min_ms'] * 1e3:.2f})")


if __name__ == "__main__":
    main()
