"""bench/dram/rowwalk.py: times rowwalk.cu's kernels on the GPU with CuPy (events, the median
of REPS runs after 3 warm-ups, each output checked against NumPy in float64 on sampled rows).
Prints one line per point: kernel, MODE, U, block, N, C, median us, the bytes the kernel must
move (MODE 0: 1x, 1: 3x, 2: 2x the array) over the time in TB/s, the resident warps per SM.
`--once`: launches every point once, untimed (for Nsight Compute's byte counts); `--table
CSV`: the table of those counts from ncu's CSV (run.sh writes both).
Usage: python bench/dram/rowwalk.py [--once] > rowwalk.txt"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

try:
    import cupy as cp
except ImportError:  # --table needs neither a GPU nor CuPy
    cp = None

REPS = 10
SIZES = ((16384, 4096), (8192, 50257))
US = (1, 2, 4, 8)
BLOCKS = (64, 256, 1024)
FACTOR = {0: 1, 1: 3, 2: 2}


def main() -> None:
    once = "--once" in sys.argv
    src = (Path(__file__).parent / "rowwalk.cu").read_text()
    names = [f"walk<{u},{m}>" for u in US for m in (0, 1, 2)] + \
            [f"stream<{u},{m}>" for u in US for m in (0, 2)]
    mod = cp.RawModule(code=src, options=("-std=c++17",), name_expressions=names)
    dev = cp.cuda.Device()
    sms = dev.attributes["MultiProcessorCount"]
    rng = np.random.default_rng(7)
    for n_rows, c in SIZES:
        host = rng.standard_normal((n_rows, c), dtype=np.float32)
        inp = cp.asarray(host)
        out = cp.empty_like(inp)
        nbytes = host.nbytes
        points = [("walk", m, u, b) for m in (0, 1, 2) for u in US for b in BLOCKS] + \
                 [("stream", m, u, 256) for m in (0, 2) for u in US]
        for kind, mode, u, block in points:
            k = mod.get_function(f"{kind}<{u},{mode}>")
            if kind == "walk":
                grid = (-(-n_rows // (block // 32)),)
                args = (out, inp, np.int32(n_rows), np.int32(c))
            else:
                grid = (sms * 8,)
                args = (out, inp, np.int64(n_rows * c))
            out.fill(np.nan)
            k(grid, (block,), args)
            cp.cuda.runtime.deviceSynchronize()
            ok = check(kind, mode, host, out, grid[0] * block)
            if once:
                print(f"{kind} {mode} {u} {block} {n_rows} {c} check={ok}", flush=True)
                continue
            for _ in range(3):
                k(grid, (block,), args)
            times = []
            for _ in range(REPS):
                a, b = cp.cuda.Event(), cp.cuda.Event()
                a.record()
                k(grid, (block,), args)
                b.record()
                b.synchronize()
                times.append(cp.cuda.get_elapsed_time(a, b) * 1e3)
            us = float(np.median(times))
            regs = cp.cuda.driver.funcGetAttribute(4, k.kernel.ptr)  # CU_FUNC_ATTRIBUTE_NUM_REGS
            occ = cp.cuda.driver.occupancyMaxActiveBlocksPerMultiprocessor(k.kernel.ptr, block, 0)
            print(f"{kind:6s} mode={mode} U={u} block={block:4d} N={n_rows:5d} C={c:5d} "
                  f"{us:9.1f} us {FACTOR[mode] * nbytes / us / 1e6:5.2f} TB/s regs={regs} "
                  f"warps/SM={occ * block // 32} check={ok}", flush=True)
        del inp, out


def check(kind: str, mode: int, host: np.ndarray, out: cp.ndarray, threads: int) -> str:
    """The output on 8 sampled rows against NumPy in float64 (every element written); a
    stream that only reads writes one sum a thread (`threads` of them), checked for being
    written: "sum". (The record's run looked at the sampled rows there instead, which the
    kernel does not write, and printed "unwritten".)"""
    if kind == "stream" and mode == 0:
        return "sum" if bool(cp.isfinite(out.ravel()[:threads]).all()) else "unwritten"
    n_rows, c = host.shape
    rows = np.linspace(0, n_rows - 1, 8).astype(int)
    got = cp.asnumpy(out[rows]).astype(np.float64)
    x = host[rows].astype(np.float64)
    if mode == 0:
        lanes = np.stack([x[:, j::32].sum(axis=1) for j in range(32)], axis=1)
        ref, got = lanes, got[:, :32]
    elif mode == 1:
        acc = np.zeros_like(x)
        for j in range(32):
            acc[:, j::32] = x[:, j::32].sum(axis=1, keepdims=True)
        ref = x * acc
    else:
        ref = x
    err = np.linalg.norm(got - ref) / np.linalg.norm(ref)
    return "ok" if err < 1e-4 else f"bad({err:.1e})"


def ncu_table(csv_path: str, labels_path: str) -> None:
    """`--table CSV`: the bytes Nsight Compute counted per point (ncu-table.txt) from its CSV;
    the points, in launch order, are the `--once` run's lines in the same file."""
    import csv
    import io

    text = Path(csv_path).read_text().splitlines()
    labels = [x for x in Path(labels_path).read_text().splitlines() if x.startswith(("walk", "stream"))]
    rows = list(csv.DictReader(io.StringIO("\n".join(x for x in text if x.startswith('"')))))
    vals: dict[str, dict[str, float]] = {}
    for r in rows:
        if r["Kernel Name"].startswith(("void walk", "void stream")):
            vals.setdefault(r["ID"], {})[r["Metric Name"]] = float(r["Metric Value"].replace(",", ""))
    for label, v in zip(labels, vals.values(), strict=True):
        kind, mode, u, block, n, c = label.split()[:6]
        base = int(n) * int(c) * 4
        rd, wr, t = v["dram__bytes_read.sum"], v["dram__bytes_write.sum"], v["gpu__time_duration.sum"]
        print(f"{kind:6s} m{mode} U{u} b{block:>4s} {n:>5s}x{c:<5s} read {rd / base:5.2f}x write "
              f"{wr / base:5.2f}x  {t / 1e3:8.1f} us {(rd + wr) / t / 1e3:5.2f} TB/s")


if __name__ == "__main__":
    if "--table" in sys.argv:
        ncu_table(sys.argv[sys.argv.index("--table") + 1], sys.argv[sys.argv.index("--table") + 1])
    else:
        main()
