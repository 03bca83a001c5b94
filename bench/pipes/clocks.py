"""Clocks a warp instruction of each kind holds an SM sub-partition, from bench/pipes/run.sh's
timings (pipes.txt) and the SASS loop of bench/pipes/pipes.cu, compiled here with nvcc and
read with nvdisasm (the same nvcc 13.0 as the device's). Clocks are relative to FFMA's,
taken as 1 (its implied clock is printed beside the GPU's maximum).

    python bench/pipes/clocks.py bench/results/h200-pipes/pipes.txt
"""
from __future__ import annotations

import re
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from occupancy.build import sass_loops  # noqa: E402
from occupancy.build.compilers import nvdisasm_path  # noqa: E402

# per kind: the opcode that marks its loop's trips, how many of it a source iteration runs
SIGN = {0: ("FFMA", 64), 1: ("FMNMX", 128), 2: ("FSETP", 128), 3: ("LOP3", 64), 4: ("IMAD", 64),
        5: ("FFMA", 64), 6: ("FFMA", 64), 7: ("MUFU", 64), 8: ("FMNMX", 64)}
WARPS_PER_BLOCK = 8
SUBPARTITIONS = 4


def loops() -> dict[int, list[str]]:
    src = Path(__file__).with_name("pipes.cu")
    with tempfile.TemporaryDirectory() as tmp:
        cubin = Path(tmp) / "p.cubin"
        subprocess.run(["nvcc", "-O3", "-arch=sm_90", "-cubin", "-o", str(cubin), str(src)],
                       check=True)
        sass = subprocess.run([nvdisasm_path() or "nvdisasm", "-c", str(cubin)], check=True,
                              capture_output=True, text=True).stdout
    bodies: dict[int, list[str]] = {}
    real = sass_loops._counts

    def keep(body):  # the hottest loop's instructions, as sass_loop_mix chose them
        bodies.setdefault(len(bodies), [op for _, op, _, _, _ in body])
        return real(body)
    sass_loops._counts = keep
    try:
        names = list(sass_loops.sass_loop_mix(sass))
    finally:
        sass_loops._counts = real
    # sass_loop_mix counts each function's body, then its nested FFMA loops: two calls each
    return {int(re.search(r"ILi(\d)E", n).group(1)): bodies[2 * i] for i, n in enumerate(names)}


def main(path: str) -> None:
    body = loops()
    rows = [dict(kv.split("=") for kv in line.split()) for line in Path(path).read_text().splitlines()
            if line.startswith("kind=")]
    ref: dict[str, float] = {}
    for r in rows:
        k = int(r["kind"])
        op, per_iter = SIGN[k]
        trips = int(r["iters"]) * per_iter / body[k].count(op)
        warps_per_sp = int(r["blocks"]) * WARPS_PER_BLOCK / int(r["sms"]) / SUBPARTITIONS
        insts = warps_per_sp * trips * len(body[k])  # per sub-partition
        per_s = insts / (float(r["median_ms"]) * 1e-3)
        if k == 0:
            ref[r["blocks"]] = per_s
        mix = {o: body[k].count(o) for o in sorted(set(body[k]))}
        print(f"kind {k} blocks {r['blocks']}: {len(body[k])} insts a loop {mix}; "
              f"{ref[r['blocks']] / per_s:.2f} clocks an instruction "
              f"(FFMA's clock {ref[r['blocks']] / 1e9:.3f} GHz)")


if __name__ == "__main__":
    main(sys.argv[1])
