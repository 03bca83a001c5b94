"""occupancy: exact CUDA occupancy, tile-size advice and launch checks from device profiles."""

from occupancy.core.device import Device
from occupancy.core.errors import (
    OccupancyError,
    ProfileError,
    UnknownComputeCapabilityError,
    UnknownDeviceError,
)
from occupancy.core.solver import (
    OccupancyResult,
    available_dynamic_smem,
    best_block_size,
    cliffs,
    solve,
)
from occupancy.core.version import __version__ as __version__
from occupancy.inputs.profiles import all_devices, load_device, load_profile

__all__ = [
    "Device",
    "OccupancyError",
    "OccupancyResult",
    "ProfileError",
    "UnknownComputeCapabilityError",
    "UnknownDeviceError",
    "all_devices",
    "available_dynamic_smem",
    "best_block_size",
    "cliffs",
    "load_device",
    "load_profile",
    "solve",
]
