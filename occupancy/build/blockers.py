"""What a compiler cannot build that a file needs, and what builds it instead (the hint a
failed NVRTC or nvcc compile carries: builds.py)."""

from __future__ import annotations

import os
import re

from occupancy.build.compilers import CUDA_ROOTS

_HOST_CODE = re.compile(r"host variables are not allowed|host functions are not allowed|"
                        r"identifier \"(?:printf|malloc|cudaMalloc\w*|"
                        r"cudaMemcpy\w*|fprintf)\" is undefined")
_CANNOT_OPEN = re.compile(r"cannot open source file \"(?!cuda_|cooperative_groups|mma|cub/|thrust/|"
                          r"cuda/|crt/|nv/)([\w/.+-]{1,200})\"")
# where a host compiler finds its own headers (stdio.h, vector): NVRTC does not look there
_HOST_INCLUDE = ("/usr/include", "/usr/local/include", "/usr/include/x86_64-linux-gnu",
                 "/usr/include/aarch64-linux-gnu")


def _host_header(log: str) -> bool:
    """Whether NVRTC missed a header that the host compiler has (`#include <vector>`): host
    code. A header found nowhere is the file's own error, not NVRTC's limit."""
    import glob

    dirs = [*_HOST_INCLUDE, *glob.glob("/usr/include/c++/*")]
    # only a name inside those folders: not absolute, no `..` (a log is the file's words)
    return any(os.path.isfile(os.path.join(d, m.group(1))) for m in _CANNOT_OPEN.finditer(log)
               if not os.path.isabs(m.group(1)) and ".." not in m.group(1).split("/")
               for d in dirs)


def nvrtc_blocker(log: str, arch: str, rdc: bool = False) -> str:
    """What NVRTC cannot do that the file needs, and what builds it instead."""
    where = (f"{arch} then needs a CUDA 12 nvcc (CUDA 13 starts at sm_75; none found on PATH, "
             f"in $CUDA_HOME or under {CUDA_ROOTS}): install one and it is used (a manifest "
             f"can name it: 'compilers: {{{arch}: /usr/local/cuda-12.X/bin/nvcc}}'); or give "
             "its ptxas log or cubin")
    if "requires --extended-lambda" in log:
        return (" (the file has __host__ __device__ lambdas (nvcc --extended-lambda), which "
                f"NVRTC cannot compile: {where})")
    if _HOST_CODE.search(log) or _host_header(log):
        return f" (NVRTC builds device code only and this file has host code: {where})"
    return nvcc_blocker(log, rdc)


# nvcc: a launch from device code; ptxas: a call to a function of another file; NVRTC: a launch
_SEPARATE = re.compile(r"requires separate compilation mode|Unresolved extern function|"
                       r"device-side kernel launch could not be processed")


def nvcc_blocker(log: str, rdc: bool) -> str:
    """What a failed compile needs from the flags: a kernel launched from device code
    (dynamic parallelism) or an extern __device__ function builds only with -rdc=true."""
    if _SEPARATE.search(log) and not rdc:
        return (" (kernels launched from device code and functions defined in other files need "
                "relocatable device code: add -rdc=true to the entry's flags, or "
                "--flag=-rdc=true to resources)")
    return ""
