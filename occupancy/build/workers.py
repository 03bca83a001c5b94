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
from collections.abc import Callable
from pathlib import Path
from typing import Any

from occupancy.core.errors import OccupancyError


class WorkerLost(OccupancyError):
    """A worker died or ran past the time limit on a job."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


def run_jobs(func: str, jobs_list: list[Any], jobs: int | None = None, *,
             timeout: float | None = None,
             on_lost: Callable[[Any, str], Any] | None = None) -> list[Any]:
    """func(job) for every job, in `jobs` workers (default: the CPUs), results in order.

    A job that kills its worker or runs past `timeout` seconds gives on_lost(job, reason)
    (the worker is replaced and the others go on); without on_lost, WorkerLost is raised."""
    import queue
    import threading

    n = max(1, min(jobs or os.cpu_count() or 1, len(jobs_list)))
    results: list[Any] = [None] * len(jobs_list)
    todo: queue.Queue[int] = queue.Queue()
    for i in range(len(jobs_list)):
        todo.put(i)
    failures: list[BaseException] = []

    def drive() -> None:
        worker: _Worker | None = None
        try:
            while True:
                try:
                    i = todo.get_nowait()
                except queue.Empty:
                    return
                worker = worker or _Worker(func)
                try:
                    results[i] = worker.run(jobs_list[i], timeout)
                except WorkerLost as e:
                    worker.kill()
                    worker = None
                    if on_lost is None:
                        raise
                    results[i] = on_lost(jobs_list[i], e.reason)
        except BaseException as e:  # reported below, after the other workers finish
            failures.append(e)
        finally:
            if worker is not None:
                worker.close()

    threads = [threading.Thread(target=drive, daemon=True) for _ in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    if failures:
        raise failures[0]
    return results


class _Worker:
    """One `python -c` process running jobs sent as length-prefixed pickles."""

    def __init__(self, func: str) -> None:
        import subprocess

        self.func = func
        root = str(Path(__file__).resolve().parents[2])
        env = {**os.environ, "PYTHONPATH": os.pathsep.join([root, *sys.path])}
        self.proc = subprocess.Popen(
            [sys.executable, "-c", "from occupancy.build.workers import serve; serve()", func],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, env=env)

    def run(self, job: Any, timeout: float | None = None) -> Any:
        import pickle
        import select

        assert self.proc.stdin is not None and self.proc.stdout is not None
        try:
            _send(self.proc.stdin, pickle.dumps(job))
        except OSError:
            raise WorkerLost(f"worker died (exit {self.proc.wait()})") from None
        if timeout is not None:
            ready, _, _ = select.select([self.proc.stdout], [], [], timeout)
            if not ready:
                raise WorkerLost(f"timed out after {timeout:g} s")
        blob = _recv(self.proc.stdout)
        if blob is None:
            raise WorkerLost(f"worker died (exit {self.proc.wait()})")
        return pickle.loads(blob)  # noqa: S301 - our own child's answer

    def kill(self) -> None:
        self.proc.kill()
        self.proc.wait()

    def close(self) -> None:
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
