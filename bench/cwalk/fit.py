"""The walked-__constant__ rule (tune/constwalk.py) against every row of the microbenchmarks
it comes from: bench/results/h200-cwalk (cwalk.cu, three read forms) and
bench/results/h200-uldc-walk (uldc_walk.cu, one table through ULDC; rounds 1 and 2). Each
kernel is compiled here with nvcc 13.0 as on the device and read with the project's SASS
reader; per row, the SM clocks one iteration of the hot loop took (measured at the GPU's
1.98 GHz) against the model's two terms: the issue count (instructions x pipe factor / 4
schedulers) and the rule's floor (ULDC reads x ULDC_MISS_CLOCKS where walks_slow holds).
The table's size is the bytes the loop walks (the rows' entries), not the module's.
Prints every row, ULDC_MISS_CLOCKS's median over the settled slow rows, and a summary.

    python bench/cwalk/fit.py bench/results/h200-cwalk bench/results/h200-cwalk-gap \
        bench/results/h200-uldc-walk
"""
from __future__ import annotations

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
from occupancy.build.sass_pipes import SCHEDULERS_PER_SM, pipe_factor  # noqa: E402
from occupancy.tune import constwalk  # noqa: E402

GHZ = 1.98
H200 = load_device("h200")


def mix_of(src: Path, defines: dict[str, int], name: str) -> dict[str, int]:
    with tempfile.TemporaryDirectory() as tmp:
        cubin = Path(tmp) / "k.cubin"
        subprocess.run(["nvcc", "-O3", "-arch=sm_90", "-cubin", "-o", str(cubin), str(src),
                        *[f"-D{k}={v}" for k, v in defines.items()]], check=True)
        sass = subprocess.run([nvdisasm_path() or "nvdisasm", "-c", str(cubin)], check=True,
                              capture_output=True, text=True).stdout
    return dict(sass_loop_mix(sass)[name])


def rows(path: Path) -> list[dict[str, str]]:
    return [dict(kv.split("=", 1) for kv in line.split()) for line in path.read_text().splitlines()
            if "check=ok" in line]


def cwalk_rows(d: Path) -> list[dict]:
    cache: dict[tuple[str, str], dict[str, int]] = {}
    out = []
    src = ROOT / "bench/cwalk/cwalk.cu"
    for r in rows(d / "cwalk.txt"):
        key = (r["form"], r["tile"])
        if key not in cache:
            cache[key] = mix_of(src, {}, f"_Z4walkILi{key[0]}ELi{key[1]}EEvPK6float2Piii")
        per_entry = {"0": 4, "1": 8, "2": 12}[r["form"]]
        out.append({"name": f"cwalk form {r['form']} tile {r['tile']} {r['entries']} entries",
                    "mix": cache[key], "bytes": int(r["entries"]) * per_entry,
                    "block": int(r["block"]), "blocks": int(r["blocks_per_sm"]),
                    # ns a warp-wide step an SM, 4 steps an iteration (#pragma unroll 4)
                    "clocks": float(r["ns_per_warp_step_per_sm"]) * GHZ * 4})
    return out


def uldc_rows(d: Path) -> list[dict]:
    cache: dict[tuple[str, str, str], dict[str, int]] = {}
    out = []
    src = ROOT / "bench/imc/uldc_walk.cu"
    for f in (d / "uldc.txt", d / "round2/sizes.txt", d / "round2/streams.txt"):
        for r in rows(f):
            words, tile, passes = r["words"], r["tile"], r.get("passes", "1")
            key = (words, tile, passes)
            if key not in cache:
                cache[key] = mix_of(src, {"WORDS": int(words), "TILE": int(tile),
                                          "PASSES": int(passes)}, "_Z4walkPKfPii")
            blocks = int(r.get("blocks_per_sm") or int(r["warps_per_sm"]) * 32 // int(r["block"]))
            out.append({"name": f"uldc_walk tile {tile} {int(words) * 4} B", "mix": cache[key],
                        "bytes": int(words) * 4, "block": int(r["block"]), "blocks": blocks,
                        # ns a warp-wide entry an SM, 8 entries an iteration (#pragma unroll 8)
                        "clocks": float(r["ns_per_warp_read_per_sm"]) * GHZ * 8})
    return out


def main(dirs: list[str]) -> None:
    data = [r for d in map(Path, dirs)
            for r in (cwalk_rows(d) if (d / "cwalk.txt").exists() else uldc_rows(d))]
    settled = []
    for r in data:
        mix = {**r["mix"], "cbank3": r["bytes"]}
        r["issue"] = mix["total"] * pipe_factor(H200, mix) / SCHEDULERS_PER_SM
        r["slow"] = constwalk.walks_slow(H200, mix, r["blocks"], r["blocks"] * r["block"] // 32)
        r["floor"] = mix["uldc"] * constwalk.ULDC_MISS_CLOCKS if r["slow"] else 0.0
        r["pred"] = max(r["issue"], r["floor"])
        if mix["uldc"] and r["blocks"] >= 16 and r["clocks"] >= 2 * r["issue"]:
            settled.append(r["clocks"] / mix["uldc"])
        print(f"{r['name']:38s} table {r['bytes']:5d} B block {r['block']:4d} blocks/SM "
              f"{r['blocks']:2d} uldc {mix['uldc']} "
              f"ldc3 {mix['ldc3']}: measured {r['clocks']:6.1f} clocks an iteration, issue "
              f"{r['issue']:5.1f}, floor {r['floor']:5.1f}, measured/predicted "
              f"{r['clocks'] / r['pred']:.2f}")
    print(f"\nULDC_MISS_CLOCKS: median {statistics.median(settled):.1f} SM clocks a ULDC over the "
          f"{len(settled)} rows at 16+ blocks an SM that ran 2x their issue count or more "
          f"(range {min(settled):.1f}-{max(settled):.1f}); the model holds {constwalk.ULDC_MISS_CLOCKS}")
    parts = (("rule holds", [r for r in data if r["slow"]]),
             ("8+ blocks an SM, rule does not hold (named by tile where the form went slow)",
              [r for r in data if not r["slow"] and r["blocks"] >= 8]),
             ("1-7 blocks an SM (not priced; few warps: the model's other terms)",
              [r for r in data if r["blocks"] < 8]))
    for label, part in parts:
        ratios = [r["clocks"] / r["pred"] for r in part]
        within = sum(0.8 <= x <= 1.25 for x in ratios)
        print(f"{label}: {len(part)} rows, measured/predicted median {statistics.median(ratios):.2f}, "
              f"{within} within 0.8-1.25, {sum(x > 2 for x in ratios)} over 2x, "
              f"{sum(x < 0.5 for x in ratios)} under 0.5x")
    for label, pred in (("today's model (issue count alone)", lambda r: r["issue"]),
                        ("with the rule", lambda r: r["pred"])):
        ratios = [r["clocks"] / pred(r) for r in data if r["blocks"] >= 8]
        err = statistics.median(abs(x - 1) for x in ratios)
        print(f"{label}: median |measured/predicted - 1| {err:.1%} over the {len(ratios)} rows "
              "at 8+ blocks an SM, "
              f"{sum(0.8 <= x <= 1.25 for x in ratios)} within 0.8-1.25")


if __name__ == "__main__":
    main(sys.argv[1:])
