"""What a command's output shows besides the core's own result (the device, the block, the
addresses...): small answer types, each with one row in output/emit.py's table.

Plain classes with __slots__: an answer is built once and handed to emit, and a dataclass
costs about a millisecond to create at import (calc's start-up imports this module).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from occupancy.build.resolve import ListedKernel
    from occupancy.core.banks import BankResult
    from occupancy.core.device import Device
    from occupancy.core.solver import Cliff, OccupancyResult
    from occupancy.core.whatif import Config, Curve
    from occupancy.gate.check import Verdict
    from occupancy.tune.records import MeasureRecord, TuningRecord
    from occupancy.tune.spaces import TuneReport


class Answer:
    """The base of every answer type."""

    __slots__ = ()


class Calc(Answer):
    """`calc`: one launch on one device."""

    __slots__ = ("device", "result", "block", "cliffs")

    def __init__(self, device: Device, result: OccupancyResult, block: tuple[int, ...],
                 cliffs: tuple[Cliff, Cliff] | None) -> None:
        self.device, self.result, self.block, self.cliffs = device, result, block, cliffs


class CheckRun(Answer):
    """`check`: every verdict of a manifest."""

    __slots__ = ("manifest", "verdicts")

    def __init__(self, manifest: str, verdicts: Sequence[Verdict]) -> None:
        self.manifest, self.verdicts = manifest, verdicts


class Listing(Answer):
    """`resources`: every kernel of the files, per arch (`runtime`: how many kernels of CUDA's
    device runtime were left out)."""

    __slots__ = ("kernels", "runtime")

    def __init__(self, kernels: Sequence[ListedKernel], runtime: int = 0) -> None:
        self.kernels, self.runtime = kernels, runtime


class Tuned(Answer):
    """`tile`: a ranking, and what a `measure --store` file says for this GPU (if asked)."""

    __slots__ = ("report", "store", "stored")

    def __init__(self, report: TuneReport, store: str | None = None,
                 stored: dict[str, Any] | None = None) -> None:
        self.report, self.store, self.stored = report, store, stored


class Banks(Answer):
    """`banks`: one warp's access."""

    __slots__ = ("result", "addresses", "element_bytes")

    def __init__(self, result: BankResult, addresses: Sequence[int], element_bytes: int) -> None:
        self.result, self.addresses, self.element_bytes = result, addresses, element_bytes


class Plot(Answer):
    """`plot`: the three what-if curves around one launch."""

    __slots__ = ("device", "config", "curves", "result")

    def __init__(self, device: Device, config: Config, curves: Sequence[Curve],
                 result: OccupancyResult) -> None:  # result: the current point
        self.device, self.config, self.curves, self.result = device, config, curves, result


class DeviceList(Answer):
    """`devices`: every profile found."""

    __slots__ = ("devices",)

    def __init__(self, devices: Sequence[Device]) -> None:
        self.devices = devices


class Measured(Answer):
    """`measure`: the record of the shipped families or of a tuning entry."""

    __slots__ = ("record", "tuning")

    def __init__(self, record: MeasureRecord | TuningRecord, tuning: bool = False) -> None:
        self.record, self.tuning = record, tuning
