"""Ground truth for banks.py: the wavefronts the H200's load/store unit spends on one
warp-wide load, per access pattern, read from Nsight Compute's counters.

Each pattern is a table of per-lane offsets (in elements of the access width); one warp
loads from shared memory (4-, 8- and 16-byte elements) or global memory (4-byte, L1 hits)
at those offsets in a loop, and ncu reports instructions and wavefronts. Printed beside
what banks.bank_conflicts and ptxsim's line count say for the same addresses.

On the GPU machine: python bench/lds_wavefronts.py   (runs itself under ncu; writes
$OUT/lds-wavefronts.json, or bench/results/lds-wavefronts.json without $OUT)
"""

from __future__ import annotations

import csv
import io
import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

ITERS = 256

SRC = r"""
template <typename T> __device__ float sum(T v);
template <> __device__ float sum<float>(float v) { return v; }
template <> __device__ float sum<float2>(float2 v) { return v.x + v.y; }
template <> __device__ float sum<float4>(float4 v) { return v.x + v.y + v.z + v.w; }

template <typename T>
__device__ void lds(const int* __restrict__ offs, float* out, int iters) {
  __shared__ T buf[4096 / sizeof(T) * 8];  // 32 KB
  constexpr int n = 4096 / sizeof(T) * 8;
  float* raw = reinterpret_cast<float*>(buf);
  for (int i = threadIdx.x; i < n * (int)sizeof(T) / 4; i += blockDim.x) raw[i] = (float)i;
  __syncthreads();
  const int o = offs[threadIdx.x & 31];
  const int step = 4096 / sizeof(T);  // 4 KB: the same banks, another address
  float acc = 0.f;
#pragma unroll 1
  for (int i = 0; i < iters; ++i) acc += sum<T>(buf[(o + (i & 3) * step) & (n - 1)]);
  out[threadIdx.x] = acc;
}

extern "C" __global__ void lds4(const int* offs, float* out, int iters) { lds<float>(offs, out, iters); }
extern "C" __global__ void lds8(const int* offs, float* out, int iters) { lds<float2>(offs, out, iters); }
extern "C" __global__ void lds16(const int* offs, float* out, int iters) { lds<float4>(offs, out, iters); }

extern "C" __global__ void ldg4(const int* __restrict__ offs, const float* __restrict__ in,
                                float* out, int iters) {
  const int o = offs[threadIdx.x & 31];
  float acc = 0.f;
#pragma unroll 1
  for (int i = 0; i < iters; ++i) acc += __ldg(in + o + (i & 3) * 65536);
  out[threadIdx.x] = acc;
}
"""


def patterns() -> list[tuple[str, int, str, list[int]]]:
    """(kernel, element bytes, name, per-lane offsets in elements)."""
    L = range(32)
    out = []
    for k, w in (("lds16", 16), ("lds8", 8), ("lds4", 4)):
        per_row = 512 // w  # offsets one 512-byte row apart hit the same banks
        out += [
            (k, w, "uniform", [0] * 32),
            (k, w, "contiguous", list(L)),
            (k, w, "stride2", [2 * i for i in L]),
            (k, w, "half-warp uniform, rows 512 B apart", [(i // 16) * per_row for i in L]),
            (k, w, "half-warp uniform, adjacent", [i // 16 for i in L]),
            (k, w, "quarter-warp uniform, rows 512 B apart", [(i // 8) * per_row for i in L]),
            (k, w, "quarter-warp uniform, adjacent", [i // 8 for i in L]),
            (k, w, "8 distinct, repeated", [i % 8 for i in L]),
            (k, w, "16 distinct, repeated", [i % 16 for i in L]),
            (k, w, "pairs uniform", [i // 2 for i in L]),
        ]
    out += [(k, 4, "stride32 (one bank)", [32 * i for i in L]) for k in ("lds4",)]
    out += [("ldg4", 4, name, offs) for name, offs in (
        ("contiguous", list(L)), ("uniform", [0] * 32), ("stride2", [2 * i for i in L]),
        ("stride8 (one sector each)", [8 * i for i in L]),
        ("stride32 (one line each)", [32 * i for i in L]),
        ("16 lines, 2 lanes each", [(i // 2) * 32 for i in L]),
        ("2 rows of 16", [(i // 16) * 4096 + i % 16 for i in L]),
        ("4 rows of 8", [(i // 8) * 4096 + i % 8 for i in L]))]
    return out


def child() -> None:
    import cupy as cp

    mod = cp.RawModule(code=SRC, options=("-std=c++17",))
    out = cp.zeros(32, dtype=cp.float32)
    data = cp.arange(65536 * 4 + 4096, dtype=cp.float32)
    for kernel, _, _, offs in patterns():
        fn = mod.get_function(kernel)
        o = cp.asarray(offs, dtype=cp.int32)
        args = (o, out, cp.int32(ITERS)) if kernel != "ldg4" else (o, data, out, cp.int32(ITERS))
        fn((1,), (32,), args)
    cp.cuda.Device().synchronize()


def main() -> None:
    if sys.argv[1:] == ["--child"]:
        child()
        return
    from occupancy.core.banks import bank_conflicts

    q = subprocess.run(["ncu", "--query-metrics-mode", "suffix", "--query-metrics",
                        "--chip", "gh100"], capture_output=True, text=True)
    known = q.stdout
    want = ["smsp__inst_executed_op_shared_ld.sum",
            "l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld.sum",
            "smsp__inst_executed_op_global_ld.sum",
            "l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum",
            "l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum",
            "l1tex__data_pipe_lsu_wavefronts_mem_lg_cmd_read.sum",
            "l1tex__data_pipe_lsu_wavefronts_mem_lg.sum",
            "l1tex__data_pipe_lsu_wavefronts.sum"]
    metrics = [m for m in want if m.rsplit(".", 1)[0] in known] or want[:2]
    r = subprocess.run(["ncu", "--metrics", ",".join(metrics), "--csv", "--print-units", "base",
                        sys.executable, __file__, "--child"], capture_output=True, text=True)
    rows = list(csv.DictReader(io.StringIO(
        "\n".join(line for line in r.stdout.splitlines() if line.startswith('"')))))
    by_id: dict[str, dict[str, float]] = {}
    ours = {k for k, _, _, _ in patterns()}
    for row in rows:
        if row.get("Kernel Name", "").split("(")[0] not in ours:
            continue  # CuPy's own launches (arange fills the global buffer)
        v = row.get("Metric Value", "").replace(",", "")
        try:
            by_id.setdefault(row["ID"], {})[row["Metric Name"]] = float(v)
        except ValueError:
            continue
    results = []
    launches = [by_id[k] for k in sorted(by_id, key=int)]
    for (kernel, w, name, offs), m in zip(patterns(), launches, strict=False):
        addrs = [o * w for o in offs]
        rec = {"kernel": kernel, "bytes": w, "pattern": name, "offsets": offs, "metrics": m}
        if kernel.startswith("lds"):
            inst = m.get("smsp__inst_executed_op_shared_ld.sum", 0)
            wf = m.get("l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld.sum", 0)
            rec["wavefronts_per_load"] = wf / inst if inst else None
            rec["banks_py"] = bank_conflicts(addrs, element_bytes=w).wavefronts
        else:
            inst = m.get("smsp__inst_executed_op_global_ld.sum", 0)
            rec["per_load"] = {k: v / inst for k, v in m.items() if inst}
            rec["lines"] = len({a // 128 for a in addrs})
            rec["sectors"] = len({a // 32 for a in addrs})
        results.append(rec)
    dest = Path(os.environ.get("OUT", ROOT / "bench" / "results")) / "lds-wavefronts.json"
    dest.write_text(json.dumps({"metrics": metrics, "ncu_stderr_tail": r.stderr[-2000:],
                                "results": results}, indent=1) + "\n")
    for rec in results:
        if "wavefronts_per_load" in rec:
            print(f"{rec['kernel']:6s} {rec['pattern']:42s} ncu {rec['wavefronts_per_load']}"
                  f"  banks.py {rec['banks_py']}")
        else:
            print(f"{rec['kernel']:6s} {rec['pattern']:42s} lines {rec['lines']} sectors "
                  f"{rec['sectors']}  ncu {rec['per_load']}")


if __name__ == "__main__":
    main()
