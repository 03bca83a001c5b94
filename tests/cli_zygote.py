"""The zygote side of tests/cli_runner.py: a fresh interpreter that imports the CLI once, then
forks one child per request; the child runs `python -m occupancy ARGS` as the interpreter would.

Started by tests/cli_runner.py as `python -c "from tests.cli_zygote import serve; serve()" FD`,
FD one end of a Unix socket pair. The zygote itself never runs a command: whatever a command
caches or loads happens in its child and dies with it. It ends when the socket reaches EOF (the
test process went away), ending a child that is still running.

Protocol (both ways): a 4-byte big-endian length, then that much JSON. A request carries the
child's stdout and stderr pipe ends as SCM_RIGHTS with its length header.
  test -> zygote: {"args", "cwd", "env"} (+ 2 fds); {"kill": true} while a child runs.
  zygote -> test: {"ready": pid, "problems": [...]} once; per request {"pid": n} or
                  {"pid": n, "oserror": [errno, strerror, filename]}, then {"status": waitstatus}.

Only the standard library is imported here before the preload, so that what the children see
loaded is the CLI and what its commands import, and little else.
"""

from __future__ import annotations

import json
import os
import select
import signal
import socket
import struct
import sys
from typing import Any

# Imported in the zygote once, so that no child pays for it: the CLI and every module of the
# package (the commands import most of them inside functions), and what the package imports
# inside functions from outside it (click's --version reads importlib.metadata). Never the
# optional heavy ones: importing them is slow, and some start threads, which a process that
# forks must not have.
EXTRA_MODULES = ["click", "yaml", "rich.console", "rich.progress", "json", "tempfile", "subprocess",
                 "struct", "difflib", "pickle", "select", "queue", "platform", "glob", "html",
                 "fractions", "ctypes", "importlib.util", "importlib.metadata"]
FORBIDDEN = ("cupy", "triton", "torch", "matplotlib", "numpy")
MAX_MESSAGE = 64 << 20


# --- framing, shared with tests/cli_runner.py ---------------------------------------------------

def send(sock: socket.socket, message: dict[str, Any], fds: list[int] | None = None) -> None:
    data = json.dumps(message).encode()
    header = struct.pack(">I", len(data))
    if fds:
        socket.send_fds(sock, [header], fds)
        sock.sendall(data)
    else:
        sock.sendall(header + data)


def recv(sock: socket.socket) -> tuple[dict[str, Any], list[int]] | None:
    """The next message and the fds that came with its header; None at EOF."""
    fds: list[int] = []
    header = b""
    data = bytearray()
    while len(header) < 4:
        chunk, new, _, _ = socket.recv_fds(sock, 4 - len(header), 4)
        fds += new
        if not chunk:
            break
        header += chunk
    else:
        (n,) = struct.unpack(">I", header)
        if n > MAX_MESSAGE:
            raise ValueError(f"a message of {n} bytes")
        while len(data) < n and (chunk := sock.recv(min(n - len(data), 1 << 20))):
            data += chunk
        if len(data) == n:
            return json.loads(data), fds
    for fd in fds:
        os.close(fd)
    return None


# --- the zygote ---------------------------------------------------------------------------------

def _threads() -> int:
    try:
        return len(os.listdir("/proc/self/task"))
    except OSError:
        import threading

        return threading.active_count()


def _preload() -> list[str]:
    """Import what the CLI needs; return what would make a child unlike `python -m occupancy`
    (an empty list when nothing would)."""
    import contextlib
    import importlib
    import pkgutil
    import warnings

    problems: list[str] = []
    with warnings.catch_warnings(record=True) as caught:
        import occupancy
        import occupancy.cli  # noqa: F401

        names = [m.name for m in pkgutil.walk_packages(occupancy.__path__, "occupancy.")
                 if m.name.rpartition(".")[2] != "__main__"]
        for name in names:
            importlib.import_module(name)
            heavy = [m for m in FORBIDDEN if m in sys.modules]
            if heavy:
                problems.append(f"importing {name} imports {', '.join(heavy)}: the zygote must not "
                                "load it (slow, and it may start threads before a fork)")
                break
        for name in EXTRA_MODULES:
            with contextlib.suppress(ImportError):
                importlib.import_module(name)
    # A fresh `python -m occupancy` would print these into every command's stderr.
    problems += [f"importing the CLI warns: {w.category.__name__}: {w.message} "
                 f"({w.filename}:{w.lineno})" for w in caught]
    if _threads() != 1:
        problems.append(f"the zygote has {_threads()} threads after its imports; it must have one to fork")
    return problems


def _stream(fd: int, like: Any, buffered: bool) -> Any:
    """A new sys.stdin/stdout/stderr on fd, made as the interpreter makes them at start-up
    (Python/pylifecycle.c: create_stdio), with the encoding and error handler this interpreter
    chose at its own start-up (the same environment chose them)."""
    import io

    write = fd != 0
    buf: Any = io.open(fd, "wb" if write else "rb", -1 if buffered or not write else 0,  # noqa: UP020
                       closefd=False)
    raw = buf.raw if hasattr(buf, "raw") else buf
    raw.name = ("<stdin>", "<stdout>", "<stderr>")[fd]
    text = io.TextIOWrapper(buf, encoding=like.encoding, errors=like.errors, newline="\n",
                            line_buffering=buffered and (os.isatty(fd) or fd == 2),
                            write_through=not buffered)
    text.mode = "w" if write else "r"  # type: ignore[misc]
    return text


def _exit_code(exc: SystemExit) -> int:
    """As the interpreter turns an uncaught SystemExit into a status (_Py_HandleSystemExit)."""
    code = exc.code
    if code is None:
        return 0
    if isinstance(code, int):
        return code if -(2**31) <= code < 2**31 else -1
    try:
        sys.stderr.write(f"{code}\n")
    except Exception:
        pass
    return 1


def _finalize(code: int) -> int:
    """What Py_FinalizeEx does before the process ends that a command could notice: wait for
    non-daemon threads, run atexit callbacks, flush stdout and stderr (a failed flush is
    reported and makes the status 120)."""
    import atexit
    import traceback

    threading = sys.modules.get("threading")
    if threading is not None:
        threading._shutdown()  # type: ignore[attr-defined]
    atexit._run_exitfuncs()
    out = sys.stdout
    if out is not None and not getattr(out, "closed", False):
        try:
            out.flush()
        except Exception as exc:
            try:
                sys.stderr.write(f"Exception ignored in: {out!r}\n"
                                 + "".join(traceback.format_exception_only(type(exc), exc)))
            except Exception:
                pass
            code = 120
    err = sys.stderr
    if err is not None and not getattr(err, "closed", False):
        try:
            err.flush()
        except Exception:
            code = 120
    return code


def _run_cli(req: dict[str, Any], first_path_is_cwd: bool) -> int:
    """`python -m occupancy *args` in this (forked) process; the exit status."""
    import importlib
    import runpy

    os.environ.clear()
    os.environ.update(req["env"])
    if "tempfile" in sys.modules:
        import tempfile

        tempfile.tempdir = None  # found from $TMPDIR etc. again, as in a fresh interpreter
    assert sys.__stdout__ is not None  # the zygote's is /dev/null
    buffered = not sys.__stdout__.write_through  # -u and $PYTHONUNBUFFERED make it False
    sys.stdin = sys.__stdin__ = _stream(0, sys.__stdin__, buffered)  # type: ignore[misc]
    sys.stdout = sys.__stdout__ = _stream(1, sys.__stdout__, buffered)  # type: ignore[misc]
    sys.stderr = sys.__stderr__ = _stream(2, sys.__stderr__, buffered)  # type: ignore[misc]
    main = sys.modules["__main__"]
    for name in [n for n in vars(main) if not n.startswith("__")]:
        delattr(main, name)  # the zygote's own names: __main__ starts empty
    args = req["args"]
    sys.argv = ["-m", *args]  # runpy sets argv[0] to occupancy/__main__.py, as -m does
    sys.orig_argv = [sys.executable, "-m", "occupancy", *args]
    if first_path_is_cwd:
        sys.path[0] = os.getcwd()  # -m puts the cwd first (-c, the zygote's, put '')
    importlib.invalidate_caches()
    code = 0
    interrupted = False
    try:
        runpy._run_module_as_main("occupancy")  # type: ignore[attr-defined]  # what -m runs
    except SystemExit as exc:
        code = _exit_code(exc)
    except BaseException as exc:  # an uncaught exception: a traceback on stderr, status 1
        interrupted = isinstance(exc, KeyboardInterrupt)
        tb = exc.__traceback__
        if tb is not None and tb.tb_frame.f_code is _run_cli.__code__:
            exc.__traceback__ = tb = tb.tb_next  # from runpy's frame on, as -m shows it
        sys.excepthook(type(exc), exc, tb)
        code = 1
    code = _finalize(code)
    if interrupted:  # the interpreter ends itself with SIGINT after an uncaught ^C
        signal.signal(signal.SIGINT, signal.SIG_DFL)
        os.kill(os.getpid(), signal.SIGINT)
    return code


def _child(sock: socket.socket, req: dict[str, Any], fds: list[int], errpipe: int,
           first_path_is_cwd: bool) -> None:
    code = 1
    try:
        try:
            sock.close()
            os.chdir(req["cwd"])
            devnull = os.open(os.devnull, os.O_RDWR)  # subprocess.DEVNULL's mode
            os.dup2(devnull, 0)
            os.dup2(fds[0], 1)
            os.dup2(fds[1], 2)
            for fd in {devnull, *fds}:
                if fd > 2:
                    os.close(fd)
        except OSError as exc:
            os.write(errpipe, json.dumps([exc.errno, exc.strerror, exc.filename]).encode())
            code = 255
            return
        os.close(errpipe)
        code = _run_cli(req, first_path_is_cwd)
    finally:
        os._exit(code)


def _wait(sock: socket.socket, pid: int) -> int | None:
    """The child's wait status once it ends; a kill request (a timeout) SIGKILLs it, as
    subprocess.run does. None: the socket reached EOF (the test process is gone), and the child
    was ended with it."""
    try:
        pidfd: int | None = os.pidfd_open(pid)
    except (AttributeError, OSError):
        pidfd = None  # no pidfds: poll
    try:
        while True:
            ready, _, _ = select.select([sock] + ([pidfd] if pidfd is not None else []), [], [],
                                        None if pidfd is not None else 0.005)
            if sock in ready:
                got = recv(sock)
                if got is None:
                    break
                for fd in got[1]:
                    os.close(fd)
                if got[0].get("kill"):
                    os.kill(pid, signal.SIGKILL)  # not reaped yet: the pid is still this child
            done, status = os.waitpid(pid, os.WNOHANG)
            if done:
                return status
    except BaseException:  # ^C in the zygote: its child does not outlive it
        _end(pid)
        raise
    finally:
        if pidfd is not None:
            os.close(pidfd)
    _end(pid)
    return None


def _end(pid: int, grace_s: float = 5.0) -> None:
    """SIGTERM, as a terminal closing would send: the CLI ends its tools' process groups and
    removes its temporary folders; SIGKILL if it has not ended within grace_s."""
    import time

    try:
        os.kill(pid, signal.SIGTERM)
        deadline = time.monotonic() + grace_s
        while time.monotonic() < deadline:
            if os.waitpid(pid, os.WNOHANG)[0]:
                return
            time.sleep(0.02)
        os.kill(pid, signal.SIGKILL)
        os.waitpid(pid, 0)
    except OSError:
        pass


def serve() -> None:
    sock = socket.socket(fileno=int(sys.argv[1]))
    try:
        _serve(sock)
    except (KeyboardInterrupt, BrokenPipeError, ConnectionResetError):
        pass  # ^C, or the test process went away: end quietly


def _serve(sock: socket.socket) -> None:
    first_path_is_cwd = sys.path[:1] == [""]
    problems = _preload()
    send(sock, {"ready": os.getpid(), "problems": problems})
    if problems:
        return
    while True:
        got = recv(sock)
        if got is None:
            return
        req, fds = got
        if "args" not in req:  # a kill that came after its child had ended
            for fd in fds:
                os.close(fd)
            continue
        errpipe_r, errpipe_w = os.pipe()
        pid = os.fork()
        if pid == 0:
            os.close(errpipe_r)
            _child(sock, req, fds, errpipe_w, first_path_is_cwd)
        os.close(errpipe_w)
        for fd in fds:
            os.close(fd)
        err = b""
        while chunk := os.read(errpipe_r, 4096):  # EOF once the child has its fds and cwd
            err += chunk
        os.close(errpipe_r)
        send(sock, {"pid": pid, **({"oserror": json.loads(err)} if err else {})})
        status = _wait(sock, pid)
        if status is None:
            return
        send(sock, {"status": status})
