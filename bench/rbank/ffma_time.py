"""Register-bank microbenchmark, step 2 (GPU, CuPy): times every OUTDIR/*.cubin of
ffma_patch.py (and the unpatched build) with one warp a scheduler (132 blocks of 128 threads,
one block an SM) and two (256 threads), and prints the clocks each warp takes per loop FFMA
(1.0 = one issue a clock). Usage: python bench/rbank/ffma_time.py DIR [CLOCK_MHZ]"""

from __future__ import annotations

import statistics
import sys
from pathlib import Path

import cupy as cp

ITERS = 20000  # even: the loop unrolled twice runs, not its remainder
FFMAS = 128  # a pass of the unrolled loop: two iterations of 64


def time_ms(fn, block: int, out, inp) -> float:
    start, stop = cp.cuda.Event(), cp.cuda.Event()
    runs = []
    for _ in range(7):
        start.record()
        fn((132,), (block,), (out, inp, cp.int32(ITERS)))
        stop.record()
        stop.synchronize()
        runs.append(cp.cuda.get_elapsed_time(start, stop))
    return statistics.median(runs[2:])


def main() -> None:
    folder = Path(sys.argv[1])
    mhz = float(sys.argv[2]) if len(sys.argv) > 2 else 1980.0
    out = cp.zeros(132 * 256, dtype=cp.float32)
    inp = cp.arange(64, dtype=cp.float32) / 64
    for path in sorted(folder.glob("*.cubin")):
        fn = cp.RawModule(path=str(path)).get_function("ffma_loop")
        cells = []
        for block in (128, 256):
            ms = time_ms(fn, block, out, inp)
            passes = ITERS / 2 * (block // 128)  # warps a scheduler x passes
            cells.append(f"{ms * 1e-3 * mhz * 1e6 / (passes * FFMAS):.3f}")
        print(f"{path.stem:24s} clocks/FFMA at 1 warp a scheduler {cells[0]}, at 2 {cells[1]}", flush=True)


if __name__ == "__main__":
    main()
