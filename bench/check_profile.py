"""Where a cold `occupancy check` spends its time: every tool it runs (nvcc, the NVRTC child,
ptxas, nvdisasm, c++filt, nvlink), how often, wall and CPU seconds, and the Python process's
own CPU. The manifests are check_realcode_speed.py's (`project` or `llmc`).

With --serial the builds run one at a time, so each tool's CPU (getrusage of the children
before and after it) is exactly its own; without it they run as `check` runs them.
In-process NVRTC (before it moved to a child process) is timed by its thread's CPU.
Run: python bench/check_profile.py project|llmc [--serial] [--out FILE.json]
Prints the profile as JSON; --out also writes check's own JSON output there.
"""

from __future__ import annotations

import collections
import contextlib
import io
import json
import os
import resource
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT), str(ROOT / "bench")]


def main() -> None:
    import check_realcode_speed as bench

    which = sys.argv[1]
    serial = "--serial" in sys.argv
    out_file = sys.argv[sys.argv.index("--out") + 1] if "--out" in sys.argv else None
    tmp = Path(tempfile.mkdtemp(prefix="occ-profile-"))
    manifest, _ = (bench.project_manifest if which == "project" else bench.llmc_manifest)(tmp)
    os.environ["OCCUPANCY_CACHE_DIR"] = str(tmp / "cache")

    import occupancy.build.builds as builds
    import occupancy.build.compilers as compilers
    import occupancy.build.run as run

    stats: dict[str, list[float]] = collections.defaultdict(lambda: [0, 0.0, 0.0])
    lock = threading.Lock()
    real_run = run.run_tool

    def timed(cmd: Any, **kw: Any) -> Any:
        t0, c0 = time.perf_counter(), resource.getrusage(resource.RUSAGE_CHILDREN)
        try:
            return real_run(cmd, **kw)
        finally:
            c1 = resource.getrusage(resource.RUSAGE_CHILDREN)
            name = os.path.basename(cmd[0])
            if any(str(a).endswith("nvrtc_child.py") for a in cmd):
                name = "nvrtc (child process)"
            elif name == "nvcc" and "-E" in cmd:
                name = "nvcc -E"
            elif name == "nvcc" and "--version" in cmd:
                name = "nvcc --version"
            with lock:
                s = stats[name]
                s[0] += 1
                s[1] += time.perf_counter() - t0
                s[2] += c1.ru_utime + c1.ru_stime - c0.ru_utime - c0.ru_stime

    mods = [run, builds, compilers]
    for name in ("batch", "link", "images"):
        with contextlib.suppress(ImportError):
            mods.append(__import__(f"occupancy.build.{name}", fromlist=["_"]))
    for m in mods:
        if hasattr(m, "run_tool"):
            m.run_tool = timed  # type: ignore[attr-defined]
    if hasattr(builds, "ctypes"):  # NVRTC in this process (before the child process)
        real_ptx = builds._nvrtc_ptx

        def ptx_timed(*a: Any) -> Any:
            t0, c0 = time.perf_counter(), time.thread_time()
            try:
                return real_ptx(*a)
            finally:
                with lock:
                    s = stats["nvrtc (in process)"]
                    s[0] += 1
                    s[1] += time.perf_counter() - t0
                    s[2] += time.thread_time() - c0

        builds._nvrtc_ptx = ptx_timed  # type: ignore[assignment]
    if serial:
        def one_at_a_time(fn: Any, items: Any) -> list[Any]:
            out: list[Any] = []
            for x in items:
                try:
                    out.append(fn(x))
                except Exception as exc:  # noqa: BLE001, PERF203 - as parallel_map hands it back
                    out.append(exc)
            return out

        for m in [compilers, *mods[3:]]:
            if hasattr(m, "parallel_map"):
                m.parallel_map = one_at_a_time  # type: ignore[attr-defined]
        with contextlib.suppress(ImportError):
            import occupancy.build.resolve as resolve
            if hasattr(resolve, "parallel_map"):
                resolve.parallel_map = one_at_a_time  # type: ignore[attr-defined]

    from occupancy.cli import main as cli

    load = os.getloadavg()[0]
    t0, p0 = time.perf_counter(), time.process_time()
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf), contextlib.suppress(SystemExit):
        cli(["check", str(manifest), "--format", "json"], standalone_mode=False)
    wall = time.perf_counter() - t0
    ru = resource.getrusage(resource.RUSAGE_CHILDREN)
    report = {"manifest": which, "serial": serial, "wall_s": round(wall, 1),
              "python_cpu_s": round(time.process_time() - p0, 1),
              "children_cpu_s": round(ru.ru_utime + ru.ru_stime, 1),
              "load_avg_1min_before": round(load, 2),
              "load_avg_1min_after": round(os.getloadavg()[0], 2),
              "tools": {k: {"runs": int(v[0]), "wall_s": round(v[1], 1), "cpu_s": round(v[2], 1)}
                        for k, v in sorted(stats.items())}}
    print(json.dumps(report, indent=1))
    if out_file:
        Path(out_file).write_text(buf.getvalue())


if __name__ == "__main__":
    main()
