"""The shipped families: kernels/<family>.yaml beside kernels/<family>.cu, a manifest whose
tuning entries `occupancy tile FAMILY` ranks together, through the same pipeline as a
user's own entry (tune/spaces.py). A new family is those two files; `hand_counts:` in an
entry adds tune/shipped.py's counts as a predictor where they exist.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from occupancy.core.device import Device
from occupancy.core.errors import OccupancyError
from occupancy.inputs.files import data_dir, read_yaml
from occupancy.inputs.manifest.keys import ManifestError, tuning_entry
from occupancy.inputs.manifest.tuning import TuneSpec, load_tuning
from occupancy.inputs.safety import inert
from occupancy.tune.bounds import WorkLimits
from occupancy.tune.handcounts import candidate_of
from occupancy.tune.ranked import TuneReport
from occupancy.tune.shipped import Candidate
from occupancy.tune.spaces import points, rank_entries


def kernels_dir() -> Path:
    return data_dir("kernels")


def families() -> tuple[str, ...]:
    """Every shipped family: a kernels/NAME.yaml with a kernels/NAME.cu beside it."""
    d = kernels_dir()
    return tuple(sorted(p.stem for p in d.glob("*.yaml") if (d / f"{p.stem}.cu").is_file()))


def _entry_names(path: Path) -> list[str]:
    doc = read_yaml(path, ManifestError, "a shipped family's manifest", what="manifest")
    kernels = doc.data.get("kernels") if isinstance(doc.data, dict) else None
    return [str(e["name"]) for e in kernels or [] if tuning_entry(e) and "name" in e]


def family_specs(family: str, n: int | None = None,
                 sets: Mapping[str, int] | None = None) -> list[TuneSpec]:
    """The tuning entries of a family's manifest, for an n x n problem (-n) and --set sizes."""
    if family not in families():
        raise OccupancyError(f"unknown kernel family '{inert(family)}': choose one of "
                             f"{', '.join(families())}")
    path = kernels_dir() / f"{family}.yaml"
    overrides = {**({"N": n} if n is not None else {}), **(sets or {})}
    if n is not None and (isinstance(n, bool) or not isinstance(n, int) or n <= 0):
        raise OccupancyError(f"-n must be a positive integer (the matrix size), got {n}")
    return [load_tuning(path, name, overrides) for name in _entry_names(path)]


def rank_family(family: str, dev: Device, n: int | None = None,
                limits: WorkLimits | None = None) -> TuneReport:
    """Every candidate of a shipped family on a device, ranked: what `tile FAMILY` shows."""
    entries = [(spec, *points(spec, limits=limits)) for spec in family_specs(family, n)]
    return rank_entries(dev, entries, family)


def candidates(family: str) -> list[Candidate]:
    """The family's candidates in manifest order (what `measure FAMILY` launches); needs
    `hand_counts:` entries."""
    out: list[Candidate] = []
    for spec in family_specs(family):
        hand = spec.hand_counts
        if hand is None:
            raise OccupancyError(f"{spec.manifest}: kernel '{inert(spec.name)}': measure runs the "
                                 "shipped candidates of hand_counts entries only")
        out += [candidate_of(hand, pt.function, pt.block, dict(pt.defines))
                for pt in points(spec)[0]]
    return out
