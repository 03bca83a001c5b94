"""gpu/measure.Timer: more runs where the median is not yet known, and never without end.
A stand-in for CuPy plays back scripted event times (the timing rule is what is tested;
tests/test_gpu.py times real kernels on a GPU)."""

from __future__ import annotations

import itertools
import json
from collections.abc import Iterable
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from rich.console import Console

from occupancy.gpu import measure
from occupancy.gpu.measure import Timer, median_known
from occupancy.output.terminal_tune import measured_view


def fake_cupy(times: Iterable[float]) -> tuple[Any, list[str]]:
    """A CuPy whose event pairs measure `times` in turn (a timer that never stopped would run
    out of them and fail, not hang); `calls` logs the L2 flushes."""
    it = iter(times)
    calls: list[str] = []

    class Event:
        def record(self) -> None:
            pass

        def synchronize(self) -> None:
            pass

    cuda = SimpleNamespace(
        Device=lambda: SimpleNamespace(synchronize=lambda: None),
        Event=Event,
        get_elapsed_time=lambda start, stop: next(it))
    cp = SimpleNamespace(cuda=cuda, float32="float32",
                         ones=lambda n, dtype: [1.0], empty=lambda shape, dtype: [0.0],
                         sum=lambda buf, out: calls.append("flush"))
    return cp, calls


def test_a_steady_kernel_gets_the_runs_asked_for() -> None:
    cp, calls = fake_cupy(itertools.islice(itertools.cycle([1.000, 1.004, 0.998, 1.002]), 999))
    launches: list[int] = []
    ms = Timer(cp, 1 << 20).time(lambda: launches.append(1), reps=10, warmup=3)
    assert len(ms) == 10
    assert len(launches) == 13 and calls.count("flush") == 10  # warm-ups are not flushed


def test_a_noisy_median_gets_more_runs_until_it_is_known() -> None:
    # 6 of the first 10 runs slow: their median is a slow run. The next runs are steady and
    # fast, so the runs about the middle come to agree on the fast time and the timing stops.
    first = [0.020, 0.031, 0.029, 0.020, 0.036, 0.027, 0.020, 0.033, 0.020, 0.030]
    cp, _ = fake_cupy(itertools.chain(first, itertools.repeat(0.020, 999)))
    ms = Timer(cp, 1 << 20).time(lambda: None, reps=10)
    assert sorted(first)[5] > 0.025  # what 10 runs alone would report
    assert 10 < len(ms) < 100 and len(ms) % 10 == 0
    # it stopped at the first batch that settled it
    assert median_known(ms) and not median_known(ms[:-10])
    assert sorted(ms)[len(ms) // 2] == 0.020


def test_more_runs_stop_at_ten_times_reps_for_a_kernel_that_never_settles() -> None:
    cp, _ = fake_cupy(itertools.islice(itertools.cycle([0.010 + 0.001 * i for i in range(20)]), 999))
    assert len(Timer(cp, 1 << 20).time(lambda: None, reps=7)) == 70


def test_more_runs_stop_at_the_time_cap_for_a_long_kernel(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(measure, "MORE_RUNS_MS", 100.0)
    cp, _ = fake_cupy(itertools.islice(itertools.cycle([10.0, 20.0, 30.0]), 999))
    ms = Timer(cp, 1 << 20).time(lambda: None, reps=3)
    assert len(ms) == 6  # 60 ms after the first batch: one more; 120 ms: stop


def test_median_known_reads_the_ranks_about_the_middle() -> None:
    assert median_known([1.0] * 5)
    # n = 10: the runs 3 ranks either side of the middle are the 2nd and the 9th
    assert median_known([1.0] * 9 + [5.0]) and median_known([0.2] + [1.0] * 9)
    assert median_known([0.2] + [1.0] * 8 + [5.0])  # one far run at each end
    assert not median_known([1.0] * 8 + [5.0, 5.0])
    assert not median_known([0.2, 0.2] + [1.0] * 8)
    # within 2% of the median, and just past it
    assert median_known([1.0] * 8 + [1.019, 1.019])
    assert not median_known([1.0] * 8 + [1.021, 1.021])
    assert median_known([0.981, 0.981] + [1.0] * 8)
    assert not median_known([0.979, 0.979] + [1.0] * 8)
    assert not median_known([0.0, 0.0, 0.0])  # a zero median is never "known"
    assert not median_known([])


def test_the_measure_view_says_which_points_took_more_runs() -> None:
    """A run that timed points past --reps says how many and up to how many runs (the H200
    record of the reduction at 2^24: 10 asked, up to 40 taken); one that did not, nothing."""
    rec = json.loads((Path(__file__).resolve().parent.parent / "bench/results/h200-budget-gp"
                      / "round4-timer/kt-reduction-16777216-b4.json").read_text())
    assert rec["reps"] == 10 and [r["measured"]["runs"] for r in rec["results"]] == [20, 10, 40, 30]

    def shown(record: dict[str, Any]) -> str:
        out = Console(width=400, color_system=None, record=True)  # one line, unwrapped
        out.print(measured_view(record, True))
        return out.export_text()

    assert "3 of 4 points were timed more than --reps 10 times (up to 40)" in shown(rec)
    assert "cap" not in shown(rec)
    rec["reps"] = 4  # 40 runs is 10x: the cap
    assert "4 of 4 points were timed more than --reps 4 times (up to 40)" in shown(rec)
    assert "1 of them reached the cap of 40 first, so its median is less sure" in shown(rec)
    rec["reps"] = 40
    assert "timed more than" not in shown(rec)
