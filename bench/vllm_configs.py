"""A shipped vLLM fused-MoE config file, checked and pruned per device, offline (no GPU).

    python bench/vllm_configs.py "E=8,N=14336,device_name=NVIDIA_H100_80GB_HBM3.json" OUT \
        [--devices h100,l4,rtx5090] [--space small|vllm] [--hidden 4096] [--top-k 2] [--jobs N]

For each device: every config of the file and of a space (small: 96 configs; vllm: the
1,920 of vLLM's benchmark_moe.py) compiled for its cc with examples/triton/moe.py (the
same arguments and meta-parameters as vLLM's fused_moe_kernel, fp16), the table (fits,
Triton's reason, programs per SM, predicted order per batch size), the file pruned for
that device (a config that does not fit is replaced by the predicted best of the nearest
size) and written in vLLM's format, and the rank of each shipped winner in our order.
The GEMM is vLLM's first one: N = 2 x the file's N (gate and up), K = --hidden.
"""

from __future__ import annotations

import argparse
import itertools
import json
import re
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from occupancy.build.triton import CompileStats, compile_configs  # noqa: E402
from occupancy.inputs.profiles import load_device  # noqa: E402
from occupancy.tune.triton_prune import (  # noqa: E402
    build_table,
    config_key,
    device_row,
    prune_config_file,
    rank_of,
    read_config_file,
    write_config_file,
)
from occupancy.tune.triton_rank import gemm_predictor  # noqa: E402

KERNEL = f"{ROOT / 'examples' / 'triton' / 'moe.py'}:fused_moe_kernel"


def space(name: str) -> list[dict]:
    if name == "vllm":  # benchmark_moe.py's get_configs_compute_bound
        dims = ([16, 32, 64, 128, 256], [32, 64, 128, 256], [64, 128, 256], [1, 16, 32, 64],
                [4, 8], [2, 3, 4, 5])
    else:
        dims = ([16, 32, 64, 128], [64, 128], [64, 128], [1], [4, 8], [2, 3, 4])
    return [{"BLOCK_SIZE_M": bm, "BLOCK_SIZE_N": bn, "BLOCK_SIZE_K": bk, "GROUP_SIZE_M": g,
             "num_warps": w, "num_stages": s} for bm, bn, bk, g, w, s in itertools.product(*dims)]


def call(n: int, k: int, top_k: int, m: int = 256) -> dict:
    """The launch's arguments as vLLM makes them (fp16, contiguous), at batch size m."""
    return {"a_ptr": "*fp16", "b_ptr": "*fp16", "c_ptr": "*fp16", "topk_weights_ptr": "*fp32",
            "sorted_token_ids_ptr": "*i32", "expert_ids_ptr": "*i32",
            "num_tokens_post_padded_ptr": "*i32", "N": n, "K": k, "EM": 4096,
            "num_valid_tokens": m * top_k, "stride_am": k, "stride_ak": 1, "stride_be": n * k,
            "stride_bk": 1, "stride_bn": k, "stride_cm": n, "stride_cn": 1}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("file")
    ap.add_argument("out")
    ap.add_argument("--devices", default="h100,l4,rtx5090")
    ap.add_argument("--space", default="small", choices=["small", "vllm"])
    ap.add_argument("--hidden", type=int, default=4096)
    ap.add_argument("--top-k", type=int, default=2)
    ap.add_argument("--jobs", type=int, default=None)
    a = ap.parse_args()
    import triton.language as tl

    shipped = read_config_file(a.file)
    m = re.search(r"E=(\d+),N=(\d+)", Path(a.file).name)
    if not m:
        sys.exit(f"{a.file}: the name does not say E=..,N=..")
    experts, n = int(m.group(1)), 2 * int(m.group(2))
    out = Path(a.out)
    out.mkdir(parents=True, exist_ok=True)
    configs = {config_key(c): c for c in [*space(a.space), *shipped.values()]}
    const = {"MUL_ROUTED_WEIGHT": False, "top_k": a.top_k, "compute_type": tl.float16}
    rows, report = {}, {"file": Path(a.file).name, "configs": len(configs), "devices": {}}
    for name in a.devices.split(","):
        dev = load_device(name)
        stats, t0 = CompileStats(), time.perf_counter()
        kernels = compile_configs(KERNEL, call(n, a.hidden, a.top_k), list(configs.values()),
                                  [dev.compute_capability], constexprs=const, jobs=a.jobs,
                                  stats=stats, timeout=300)
        rows[dev.key] = device_row(kernels, dev, sorted(shipped),
                                   gemm_predictor(n, a.hidden, experts, a.top_k))
        report["devices"][dev.key] = {"cc": dev.compute_capability,
                                      "compile_wall_s": round(time.perf_counter() - t0, 1),
                                      "compiled": stats.compiled, "cached": stats.cached}
    table = build_table("fused_moe_kernel", kernels[0].triton_version, "M", rows)
    (out / "table.json").write_text(json.dumps(table, indent=1))
    for key, row in rows.items():
        dev = load_device(key)
        fixed, notes = prune_config_file(shipped, table, key)
        vllm_name = dev.name.replace(" ", "_")
        write_config_file(out / f"E={experts},N={n // 2},device_name={vllm_name}.json", fixed)
        unfit = {str(s): row["configs"][config_key(c)]["reason"] for s, c in shipped.items()
                 if not row["configs"][config_key(c)]["fits"]}
        ranks = {str(s): rank_of(table, key, s, c) for s, c in shipped.items()}
        report["devices"][key].update(fitting=len(row["order"][str(min(shipped))]),
                                      shipped_not_fitting=unfit, replaced=notes,
                                      shipped_rank_in_our_order=ranks)
    (out / "report.json").write_text(json.dumps(report, indent=1))
    print(json.dumps(report, indent=1))


if __name__ == "__main__":
    main()
