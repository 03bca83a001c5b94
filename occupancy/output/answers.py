"""What a command's output shows besides the core's own result (the device, the block, the
addresses...): small answer types, each with one row in output/emit.py's table."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
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


@dataclass(frozen=True)
class Calc:
    """`calc`: one launch on one device."""

    device: Device
    result: OccupancyResult
    block: tuple[int, ...]
    cliffs: tuple[Cliff, Cliff] | None


@dataclass(frozen=True)
class CheckRun:
    """`check`: every verdict of a manifest."""

    manifest: str
    verdicts: Sequence[Verdict]


@dataclass(frozen=True)
class Listing:
    """`resources`: every kernel of the files, per arch."""

    kernels: Sequence[ListedKernel]


@dataclass(frozen=True)
class Tuned:
    """`tile`: a ranking, and what a `measure --store` file says for this GPU (if asked)."""

    report: TuneReport
    store: str | None = None
    stored: dict[str, Any] | None = None


@dataclass(frozen=True)
class Banks:
    """`banks`: one warp's access."""

    result: BankResult
    addresses: Sequence[int]
    element_bytes: int


@dataclass(frozen=True)
class Plot:
    """`plot`: the three what-if curves around one launch."""

    device: Device
    config: Config
    curves: Sequence[Curve]
    result: OccupancyResult  # the current point


@dataclass(frozen=True)
class DeviceList:
    """`devices`: every profile found."""

    devices: Sequence[Device]


@dataclass(frozen=True)
class Measured:
    """`measure`: the record of the shipped families or of a tuning entry."""

    record: MeasureRecord | TuningRecord
    tuning: bool = False


