"""Resident blocks of a tile loop: a closed queue or independent? (docs/model.md item 36; GPU)

A microbenchmark written here (the kernel: tileloop.cu; as `tile` sees it: tune.yaml).
Each block of 128 threads (4 warps) runs TILES tiles of: one coalesced global load a
thread from a 1 GiB buffer, a new stretch of it every tile and every run, so that the
loads miss L2 (the wait), a store to shared memory and a barrier, then ITERS x 8
independent FFMAs a thread on what it read (the compute; 8 chains a thread keep a lone
warp issuing), and a barrier. Dynamic shared memory holds B = 1, 2, 3, 4, 6, 8 blocks an
SM and the grid is B x SMs (one round).

Per (ITERS, B): the SM's clocks a tile, measured, against two predictions from the same
kernel's own runs (`LOAD=0`: the load replaced by a register value, the compute alone):
with c what the SM spends on a block's tile and w the rest of a lone block's tile (its
time at B = 1 less c), the SM's clocks a tile are c / busy, busy being
  queue:        busy_share(B, c, w) (tune/queueing.py, the closed queue),
  independent:  1 - (w / (c + w))^B  (the form before item 36);
c read two ways: a lone block's tile without the load ("lone"), and the SM's clocks a
block-tile without the load at the most blocks ("work", the service demand the model
counts). bench/queue/compare.py sets the measured times against `tile`'s own predictions.
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
from occupancy.tune.queueing import busy_share  # noqa: E402

THREADS, TILES, CHAINS = 128, 512, 8
BLOCKS = (1, 2, 3, 4, 6, 8)
FMA_ITERS = (16, 64, 128, 256, 512)
SOURCE = Path(__file__).with_name("tileloop.cu")


def main(out_dir: Path) -> None:
    import cupy as cp
    import numpy as np

    dev = cp.cuda.Device()
    sms = dev.attributes["MultiProcessorCount"]
    clock_khz = dev.attributes["ClockRate"]
    smem_sm = dev.attributes["MaxSharedMemoryPerMultiprocessor"]
    names = [f"tileloop<{i}, {load}>" for i in FMA_ITERS for load in (0, 1)]
    module = cp.RawModule(code=SOURCE.read_text(), options=("-std=c++17",),
                          name_expressions=names)
    kernels = {name: module.get_function(name) for name in names}
    for k in kernels.values():
        k.max_dynamic_shared_size_bytes = smem_sm - 1024
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
                kernel = kernels[f"tileloop<{iters}, {load}>"]

                def args(run: int) -> tuple:
                    return (src, out, np.int32(TILES), np.int64(stride), np.int64(n),
                            np.int64(run * 7_919 * 32))
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
            occ = occupancy(kernels[f"tileloop<{iters}, 1>"], smem)
            rows.append({"fma_iters": iters, "blocks": b, "resident": occ,
                         "ms_load": times[1], "ms_compute": times[0],
                         "clocks_per_tile_sm": times[1] * clock_khz / (TILES * b)})
    predict(rows, clock_khz)
    (out_dir / "tileloop.json").write_text(json.dumps(
        {"device": dev.attributes.get("Name", ""), "sms": sms, "clock_khz": clock_khz,
         "rows": rows}, indent=1))
    report(rows)


def predict(rows: list[dict], clock_khz: float) -> None:
    """Each row's two predictions under each reading of c (see the table's header)."""
    for r in rows:
        same = [x for x in rows if x["fma_iters"] == r["fma_iters"]]
        one = next(x for x in same if x["blocks"] == 1)
        most = max(same, key=lambda x: x["blocks"])
        lone = one["ms_load"] * clock_khz / TILES  # a lone block's tile, load and all
        b = r["blocks"]
        # c: what the SM spends on a tile, two ways. "lone": a lone block's tile without the
        # load (its latencies too); "work": the SM's clocks a block-tile without the load at
        # the most blocks (where the others hide a block's latencies): the service demand
        for name, c in (("lone", one["ms_compute"] * clock_khz / TILES),
                        ("work", most["ms_compute"] * clock_khz / (TILES * most["blocks"]))):
            w = max(lone - c, 0.0)
            r[f"{name}_c"], r[f"{name}_w"] = c, w
            r[f"{name}_queue"] = c / busy_share(b, c, w)
            r[f"{name}_independent"] = c / (1 - (w / (c + w)) ** b) if w else c


def report(rows: list[dict]) -> None:
    print(f"{'FFMA steps':>10} {'B':>2} {'measured':>8} | c = lone: {'c':>5} {'w':>5} "
          f"{'queue':>11} {'indep.':>11} | c = work: {'c':>5} {'w':>5} {'queue':>11} "
          f"{'indep.':>11}  (SM clocks a tile)")
    for r in rows:
        m = r["clocks_per_tile_sm"]
        line = f"{r['fma_iters'] * CHAINS:>10} {r['blocks']:>2} {m:8.0f}"
        for name in ("lone", "work"):
            q, i = r[f"{name}_queue"], r[f"{name}_independent"]
            line += (f" | {r[f'{name}_c']:>15.0f} {r[f'{name}_w']:5.0f} {q:5.0f} ({q / m - 1:+4.0%})"
                     f" {i:5.0f} ({i / m - 1:+4.0%})")
        print(line)
    for name in ("lone", "work"):
        for form in ("queue", "independent"):
            errs = [abs(r[f"{name}_{form}"] / r["clocks_per_tile_sm"] - 1)
                    for r in rows if r["blocks"] > 1]
            print(f"c = {name}, {form}: median |error| {statistics.median(errs):.1%}, "
                  f"largest {max(errs):.1%} ({len(errs)} rows at 2+ blocks)")


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
