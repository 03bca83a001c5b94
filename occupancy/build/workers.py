"""A bounded pool of fresh worker interpreters for CPU-heavy jobs (compiles).

Each worker is `python -c` serving one job at a time over its pipes (length-prefixed
pickles), so slow jobs do not hold up a fixed share, a worker never inherits the caller's
CUDA context, and the caller's script needs no `if __name__ == "__main__"` guard (which
multiprocessing's spawn would). The job function is named 'module:function' and must be
importable with the caller's sys.path.
"""

from __future__ import annotations

import importlib
import os
import sys
from pathlib import Path
from typing import Any

from occupancy.core.errors import OccupancyError


def run_jobs(func: str, jobs_list: list[Any], jobs: int | None = None) -> list[Any]:
    """func(job) for every job, in `jobs` workers (default: the CPUs), results in order."""
    import queue
    import threading

    n = max(1, min(jobs or os.cpu_count() or 1, len(jobs_list)))
    results: list[Any] = [None] * len(jobs_list)
    todo: queue.Queue[int] = queue.Queue()
    for i in range(len(jobs_list)):
        todo.put(i)
    failures: list[BaseException] = []

    def drive() -> None:
        try:
            with _Worker(func) as w:
                while True:
                    try:
                        i = todo.get_nowait()
                    except queue.Empty:
                        return
                    results[i] = w.run(jobs_list[i])
        except BaseException as e:  # reported below, after the other workers finish
            failures.append(e)

    threads = [threading.Thread(target=drive, daemon=True) for _ in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    if failures:
        raise failures[0]
    return results


class _Worker:
    """One `python -c` process compiling jobs sent as length-prefixed pickles."""

    def __init__(self, func: str) -> None:
        self.func = func

    def __enter__(self) -> _Worker:
        import subprocess

        root = str(Path(__file__).resolve().parents[2])
        env = {**os.environ, "PYTHONPATH": os.pathsep.join([root, *sys.path])}
        self.proc = subprocess.Popen(
            [sys.executable, "-c", "from occupancy.build.workers import serve; serve()", self.func],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, env=env)
        return self

    def run(self, job: Any) -> Any:
        import pickle

        assert self.proc.stdin is not None and self.proc.stdout is not None
        _send(self.proc.stdin, pickle.dumps(job))
        blob = _recv(self.proc.stdout)
        if blob is None:
            raise OccupancyError(f"a worker running {self.func} died (exit {self.proc.wait()}) "
                                 f"on {job!r}"[:500])
        return pickle.loads(blob)  # noqa: S301 - our own child's answer

    def __exit__(self, *exc: object) -> None:
        if self.proc.stdin:
            self.proc.stdin.close()
        self.proc.wait()


def _send(fh: Any, blob: bytes) -> None:
    fh.write(len(blob).to_bytes(8, "little") + blob)
    fh.flush()


def _recv(fh: Any) -> bytes | None:
    head = fh.read(8)
    if len(head) < 8:
        return None
    return fh.read(int.from_bytes(head, "little"))


def serve() -> None:
    """The worker's loop: a job in, func(job) out, until stdin closes."""
    import pickle

    module, _, name = sys.argv[1].partition(":")
    func = getattr(importlib.import_module(module), name)
    inp, out = sys.stdin.buffer, sys.stdout.buffer
    sys.stdout = sys.stderr  # Triton's own prints must not corrupt the channel
    while (blob := _recv(inp)) is not None:
        _send(out, pickle.dumps(func(pickle.loads(blob))))  # noqa: S301
