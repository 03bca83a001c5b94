"""A manifest entry's `constants:` (kernel_tuner's cmem_args): module symbols, a
`__constant__` table or a `__device__` array, filled from NumPy .npy files before the
kernel runs. pnpoly's polygon is one: a kernel whose table stays zero runs another code
path (there, every slope a 0/0 division and its slow path)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from occupancy.core.errors import OccupancyError
from occupancy.inputs.safety import inert

if TYPE_CHECKING:
    from occupancy.inputs.manifest.tuning import TuneSpec

NUMERIC_KINDS = "biuf"  # bool, signed and unsigned integers, floats: no objects, no strings


def fill_constants(cupy: Any, module: Any, spec: TuneSpec, cubin: bytes) -> None:
    """Copy each `constants:` file into its symbol of `module` (a cupy.RawModule loaded
    from `cubin`, whose symbol table gives each variable's size: CuPy's get_global does
    not). The files are read without pickles; one larger than its symbol, or naming a
    symbol the kernel's module lacks, is an error naming the entry and the key."""
    if not spec.constants:
        return
    import numpy

    from occupancy.build.binaries import parse_cubin

    sizes = parse_cubin(cubin).objects

    where = f"{spec.manifest}: kernel '{inert(spec.name)}': constants: "
    for name, path in spec.constants.items():
        try:
            arr = numpy.load(path, allow_pickle=False)
        except (OSError, ValueError, EOFError) as exc:
            raise OccupancyError(f"{where}{name}: {inert(path)} is no .npy array "
                                 f"({inert(str(exc))[:120]}): write it with numpy.save") from None
        if not isinstance(arr, numpy.ndarray) or arr.dtype.kind not in NUMERIC_KINDS:
            raise OccupancyError(f"{where}{name}: {inert(path)} holds no numbers: save a "
                                 "numeric array (float32, int32, ...)")
        try:
            ptr = module.get_global(name)
        except cupy.cuda.driver.CUDADriverError:
            ptr = None
        if ptr is None or name not in sizes:
            raise OccupancyError(f"{where}the kernel has no symbol '{name}': name a "
                                 "__constant__ or __device__ variable of its source")
        if arr.nbytes > sizes[name]:
            raise OccupancyError(f"{where}{name}: {inert(path)} holds {arr.nbytes} bytes, the "
                                 f"symbol {sizes[name]}: save at most that much")
        data = numpy.ascontiguousarray(arr)
        ptr.copy_from_host(data.ctypes.data, data.nbytes)
