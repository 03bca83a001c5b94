"""NVRTC in a process of its own: builds._nvrtc_ptx runs this file as a script
(`python -I -S nvrtc_child.py`) through run_tool, so NVRTC gets what every compiler gets
(limits, its own process group, a timeout, an end on SIGINT) and compiles on every core:
NVRTC serialises the compiles of one process (a second thread waits on its lock), which
made the NVRTC archs of a manifest one long serial stretch.

Standard library only (nothing of the package is imported): a JSON job on stdin, a JSON
answer on stdout: {"ptx", "lowered"} or {"log"} (the compile failed) or {"what", "error"}
(an NVRTC call failed).
"""

from __future__ import annotations

import ctypes
import json
import sys
from typing import Any


def compile_job(job: dict[str, Any]) -> dict[str, Any]:
    lib = ctypes.CDLL(job["lib"])
    lib.nvrtcGetErrorString.restype = ctypes.c_char_p
    prog = ctypes.c_void_p()

    class Failed(Exception):
        pass

    def check(status: int, what: str) -> None:
        if status != 0:
            raise Failed(what, lib.nvrtcGetErrorString(status).decode())

    try:
        check(lib.nvrtcCreateProgram(ctypes.byref(prog), job["text"].encode(),
                                     job["name"].encode(), 0, None, None), "create")
    except Failed as exc:
        return {"what": exc.args[0], "error": exc.args[1]}
    try:
        exprs = job["expressions"]
        for expr in exprs:
            check(lib.nvrtcAddNameExpression(prog, f"&{expr}".encode()), "name expression")
        opts = job["options"]
        arr = (ctypes.c_char_p * len(opts))(*[o.encode() for o in opts])
        if lib.nvrtcCompileProgram(prog, len(opts), arr) != 0:
            size = ctypes.c_size_t()
            lib.nvrtcGetProgramLogSize(prog, ctypes.byref(size))
            buf = ctypes.create_string_buffer(size.value)
            lib.nvrtcGetProgramLog(prog, buf)
            return {"log": buf.value.decode(errors="replace")}
        size = ctypes.c_size_t()
        check(lib.nvrtcGetPTXSize(prog, ctypes.byref(size)), "PTX size")
        buf = ctypes.create_string_buffer(size.value)
        check(lib.nvrtcGetPTX(prog, buf), "PTX")
        lowered = {}
        for expr in exprs:
            name = ctypes.c_char_p()
            if lib.nvrtcGetLoweredName(prog, f"&{expr}".encode(), ctypes.byref(name)) == 0 \
                    and name.value:
                lowered[expr] = name.value.decode()
        return {"ptx": buf.value.decode(), "lowered": lowered}
    except Failed as exc:
        return {"what": exc.args[0], "error": exc.args[1]}
    finally:
        lib.nvrtcDestroyProgram(ctypes.byref(prog))


if __name__ == "__main__":
    sys.stdout.write(json.dumps(compile_job(json.load(sys.stdin))))
