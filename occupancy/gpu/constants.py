"""A manifest entry's `constants:` (kernel_tuner's cmem_args): module symbols, a
`__constant__` table or a `__device__` array, filled from NumPy .npy files before the
kernel runs. pnpoly's polygon is one: a kernel whose table stays zero runs another code
path (there, every slope a 0/0 division and its slow path)."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

from occupancy.core.errors import OccupancyError
from occupancy.inputs.safety import inert

if TYPE_CHECKING:
    from occupancy.inputs.manifest.tuning import TuneSpec

NUMERIC_KINDS = "biuf"  # bool, signed and unsigned integers, floats: no objects, no strings
CUDA_ERROR_NOT_FOUND = 500  # cuModuleGetGlobal's answer for a name the module lacks


def fill_constants(cupy: Any, module: Any, spec: TuneSpec, cubin: bytes) -> None:
    """Copy each `constants:` file into its symbol of `module` (a cupy.RawModule loaded
    from `cubin`, whose symbol table gives each variable's size: CuPy's get_global does
    not). Every file is checked before any is copied: read without pickles, its header's
    size against the symbol's before the array is read (a header may claim terabytes), its
    bytes in the machine's order. A file that is no numeric array, larger than its
    symbol, or names a symbol the module lacks is an error naming the entry and the key."""
    if not spec.constants:
        return
    from occupancy.build.binaries import parse_cubin

    sizes = parse_cubin(cubin).objects
    where = f"{spec.manifest}: kernel '{inert(spec.name)}': constants: "

    def missing(name: str) -> OccupancyError:
        return OccupancyError(f"{where}the kernel has no symbol '{name}': name a "
                              "__constant__ or __device__ variable of its source")
    ready = []
    for name, path in spec.constants.items():
        if name not in sizes:
            raise missing(name)
        ready.append((name, _load(path, sizes[name], f"{where}{name}: {inert(path)}")))
    name = ""
    try:
        for name, data in ready:
            module.get_global(name).copy_from_host(data.ctypes.data, data.nbytes)
    except cupy.cuda.driver.CUDADriverError as exc:
        if getattr(exc, "status", None) == CUDA_ERROR_NOT_FOUND:
            raise missing(name) from None
        raise OccupancyError(f"{where}{name}: the driver refused the copy: "
                             f"{inert(str(exc))[:160]}") from None


def _load(path: str, limit: int, what: str) -> Any:
    """The array of a .npy file, at most `limit` bytes, contiguous and in native order."""
    import numpy
    from numpy.lib import format as npy

    from occupancy.inputs.safety import note_input

    note_input(path)  # -o may not replace it
    try:
        with open(path, "rb") as fh:
            version = npy.read_magic(fh)
            read = npy.read_array_header_1_0 if version == (1, 0) else npy.read_array_header_2_0
            shape, _, dtype = read(fh)
            if dtype.kind not in NUMERIC_KINDS:
                raise OccupancyError(f"{what} holds no numbers: save a numeric array "
                                     "(float32, int32, ...)")
            nbytes = math.prod(shape) * dtype.itemsize
            if nbytes > limit:
                raise OccupancyError(f"{what} holds {nbytes} bytes, the symbol {limit}: save "
                                     "at most that much")
            fh.seek(0)
            arr = numpy.load(fh, allow_pickle=False)
    except (OSError, ValueError, EOFError, MemoryError):
        # not numpy's words: they can quote the file's first bytes (a link to a secret)
        raise OccupancyError(f"{what} is no .npy array (its header or data cannot be read): "
                             "write it with numpy.save") from None
    if not isinstance(arr, numpy.ndarray) or arr.nbytes != nbytes:
        raise OccupancyError(f"{what} is no .npy array: write it with numpy.save")
    return numpy.ascontiguousarray(arr, dtype=arr.dtype.newbyteorder("="))
