"""occupancy: exact CUDA occupancy, tile-size advice and launch checks from device profiles."""

from .device import Device
from .errors import OccupancyError, ProfileError, UnknownComputeCapabilityError, UnknownDeviceError
from .profiles import all_devices, load_device, load_profile
from .solver import (
    OccupancyResult,
    available_dynamic_smem,
    best_block_size,
    cliffs,
    solve,
)

__version__ = "0.1.0"

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
