"""gpu/measure.Timer: more runs where the median is not yet known, and never without end.
A stand-in for CuPy plays back scripted event times (the timing rule is what is tested;
tests/test_gpu.py times real kernels on a GPU)."""

from __future__ import annotations

import itertools
from collections.abc import Iterable
from types import SimpleNamespace
from typing import Any

from occupancy.gpu import measure
from occupancy.gpu.measure import MORE_RUNS, Timer, median_known


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
    cp, calls = fake_cupy(itertools.cycle([1.000, 1.004, 0.998, 1.002]))
    launches: list[int] = []
    ms = Timer(cp, 1 << 20).time(lambda: launches.append(1), reps=10, warmup=3)
    assert len(ms) == 10
    assert len(launches) == 13 and calls.count("flush") == 10  # warm-ups are not flushed


def test_a_noisy_median_gets_more_runs_until_it_is_known() -> None:
    # 10 runs, 4 of them slow: the middle of the first ten is not settled; the next runs are
    # steady, so the runs about the middle come to agree and the timing stops
    first = [0.020, 0.031, 0.020, 0.029, 0.020, 0.036, 0.020, 0.027, 0.020, 0.020]
    cp, _ = fake_cupy(itertools.chain(first, itertools.repeat(0.020)))
    ms = Timer(cp, 1 << 20).time(lambda: None, reps=10)
    assert not median_known(first)
    assert 10 < len(ms) < 10 * MORE_RUNS and len(ms) % 10 == 0
    assert median_known(ms)
    assert sorted(ms)[len(ms) // 2] == 0.020


def test_more_runs_stop_at_the_cap_for_a_kernel_that_never_settles() -> None:
    cp, _ = fake_cupy(itertools.islice(itertools.cycle([0.010 + 0.001 * i for i in range(20)]), 999))
    ms = Timer(cp, 1 << 20).time(lambda: None, reps=7)
    assert len(ms) == 7 * MORE_RUNS


def test_more_runs_stop_at_the_time_cap_for_a_long_kernel(monkeypatch: Any) -> None:
    monkeypatch.setattr(measure, "MORE_RUNS_MS", 50.0)
    cp, _ = fake_cupy(itertools.islice(itertools.cycle([10.0, 20.0, 30.0]), 999))
    ms = Timer(cp, 1 << 20).time(lambda: None, reps=3)
    assert 50.0 <= sum(ms) < 50.0 + 3 * 30.0 and len(ms) < 3 * MORE_RUNS


def test_median_known_reads_the_ranks_about_the_middle() -> None:
    assert median_known([1.0] * 5)
    assert median_known([1.0] * 8 + [0.9, 5.0])  # far runs at either end: not the middle
    # runs sqrt(n) = 3 ranks either side of the middle of 10 spread 10%
    assert not median_known([1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.1, 1.1, 1.1])
    assert not median_known([0.0, 0.0, 0.0])  # a zero median is never "known"
