"""Measurement records of GPU runs: what `measure` writes, `--store` keeps, and `tile`,
`report` and the pass rules read back (typed dicts, stable field names)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, TypedDict


class Timing(TypedDict):
    """CUDA-event times of one kernel, milliseconds, over `runs` launches (L2 flushed)."""

    median_ms: float
    p10_ms: float
    p90_ms: float
    min_ms: float
    runs: int


class RunEnvironment(TypedDict):
    date: str
    device: str
    compute_capability: str
    driver_version: str
    runtime_version: int
    cupy_version: str
    python: str


class _Rate(TypedDict, total=False):
    tflops: float  # matmul
    gb_s: float  # transpose: bytes read and written per second


class MeasureResult(_Rate):
    """One shipped candidate on the GPU: prediction, driver, verification and time."""

    kernel: str
    variant: str
    label: str
    function: str
    defines: dict[str, int]
    block: list[int]
    grid: list[int]
    n: int
    registers_per_thread: int  # the driver's
    registers_predicted: int  # the compiler report the model used
    static_shared_memory: int
    max_threads_per_block: int
    predicted_active_blocks_per_sm: int
    driver_active_blocks_per_sm: int
    occupancy_match: bool
    occupancy: float
    verified: bool
    verification: dict[str, Any]
    predicted_ms: float | None
    predicted_bound: str | None
    measured: Timing
    error: float | None  # predicted / measured - 1
    percent_of_ceiling: float


class MeasureRecord(RunEnvironment):
    n_matmul: int
    n_transpose: int
    reps: int
    ceilings: dict[str, Any]
    results: list[MeasureResult]


class _TuningFields(TypedDict):
    """One point of a user's tuning space on the GPU."""

    params: dict[str, Any]
    function: str
    predicted_rank: int
    predicted_ms: float | None
    measured: Timing
    error: float | None
    verified: bool | None  # None: no reference to verify against
    relative_error: float | None
    predicted_active_blocks_per_sm: int
    driver_active_blocks_per_sm: int
    occupancy_match: bool
    registers_per_thread: int


class TuningResult(_TuningFields, total=False):
    """One point of a user's tuning space on the GPU, and the roof the model said binds it
    (what `tile` reports and a replay of the record reads back; Triton configs have none)."""

    predicted_bound: str | None
    doubts: list[str] | None  # the costs the model named for it and did not price; None: not read


class TritonResult(TuningResult, total=False):
    """One config of a `triton:` entry on the GPU, launched by Triton: the tuning result's
    fields (params are the config; registers_per_thread the offline compile's), and the
    kernel Triton launched against the offline compile the prediction used."""

    config_index: int  # 1-based, as tile and check number the configs
    grid: list[int]
    launched: dict[str, int]  # shared, n_regs, n_spills of the kernel Triton launched
    offline: dict[str, int]  # the same from the offline compile for this GPU's cc
    resources_match: bool


class SearchSummary(TypedDict):
    budget: int  # --budget
    runs: int  # points timed
    stopped: str  # why the search ended
    picks: list[dict[str, str]]  # in the order timed: {"point": its params, "why": ...}


class _TuningRecordBase(RunEnvironment):
    kernel: str
    problem: dict[str, int]
    reps: int
    results: list[TuningResult]
    pruned: list[dict[str, Any]]
    fastest: dict[str, Any] | None


class TuningRecord(_TuningRecordBase, total=False):
    search: SearchSummary  # `measure --budget N`: how the budgeted search went


class TritonRecord(TuningRecord, total=False):
    """A `triton:` entry measured at one problem point: a tuning record, plus the versions
    code generation and the launch depend on and how the configs were ranked."""

    triton_version: str
    torch_version: str
    model: str  # "gemm" (predicted times) or "occupancy" (ranked by occupancy)
    launch_failures: list[dict[str, Any]]  # configs predicted to fit that Triton refused


def timing(ms: Sequence[float]) -> Timing:
    """Median, 10th and 90th percentiles (nearest rank) and minimum of a run's times."""
    s = sorted(ms)

    def q(p: float) -> float:
        return s[min(len(s) - 1, max(0, round(p * (len(s) - 1))))]

    return {"median_ms": q(0.5), "p10_ms": q(0.1), "p90_ms": q(0.9), "min_ms": s[0], "runs": len(s)}


def measure_failures(rec: MeasureRecord) -> list[str]:
    """measure's pass rule: every candidate verified, its occupancy the driver's."""
    return [r["label"] for r in rec["results"] if not r["verified"] or not r["occupancy_match"]]


def tuning_failures(rec: TuningRecord) -> list[str]:
    """The same for a tuning space (a point with no reference to check against passes);
    for a Triton entry also a launched kernel unlike its offline compile, and a config
    predicted to fit that Triton refused to launch."""

    def label(params: dict[str, Any]) -> str:
        return " ".join(f"{k}={v}" for k, v in params.items())

    bad = [label(r["params"]) for r in rec["results"]
           if r["verified"] is False or not r["occupancy_match"]
           or r.get("resources_match") is False]
    refused: list[dict[str, Any]] = rec.get("launch_failures", [])  # type: ignore[assignment]
    return bad + [label(f["params"]) for f in refused]
