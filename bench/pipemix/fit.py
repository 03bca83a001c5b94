"""bench/results/h200-pipemix: each pipemix.cu variant's measured clocks a loop iteration
against the issue side as the model counts it (sass_pipes.pipe_factor: the busiest pipe's
clocks or the instruction count, whichever is larger). Compiles pipemix.cu here with nvcc
13.0 as on the device and reads each variant's loop with the project's SASS reader; the
clock is the one the FFMA-only variant implies (one instruction a clock a sub-partition,
128 of its 131 FFMA).

    python bench/pipemix/fit.py bench/results/h200-pipemix
"""
from __future__ import annotations

import re
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
from occupancy import load_device  # noqa: E402
from occupancy.build.compilers import nvdisasm_path  # noqa: E402
from occupancy.build.sass_loops import sass_loop_mix  # noqa: E402
from occupancy.build.sass_pipes import pipe_factor  # noqa: E402

H200 = load_device("h200")
_NAME = re.compile(r"ILi(\d+)ELi(\d+)ELi(\d+)ELi(\d+)E")


def mixes() -> dict[tuple[int, ...], dict[str, int]]:
    """(nf, na, ni, nl) -> the SASS loop mix of that variant."""
    with tempfile.TemporaryDirectory() as tmp:
        cubin = Path(tmp) / "k.cubin"
        subprocess.run(["nvcc", "-O3", "-arch=sm_90", "-cubin", "-o", str(cubin),
                        str(ROOT / "bench/pipemix/pipemix.cu")], check=True)
        sass = subprocess.run([nvdisasm_path() or "nvdisasm", "-c", str(cubin)], check=True,
                              capture_output=True, text=True).stdout
    out = {}
    for name, mix in sass_loop_mix(sass).items():
        m = _NAME.search(name)
        if m:
            out[tuple(int(x) for x in m.groups())] = dict(mix)
    return out


def unroll(key: tuple[int, ...], mix: dict[str, int]) -> int:
    """Source iterations one SASS loop iteration holds (ptxas unrolls the short ones)."""
    nf, na, ni, _ = key
    if nf:
        return max(1, round(mix["ffma"] / nf))
    if na:
        return max(1, round(mix["alu"] / na))
    return max(1, round(mix["imad"] / ni))


def rows(d: Path) -> list[dict]:
    m = mixes()
    out = []
    for line in (d / "pipemix.txt").read_text().splitlines():
        v = dict(f.split("=", 1) for f in line.split())
        key = (int(v["nf"]), int(v["na"]), int(v["ni"]), int(v["nl"]))
        mix = m[key]
        per_sm = int(v["blocks"]) // int(v["sms"])  # all resident (resident_blocks_per_sm: 8)
        warps_per_scheduler = per_sm * int(v["threads"]) // 32 // 4
        sass_iters = int(v["iters"]) / unroll(key, mix)
        out.append({"key": key, "warps": warps_per_scheduler * 4, "mix": mix,
                    "ns": float(v["median_ms"]) * 1e6 / (sass_iters * warps_per_scheduler)})
    return out


def pipes(mix: dict[str, int]) -> list[float]:
    """Clocks a warp's loop iteration holds each pipe, per sub-partition, as sass_pipes counts
    them: the FMA pipes (FP32 arithmetic a clock between the two halves, IMAD 2 clocks on
    the heavy one), the ALU pipe (2 clocks an instruction), the special-function unit (8);
    and the SM's load/store unit (a shared wavefront a clock for the 4 sub-partitions: 4
    clocks a wavefront of each)."""
    fma = max(2 * mix["imad"], mix.get("fp32", 0) + mix["imad"])
    return [fma, 2 * mix["alu"], 8 * mix.get("mufu", 0),
            4 * (mix["lds_wavefronts"] + mix["sts_wavefronts"])]


def law(mix: dict[str, int], gamma: float) -> float:
    """The issue count or the busiest pipe, whichever is larger, plus `gamma` times the
    second busiest pipe."""
    p = sorted(pipes(mix), reverse=True)
    return max(mix["total"], p[0]) + gamma * p[1]


def main(d: str) -> None:
    data = rows(Path(d))
    ghz = {}
    for r in data:  # one instruction a clock: the clock the FFMA-only loop implies, per warps
        if r["key"] == (128, 0, 0, 0):
            ghz[r["warps"]] = r["mix"]["total"] / r["ns"]
    for r in data:
        mix = r["mix"]
        r["clocks"] = r["ns"] * ghz[r["warps"]]
        r["model"] = mix["total"] * pipe_factor(H200, mix)
        r["ratio"] = r["clocks"] / r["model"]
    print("clock the FFMA-only loop implies: " + ", ".join(f"{w} warps an SM {g:.3f} GHz"
                                                         for w, g in sorted(ghz.items())))
    for r in sorted(data, key=lambda r: (r["warps"], r["key"])):
        mix = r["mix"]
        print(f"nf={r['key'][0]:3d} na={r['key'][1]:2d} ni={r['key'][2]:2d} nl={r['key'][3]:2d} "
              f"warps={r['warps']:2d} total={mix['total']:3d} ffma={mix['ffma']:3d} "
              f"alu={mix['alu']:3d} imad={mix['imad']:2d} lds={mix['lds_wavefronts']:2d} "
              f"measured={r['clocks']:6.1f} model={r['model']:6.1f} ratio={r['ratio']:.3f} "
              f"pipes={'/'.join(f'{x:.0f}' for x in pipes(mix))}")
    ratios = [r["ratio"] for r in data]
    print(f"\n{len(data)} rows: measured / model median {statistics.median(ratios):.3f}, "
          f"range {min(ratios):.3f}-{max(ratios):.3f}; median |error| "
          f"{statistics.median(abs(x - 1) for x in ratios):.1%}")

    # the law is fitted on the loops without IMAD: ptxas leaves this kernel's IMADs in runs,
    # and in runs they do not overlap the FFMAs (bench/results/h200-pipes, alternating, did)
    plain = [r for r in data if not r["mix"]["imad"]]
    imad = [r for r in data if r["mix"]["imad"]]

    def err(rows: list[dict], gamma: float) -> float:
        return statistics.median(abs(r["clocks"] / law(r["mix"], gamma) - 1) for r in rows)
    gamma = min((g / 100 for g in range(101)), key=lambda g: err(plain, g))
    fitted = [r["clocks"] / law(r["mix"], gamma) for r in plain]
    print(f"loops without IMAD ({len(plain)} rows): the issue count or the busiest pipe, "
          f"whichever is larger, plus gamma x the second busiest pipe: gamma {gamma:.2f} (the "
          f"median |error|'s minimum over 0-1): median |error| {err(plain, gamma):.1%} "
          f"(the count alone {err(plain, 0.0):.1%}), measured / law "
          f"{min(fitted):.3f}-{max(fitted):.3f}, {sum(0.9 <= x <= 1.1 for x in fitted)} "
          "within 10%")
    for w in sorted(ghz):
        part = [r for r in plain if r["warps"] == w]
        print(f"  {w} warps an SM: median |error| {err(part, gamma):.1%}")
    ratios = [r["clocks"] / law(r["mix"], gamma) for r in imad]
    print(f"loops with IMAD ({len(imad)} rows), the same law: measured / law median "
          f"{statistics.median(ratios):.3f}, range {min(ratios):.3f}-{max(ratios):.3f}")


if __name__ == "__main__":
    main(sys.argv[1])
