"""bench/results/h200-lsu-form's rolled builds as the model and the scheduler probe read
them (docs/model.md item 45; CPU only, needs nvcc and nvdisasm): for each of run_form.sh's
six rolled builds, its k loop's form (loop_forms.py), the lone warp's wait a step and the
step's instructions (sass_loops: `inner_warp_wait`, `inner_total`), the factor the model's
issue side grows by for that step at 2 and 4 warps a scheduler (queueing.warp_wait_factor
on the step's counts), and bench/sched/sim.py's issue rate for the step alone at 4 warps a
scheduler, in order and with 4 seeds of random order and shared loads up to 15 clocks late.

Usage: python bench/lsu/form_model.py"""

from __future__ import annotations

import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench" / "sched"))
sys.path.insert(0, str(ROOT / "bench" / "lsu"))
import loop_forms  # noqa: E402
import sim  # noqa: E402

from occupancy.build.compilers import nvdisasm_path  # noqa: E402
from occupancy.build.sass_loops import sass_loop_mix  # noqa: E402
from occupancy.tune.queueing import warp_wait_factor  # noqa: E402

BASE = ("-DTM=8", "-DTN=8", "-DPATTERN", "-DDOT", "-DREFILL", "-DHOIST", "-DBTILE", "-DSYNC=16")


def main() -> None:
    print(f"{'tiles':6} {'source':8} {'form':7} {'step':>4} {'lone wait':>9} "
          f"{'factor 8 / 16 warps':>19} {'sim, in order':>13} {'sim, 4 seeds':>12}")
    with tempfile.TemporaryDirectory() as tmp:
        for tiles in ("spread", "batch"):
            for form in ("as is", "-DPTR", "-DCHAIN"):
                defines = (*BASE, *(("-DBATCH=256",) if tiles == "batch" else ()),
                           *((form,) if form != "as is" else ()), "-DROLLED")
                cubin = loop_forms.compile_cubin(defines, tmp)
                plain = subprocess.run([nvdisasm_path() or "nvdisasm", "-c", str(cubin)],
                                       check=True, capture_output=True, text=True).stdout
                mix = dict(next(iter(sass_loop_mix(plain).values())))
                step = {k[len("inner_"):]: v for k, v in mix.items() if k.startswith("inner_")}
                body = loop_forms.innermost_body(cubin)  # the k loop, with its control bits
                rate = len(body) / sim.simulate(body, 4)
                jittered = len(body) * 4 / sum(sim.simulate(body, 4, 80, jitter=15, seed=s)
                                               for s in range(4))
                shape = loop_forms.form_of(body)
                print(f"{tiles:6} {form:8} {shape:7} {step['total']:4} {step['warp_wait']:9} "
                      f"{warp_wait_factor(step, 8):9.3f} / {warp_wait_factor(step, 16):.3f} "
                      f"{rate:13.2f} {jittered:12.2f}")


if __name__ == "__main__":
    main()
