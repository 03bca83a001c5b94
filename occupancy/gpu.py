"""The only module that touches CuPy and the GPU; CuPy is imported lazily, on first use."""

from __future__ import annotations

from typing import Any

from .errors import OccupancyError

GPU_HINT = "needs CuPy and an NVIDIA GPU: pip install 'occupancy[gpu]'"

# cudaDeviceAttr values for what CUDA 13 dropped from cudaDeviceProp.
_ATTR = {"clockRate": 13, "memoryClockRate": 36, "memoryBusWidth": 37}


class GpuUnavailable(OccupancyError):
    """No CuPy, no driver or no GPU: the caller prints a one-line hint."""


def cupy_module(what: str) -> Any:
    """Import CuPy and check a GPU answers; else GpuUnavailable naming the fix."""
    try:
        import cupy
    except ImportError:
        raise GpuUnavailable(f"{what} {GPU_HINT}") from None
    try:
        count = cupy.cuda.runtime.getDeviceCount()
    except Exception as exc:  # CUDARuntimeError, or a missing driver library
        raise GpuUnavailable(f"{what} needs an NVIDIA GPU, and none answered: {exc}") from None
    if count == 0:
        raise GpuUnavailable(f"{what} needs an NVIDIA GPU, and none was found")
    return cupy


def device_properties(index: int = 0) -> dict[str, Any]:
    """cudaGetDeviceProperties of one GPU, with the clocks CUDA 13 moved to attributes."""
    cupy = cupy_module("devices detect")
    count = cupy.cuda.runtime.getDeviceCount()
    if not 0 <= index < count:
        raise OccupancyError(f"--index {index}: this machine has GPUs 0..{count - 1}")
    props = dict(cupy.cuda.runtime.getDeviceProperties(index))
    for key, attr in _ATTR.items():
        if not props.get(key):
            try:
                props[key] = cupy.cuda.runtime.deviceGetAttribute(attr, index)
            except Exception:  # an attribute the runtime does not know: leave it out
                props[key] = 0
    return props
