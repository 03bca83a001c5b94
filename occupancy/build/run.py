"""Running an external tool (nvcc, ptxas, cuobjdump, nvdisasm, c++filt) under limits.

Inputs may be hostile: a fatbin can declare gigabytes, a source can include /dev/zero. So
every tool runs with limits set in the child before it starts (address space, CPU time,
file size, no core files), in its own process group (a compiler's own children, cicc and
ptxas, are ended with it), and with its output in files whose size the limit bounds.
SIGINT and SIGTERM end every running group before this process unwinds (its temporary
folders are removed on the way out) and exits 130 or 143; compile threads start no new
tool after that. The limits are set by preexec_fn: it only calls setrlimit and
pthread_sigmask (no locks, no imports), which is safe beside the compile threads.
"""

from __future__ import annotations

import errno
import os
import signal
import threading
from collections.abc import Callable, Sequence
from types import FrameType
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # subprocess and tempfile load when a tool runs, not at every start
    import subprocess

GIB = 1 << 30
COMPILER_MEMORY = 4 * GIB  # nvcc + cicc + ptxas of a CUTLASS-sized kernel stay well under
TOOL_MEMORY = 2 * GIB  # cuobjdump, nvdisasm, c++filt
OUTPUT_LIMIT = 256 << 20  # bytes any one file a tool writes may hold (its stdout included)
_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)
_live: set[int] = set()  # process groups (= leader pids) of tools running now
_stopping = False  # a signal arrived: compile threads start no new tool


class ReadsDevice(OSError):
    """A tool opened a FIFO or socket (an #include built from a macro reaches what the
    include scan cannot see): it would wait without end. (A device it reads without end,
    /dev/zero, ends on the memory limit.)"""


POLL_S = 1.0  # the first look at a running tool's open files; the wait doubles up to POLL_MAX_S
POLL_MAX_S = 8.0
_HARMLESS = ("/dev/null", "/dev/urandom", "/dev/random")


def _device_open(group: int) -> str | None:
    """A FIFO or socket that a process of the tool's group has open, or is blocked opening,
    from /proc (None elsewhere, or if none)."""
    import stat

    try:
        pids = [p for p in os.listdir("/proc") if p.isdigit()]
    except OSError:
        return None
    for pid in pids:
        try:
            with open(f"/proc/{pid}/stat", "rb") as fh:
                line = fh.read()
            if int(line[line.rindex(b")") + 2:].split()[2]) != group:  # state, ppid, pgrp
                continue
            with open(f"/proc/{pid}/wchan", "rb") as fh:
                if fh.read() in (b"wait_for_partner", b"fifo_open"):  # blocked opening a FIFO
                    return _opening(pid) or "a FIFO"
            for fd in os.listdir(f"/proc/{pid}/fd"):
                target = os.readlink(f"/proc/{pid}/fd/{fd}")
                if not target.startswith("/") or target in _HARMLESS:
                    continue  # pipe:[..], socket:[..], anon_inode:..
                mode = os.stat(target).st_mode
                if stat.S_ISFIFO(mode) or stat.S_ISSOCK(mode):
                    return target
        except (OSError, ValueError, IndexError):
            continue  # gone, not ours to read, or a deleted file
    return None


def _opening(pid: str) -> str | None:
    """The path a process blocked in open/openat asks for (x86-64 or aarch64 numbers), read
    from its memory; None where the system does not let us."""
    try:
        with open(f"/proc/{pid}/syscall", "rb") as fh:
            nr, *args = fh.read().split()
        at = {b"2": 0, b"257": 1, b"56": 1}.get(nr)  # open(path), openat(dirfd, path)
        if at is None:
            return None
        with open(f"/proc/{pid}/mem", "rb") as mem:
            mem.seek(int(args[at], 16))
            raw = mem.read(4096)
        return raw.split(b"\0", 1)[0].decode("utf-8", errors="replace") or None
    except (OSError, ValueError, IndexError, OverflowError):
        return None


class Terminated(BaseException):
    """SIGTERM (or SIGHUP, the terminal closed) arrived: unwind (temporary folders go) and
    exit 128 + the signal."""

    def __init__(self, signum: int) -> None:
        super().__init__(signum)
        self.exit_code = 128 + signum


def _limits(memory: int, cpu_s: int, output: int) -> Callable[[], None]:
    import resource  # here, in the parent: the child imports nothing (and most runs fork none)

    def apply() -> None:  # runs in the child, between fork and exec
        signal.pthread_sigmask(signal.SIG_UNBLOCK, _SIGNALS)
        for res, value in ((resource.RLIMIT_AS, memory), (resource.RLIMIT_CPU, cpu_s),
                           (resource.RLIMIT_FSIZE, output), (resource.RLIMIT_CORE, 0)):
            soft, hard = resource.getrlimit(res)
            cap = value if hard == resource.RLIM_INFINITY else min(value, hard)
            resource.setrlimit(res, (cap, cap))

    return apply


def _end_group(pid: int) -> None:
    try:
        os.killpg(pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


def end_all() -> None:
    """Kill every tool group still running (the signal handlers call this first)."""
    for pid in list(_live):
        _end_group(pid)


def _read(f: object, limit: int = OUTPUT_LIMIT) -> str:
    assert hasattr(f, "seek") and hasattr(f, "read")
    f.seek(0)
    return f.read(limit).decode("utf-8", errors="replace")


def run_tool(cmd: Sequence[str], *, timeout: float, memory: int = TOOL_MEMORY,
             cwd: str | None = None, stdin: str | None = None,
             env: dict[str, str] | None = None,
             output: int = OUTPUT_LIMIT) -> subprocess.CompletedProcess[str]:
    """Run a tool to completion under limits; its group is killed on a timeout, an error
    or a signal. Raises subprocess.TimeoutExpired and OSError as subprocess.run does.
    `output`: the bytes any file it writes may hold, its stdout and stderr included."""
    import subprocess
    import tempfile

    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err, \
            tempfile.TemporaryFile() as inp:
        if stdin is not None:
            inp.write(stdin.encode("utf-8", errors="replace"))
            inp.seek(0)
        old = signal.pthread_sigmask(signal.SIG_BLOCK, _SIGNALS)  # no gap before _live knows it
        try:
            if _stopping:  # a compile thread after SIGINT/SIGTERM: start nothing new
                raise OSError(errno.ECANCELED, "interrupted")
            proc = subprocess.Popen(list(cmd), stdin=inp if stdin is not None else subprocess.DEVNULL,
                                    stdout=out, stderr=err, cwd=cwd, env=env, start_new_session=True,
                                    preexec_fn=_limits(memory, int(timeout) + 1, output))
            _live.add(proc.pid)
        finally:
            signal.pthread_sigmask(signal.SIG_SETMASK, old)
        try:
            rc = _wait(proc, timeout)
        finally:
            _end_group(proc.pid)  # stragglers too, and everything on a timeout or a signal
            proc.wait()
            _live.discard(proc.pid)
        return subprocess.CompletedProcess(list(cmd), rc, _read(out, output), _read(err, output))


def _wait(proc: subprocess.Popen[bytes], timeout: float) -> int:
    """The tool's exit status; TimeoutExpired after `timeout`, ReadsDevice as soon as a look
    (after POLL_S, then twice as long each time up to POLL_MAX_S) finds it holding a FIFO or
    socket open."""
    import subprocess
    import time

    deadline = time.monotonic() + timeout
    poll = POLL_S
    while True:
        try:
            return proc.wait(timeout=max(min(poll, deadline - time.monotonic()), 0.001))
        except subprocess.TimeoutExpired:
            if time.monotonic() >= deadline:
                raise
        poll = min(2 * poll, POLL_MAX_S)  # a long compile is looked at less often
        found = _device_open(proc.pid)
        if found is not None:
            raise ReadsDevice(errno.EPERM, found)  # strerror: the path


def _on_signal(signum: int, frame: FrameType | None) -> None:
    global _stopping
    _stopping = True
    end_all()
    if signum == signal.SIGINT:
        raise KeyboardInterrupt
    raise Terminated(signum)


def install_signal_handlers() -> None:
    """SIGINT, SIGTERM and SIGHUP end the tools, then unwind this process (the CLI calls
    this)."""
    if threading.current_thread() is not threading.main_thread():
        return  # only the main thread may set handlers (the CLI run from a test's thread)
    for s in _SIGNALS:
        if signal.getsignal(s) is not signal.SIG_IGN:  # `nohup`, a background job: keep it so
            signal.signal(s, _on_signal)
