"""bench/l2reuse/l2reuse.py: runs l2reuse.cu's re-reads on the GPU with CuPy over a sweep of
footprints (the bytes the GPU's resident warps move between a line's two reads) at 64, 24
and 16 resident warps an SM. Prints one line per point: MODE, warps an SM (from the
driver), C, N, the footprint in MB, the median of REPS event-timed runs after 2 warm-ups in
us, and `check=ok` where every sampled row's sums (and, MODE 1, its output) match NumPy in
float64. Inputs are drawn on the GPU (normal). `--once`: every point launched once, untimed,
for Nsight Compute's byte counts; `--table CSV`: those counts per point, with the DRAM bytes
read over the array's (1 + the share of the second pass's reads that missed L2, MODE 0), from
ncu's output with the --once lines in it (run.sh writes both).
`--waves`: instead, MODE 0 on grids of 1, 2 and 4 rounds of the resident warps (the
main sweep's are 17-180 rounds), to see whether few waves keep more.
Usage: python bench/l2reuse/l2reuse.py [--once] [--waves] > l2reuse.txt"""

from __future__ import annotations

import csv
import sys
from pathlib import Path

import numpy as np

try:
    import cupy as cp
except ImportError:  # --table needs neither a GPU nor CuPy
    cp = None

REPS = 10
BLOCK = 256
# dynamic shared memory a block reserves (never used): 8, 3 and 2 blocks of 256 an SM
PADS = (0, 70_000, 100_000)
FOOTPRINTS_MB = (8, 16, 24, 32, 40, 48, 56, 64, 72, 80, 96, 128, 192)
TOTAL_BYTES = 1 << 30  # the array: many rows per resident warp, ~17x the L2


WAVES = (1, 2, 4)  # --waves: grids of this many rounds of resident warps
WAVE_FOOTPRINTS_MB = (32, 40, 48, 56, 64, 72, 96)


def wave_points(sms: int, warps_per_sm: dict[int, int]) -> list[tuple[int, int, int, int]]:
    """--waves: MODE 0 at 64 and 16 warps an SM with grids of WAVES rounds of rows (a row a
    resident warp a round), footprints WAVE_FOOTPRINTS_MB."""
    out = []
    for pad in (PADS[0], PADS[-1]):
        w = warps_per_sm[pad]
        for waves in WAVES:
            for f in WAVE_FOOTPRINTS_MB:
                c = max(32, round(f * 1e6 / (w * sms * 4) / 32) * 32)
                out.append((0, pad, c, waves * w * sms))
    return out


def points(sms: int, warps_per_sm: dict[int, int]) -> list[tuple[int, int, int, int]]:
    """(mode, pad, C, N) for every footprint, C a multiple of 32 floats (rows on lines)."""
    out = []
    for mode in (0, 1):
        for pad in PADS:
            w = warps_per_sm[pad]
            for f in FOOTPRINTS_MB:
                c = max(32, round(f * 1e6 / (w * sms * 4) / 32) * 32)
                n = TOTAL_BYTES // (c * 4) // (BLOCK // 32) * (BLOCK // 32)
                out.append((mode, pad, c, n))
    return out


def check(mode: int, inp, out, sums, n: int) -> str:
    rows = np.linspace(0, n - 1, 16).astype(int)
    s = cp.asnumpy(sums).reshape(n, 2)
    host = np.stack([cp.asnumpy(inp[int(r)]) for r in rows])
    x = host.astype(np.float64)
    want_a = x.sum(axis=1)
    want_b = want_a if mode == 0 else (x * 0.5).sum(axis=1)
    scale = np.abs(x).sum(axis=1)
    if not (np.all(np.abs(s[rows, 0] - want_a) <= 1e-4 * scale)
            and np.all(np.abs(s[rows, 1] - want_b) <= 1e-4 * scale)):
        return "bad-sums"
    if mode == 1:
        y = np.stack([cp.asnumpy(out[int(r)]) for r in rows])
        if not np.allclose(y, host * 0.5, rtol=1e-6, atol=0):
            return "bad-output"
    return "ok"


def main() -> None:
    once = "--once" in sys.argv
    src = (Path(__file__).parent / "l2reuse.cu").read_text()
    mod = cp.RawModule(code=src, options=("-std=c++17",),
                       name_expressions=["reread<0>", "reread<1>"])
    sms = cp.cuda.Device().attributes["MultiProcessorCount"]
    funcs = {m: mod.get_function(f"reread<{m}>") for m in (0, 1)}
    warps = {}
    for pad in PADS:
        for f in funcs.values():
            f.max_dynamic_shared_size_bytes = max(pad, 1)
        blocks = {m: cp.cuda.driver.occupancyMaxActiveBlocksPerMultiprocessor(
            funcs[m].kernel.ptr, BLOCK, pad) for m in (0, 1)}
        if blocks[0] != blocks[1]:
            raise SystemExit(f"modes differ in occupancy at pad {pad}: {blocks}")
        warps[pad] = blocks[0] * BLOCK // 32
    rng = cp.random.default_rng(11)
    chosen = wave_points(sms, warps) if "--waves" in sys.argv else points(sms, warps)
    for mode, pad, c, n in chosen:
        inp = rng.standard_normal((n, c), dtype=np.float32)
        out = cp.full((n, c), np.nan, dtype=np.float32) if mode else cp.empty((1, 1), np.float32)
        sums = cp.full(2 * n, np.nan, dtype=np.float32)
        k = funcs[mode]
        args = (out, sums, inp, np.int32(n), np.int32(c))
        grid = (n // (BLOCK // 32),)
        k(grid, (BLOCK,), args, shared_mem=pad)
        cp.cuda.runtime.deviceSynchronize()
        ok = check(mode, inp, out, sums, n)
        fp = warps[pad] * sms * c * 4 * (1 if mode == 0 else 2) / 1e6
        head = f"mode={mode} warps={warps[pad]} C={c} N={n} footprint_MB={fp:.1f}"
        if once:
            print(f"{head} check={ok}", flush=True)
            continue
        for _ in range(2):
            k(grid, (BLOCK,), args, shared_mem=pad)
        times = []
        for _ in range(REPS):
            a, b = cp.cuda.Event(), cp.cuda.Event()
            a.record()
            k(grid, (BLOCK,), args, shared_mem=pad)
            b.record()
            b.synchronize()
            times.append(cp.cuda.get_elapsed_time(a, b) * 1e3)
        print(f"{head} us={np.median(times):.1f} check={ok}", flush=True)
        del inp, out, sums


def table(path: str) -> None:
    """Nsight Compute's DRAM bytes per launch, per point in the order --once launched them (one
    launch a point): read and written over the array's bytes, and ncu's time."""
    text = Path(path).read_text().splitlines()
    heads = [line for line in text if line.startswith("mode=")]
    rows = list(csv.DictReader(line for line in text if line.startswith('"')))
    per: dict[int, dict[str, float]] = {}
    for r in rows:
        if "reread<" not in r["Kernel Name"]:
            continue  # CuPy's own kernels (the random inputs, the fills)
        per.setdefault(int(r["ID"]), {})[r["Metric Name"]] = float(r["Metric Value"].replace(",", ""))
    launches = [per[i] for i in sorted(per)]
    if len(launches) != len(heads):
        raise SystemExit(f"{len(heads)} points but {len(launches)} profiled launches")
    for head, m in zip(heads, launches, strict=True):
        f = dict(kv.split("=") for kv in head.split())
        array = int(f["C"]) * int(f["N"]) * 4
        print(head, f"read={m['dram__bytes_read.sum'] / array:.3f}",
              f"written={m['dram__bytes_write.sum'] / array:.3f}",
              f"ncu_us={m['gpu__time_duration.sum'] / 1e3:.1f}")


if __name__ == "__main__":
    if "--table" in sys.argv:
        table(sys.argv[sys.argv.index("--table") + 1])
    else:
        main()
