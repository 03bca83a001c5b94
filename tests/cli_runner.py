"""`python -m occupancy ARGS` for tests, each case in its own process, without paying for a
fresh interpreter each time.

Most of the 0.5-0.9 s a hostile-input case cost was the interpreter starting and importing the
package. Here one "zygote" per test process (one per pytest-xdist worker) is started on first
use: a fresh `sys.executable` with this checkout first on PYTHONPATH (ENV), which imports the CLI
and the modules its commands import lazily, then waits (tests/cli_zygote.py). For each case it
forks a child, which is what `python -m occupancy ARGS` would be after its imports: its own
process, in the cwd and the environment asked for, stdin /dev/null, stdout and stderr pipes read
here, the CLI run by runpy as -m runs it, its exit status the process's (atexit callbacks, the
flush of stdout, a traceback and status 1 for an uncaught exception: as the interpreter does).
The zygote never runs a command itself, so nothing a command caches or loads reaches the next.

The child stays in the test process's process group and session, as subprocess.run's child
did (Ctrl-C at a terminal reaches it too); a timeout SIGKILLs it alone and raises
TimeoutExpired, as subprocess.run does; if the test process dies, the zygote sees EOF and ends
its running child (SIGTERM, so the CLI ends its tools and removes its temporary folders, then
SIGKILL) and itself.

What a forked child cannot reproduce is what an interpreter decides as it starts. So a case
whose environment differs from the zygote's in a variable read at start-up (PYTHON*, LC_*,
LANG, LD_*, HOME, TZ: `startup_variable`) runs in a fresh interpreter instead, as every case
does when $OCCUPANCY_TESTS_FRESH_CLI is set (to compare the two); tests that need a stdout
closed or full from the start, or a process of their own to signal, start their own. All
children share the zygote's hash seed, and a module the zygote imported cannot be shadowed by a
file in the case's cwd.
"""

from __future__ import annotations

import atexit
import locale
import os
import select
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from tests.cli_zygote import recv, send

ROOT = Path(__file__).resolve().parent.parent
# The CLI of this checkout, whatever the cwd (a relative PYTHONPATH or an editable install of
# another checkout would otherwise test other code)
ENV = {"PYTHONPATH": os.pathsep.join([str(ROOT), *filter(None, [os.environ.get("PYTHONPATH")])])}
FRESH = "OCCUPANCY_TESTS_FRESH_CLI"  # set (to anything but "" or "0"): every case a fresh interpreter
START_S = 120.0  # the zygote's imports, on a loaded 2-core machine
KILL_S = 30.0  # a SIGKILLed child is reaped well within this

_STARTUP_PREFIXES = ("PYTHON", "LC_", "LD_", "MALLOC_")
_STARTUP_NAMES = {"LANG", "HOME", "TZ", "GLIBC_TUNABLES"}


def startup_variable(name: str) -> bool:
    """Read when a process or interpreter starts (a change after the fork would not apply):
    PYTHON* (sys.path, flags, hash seed, stdio), the locale (stdio encoding), the dynamic
    loader's and malloc's settings, HOME (the user site-packages), TZ (time.tzset at import)."""
    return name.startswith(_STARTUP_PREFIXES) or name in _STARTUP_NAMES


def _text_encoding() -> str:
    """The encoding subprocess.run(text=True) decodes with."""
    if sys.flags.utf8_mode:
        return "utf-8"
    getencoding = getattr(locale, "getencoding", None)  # 3.11+
    return getencoding() if getencoding else locale.getpreferredencoding(False)


def _decode(data: bytes) -> str:
    """As subprocess.run(text=True): the locale's encoding, strict, universal newlines."""
    return data.decode(_text_encoding()).replace("\r\n", "\n").replace("\r", "\n")


def _checked_args(args: Sequence[str]) -> list[str]:
    """The arguments; the errors subprocess would raise for ones no process can be given."""
    out = []
    for a in args:
        a = os.fspath(a)
        if not isinstance(a, str):
            raise TypeError(f"expected str, not {type(a).__name__}")
        if "\0" in a or b"\0" in os.fsencode(a):
            raise ValueError("embedded null byte")
        out.append(a)
    return out


def _checked_env(env: Mapping[str, str]) -> dict[str, str]:
    for k, v in env.items():
        if b"=" in os.fsencode(k):
            raise ValueError("illegal environment variable name")
        if b"\0" in os.fsencode(k) or b"\0" in os.fsencode(v):
            raise ValueError("embedded null byte")
    return dict(env)


class ZygoteError(RuntimeError):
    pass


class _Zygote:
    def __init__(self, env: dict[str, str]) -> None:
        self.env = env
        self.owner = os.getpid()
        self.in_sync = True  # no request is under way
        self.log = tempfile.TemporaryFile()  # the zygote's own stderr: shown if it fails
        self.sock, theirs = socket.socketpair()
        try:
            self.proc = subprocess.Popen(
                [sys.executable, "-c", "from tests.cli_zygote import serve; serve()",
                 str(theirs.fileno())], cwd=ROOT, env=env, stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL, stderr=self.log, pass_fds=[theirs.fileno()])
        finally:
            theirs.close()
        ready = self._next(time.monotonic() + START_S)
        if ready.get("problems"):
            self.close()
            raise ZygoteError("the CLI's zygote cannot stand in for a fresh interpreter:\n"
                              + "\n".join(ready["problems"]))

    def _log(self) -> str:
        self.log.seek(0)
        return self.log.read()[-4000:].decode(errors="replace")

    def _next(self, deadline: float) -> dict[str, Any]:
        """The zygote's next message (it sends no fds)."""
        left = deadline - time.monotonic()
        if left <= 0 or not select.select([self.sock], [], [], left)[0]:
            self.close()
            raise ZygoteError(f"the CLI's zygote did not answer\n{self._log()}")
        got = recv(self.sock)
        if got is None:
            self.close()
            raise ZygoteError(f"the CLI's zygote ended (status {self.proc.returncode})\n"
                              f"{self._log()}")
        return got[0]

    def run(self, cmd: list[str], args: list[str], cwd: str, env: dict[str, str],
            timeout: float | None) -> subprocess.CompletedProcess[str]:
        out_r, out_w = os.pipe()
        err_r, err_w = os.pipe()
        self.in_sync = False  # until the child's status is in
        try:
            try:
                send(self.sock, {"args": args, "cwd": cwd, "env": env}, [out_w, err_w])
            finally:
                os.close(out_w)
                os.close(err_w)
            return self._collect(cmd, out_r, err_r, timeout)
        except BaseException:
            if not self.in_sync:  # ^C while it ran, or a broken zygote: a new one next time
                self.close()
            raise
        finally:
            os.close(out_r)
            os.close(err_r)

    def _collect(self, cmd: list[str], out_r: int, err_r: int, timeout: float | None,
                 ) -> subprocess.CompletedProcess[str]:
        """As subprocess.run's communicate: both pipes to EOF and the child's status, or
        TimeoutExpired with what it had written (the child is killed first)."""
        deadline = None if timeout is None else time.monotonic() + timeout
        chunks: dict[int, list[bytes]] = {out_r: [], err_r: []}
        reading = {out_r, err_r}
        msgs: dict[str, Any] = {}
        while reading or "status" not in msgs:
            left = None if deadline is None else deadline - time.monotonic()
            if left is not None and left <= 0:
                break
            watch: list[Any] = [*reading] + ([self.sock] if "status" not in msgs else [])
            for fd in select.select(watch, [], [], left)[0]:
                if fd is self.sock:
                    msgs.update(self._next(time.monotonic() + KILL_S))
                    self.in_sync = "status" in msgs
                elif data := os.read(fd, 32768):
                    chunks[fd].append(data)
                else:
                    reading.discard(fd)
        else:
            if "oserror" in msgs:  # as subprocess raises the child's cwd error in the parent
                raise OSError(*msgs["oserror"])
            return subprocess.CompletedProcess(cmd, os.waitstatus_to_exitcode(msgs["status"]),
                                               _decode(b"".join(chunks[out_r])),
                                               _decode(b"".join(chunks[err_r])))
        if "status" not in msgs:
            send(self.sock, {"kill": True})
            end = time.monotonic() + KILL_S
            while "status" not in msgs:
                msgs.update(self._next(end))
            self.in_sync = True
        assert timeout is not None
        raise subprocess.TimeoutExpired(cmd, timeout, output=b"".join(chunks[out_r]) or None,
                                        stderr=b"".join(chunks[err_r]) or None)

    def close(self) -> None:
        """EOF ends the zygote and any child it runs."""
        self.sock.close()
        if os.getpid() == self.owner:
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.log.close()


_lock = threading.Lock()
_zygote: _Zygote | None = None


def _current() -> _Zygote | None:
    """This process's zygote, if it has one (a fork of the test process does not share its
    parent's)."""
    global _zygote
    if _zygote is not None and (_zygote.owner != os.getpid() or _zygote.sock.fileno() < 0):
        _zygote = None
    return _zygote


def start(env: Mapping[str, str] | None = None) -> None:
    """Start this process's zygote now (run_cli would on first use), with the environment
    os.environ + ENV unless env says otherwise."""
    global _zygote
    if os.environ.get(FRESH, "0") not in ("", "0"):
        return
    with _lock:
        if _current() is None:
            _zygote = _Zygote(_checked_env(env if env is not None else {**os.environ, **ENV}))


def _shutdown() -> None:
    z = _current()  # not under _lock: a daemon thread may hold it as the process ends
    if z is not None:
        z.close()


atexit.register(_shutdown)


def run_cli(args: Sequence[str], cwd: str | os.PathLike[str], env: Mapping[str, str],
            timeout: float | None) -> subprocess.CompletedProcess[str]:
    """`python -m occupancy *args` in cwd with exactly the environment env, stdin /dev/null,
    stdout and stderr captured: as subprocess.run(..., capture_output=True, text=True,
    timeout=timeout) would return or raise, TimeoutExpired included."""
    cmd = [sys.executable, "-m", "occupancy", *args]
    args, env = _checked_args(args), _checked_env(env)
    start()
    with _lock:
        z = _current()
        if z is not None and not any(startup_variable(k) and env.get(k) != z.env.get(k)
                                     for k in {*env, *z.env}):
            return z.run(cmd, args, os.path.abspath(cwd), env, timeout)
    # $OCCUPANCY_TESTS_FRESH_CLI, or an environment the zygote did not start with: a fresh
    # interpreter, as the tests ran every case before the zygote
    return subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, timeout=timeout,
                          stdin=subprocess.DEVNULL, env=env)
