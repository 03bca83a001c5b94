"""bench/budget_compare.py: the kernel_tuner cache it writes from a tuning record, and (where
kernel_tuner is installed; CI does not install it) a simulated kernel_tuner run on it."""

from __future__ import annotations

import importlib.util
import json
import math
import sys
import time
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parent.parent


def _module() -> Any:
    spec = importlib.util.spec_from_file_location("budget_compare", ROOT / "bench" / "budget_compare.py")
    assert spec and spec.loader
    mod = importlib.util.module_from_spec(spec)
    sys.modules["budget_compare"] = mod  # dataclasses look their module up
    spec.loader.exec_module(mod)
    return mod


bc = _module()


def _row(bx: int, by: int, ms: float, pred: float, verified: bool | None = True) -> dict[str, Any]:
    return {"params": {"BX": bx, "BY": by}, "function": "k", "predicted_rank": 0,
            "predicted_ms": pred, "measured": {"median_ms": ms, "p10_ms": ms, "p90_ms": ms,
                                               "min_ms": ms, "runs": 5},
            "error": None, "verified": verified, "relative_error": 0.0,
            "predicted_active_blocks_per_sm": 1, "driver_active_blocks_per_sm": 1,
            "occupancy_match": True, "registers_per_thread": 32}


def _record(tmp_path: Path) -> Path:
    """BX in {8, 16, 32} x BY in {1, 2, 4}: 6 points timed (one failed to verify), one
    pruned, two combinations not in the space at all."""
    rows = [_row(32, 1, 1.00, 1.0), _row(16, 1, 1.10, 1.2), _row(8, 1, 1.50, 1.1),
            _row(32, 2, 0.90, 1.3), _row(16, 2, 1.20, 1.4), _row(8, 2, 0.80, 1.5),
            _row(32, 4, 0.50, 2.0, verified=False)]
    rec = {"date": "2026-12-01", "device": "NVIDIA H200", "compute_capability": "9.0",
           "driver_version": "13.0", "runtime_version": 13020, "cupy_version": "14", "python": "3.12",
           "kernel": "stencil", "problem": {"nx": 1024, "ny": 512}, "reps": 5, "results": rows,
           "pruned": [{"params": {"BX": 16, "BY": 4}, "reasons": ["spills 8 B / 8 B per thread"]}],
           "fastest": None}
    p = tmp_path / "rec.json"
    p.write_text(json.dumps(rec))
    return p


def test_the_cache_holds_every_point_of_the_space(tmp_path: Path) -> None:
    space = bc.load_space(str(_record(tmp_path)))
    assert space is not None and space.names == ["BX", "BY"]
    assert len(space.timed) == 6 and len(space.points) == 8 and space.fastest_ms == 0.80
    c = bc.kt_cache(space)
    assert c["device_name"] == "NVIDIA H200" and c["kernel_name"] == "stencil"
    assert c["problem_size"] == [1024, 512] and c["objective"] == "time"
    assert c["tune_params_keys"] == ["BX", "BY"]
    assert c["tune_params"] == {"BX": [8, 16, 32], "BY": [1, 2, 4]}
    assert set(c["cache"]) == {"32,1", "16,1", "8,1", "32,2", "16,2", "8,2", "32,4", "16,4"}
    assert c["cache"]["8,2"] == {"BX": 8, "BY": 2, "time": 0.80, "times": [0.80]}
    # no time: kernel_tuner's error strings, which read_cache turns into its errors
    assert c["cache"]["32,4"]["__error__"] == "RuntimeFailedConfig"  # failed to verify
    assert c["cache"]["16,4"]["__error__"] == "RuntimeFailedConfig"  # pruned (spills)
    assert all("time" not in c["cache"][k] for k in ("32,4", "16,4"))
    assert bc.needs_restriction(space)  # 8 of the 9 combinations
    keep = bc._restriction(space)
    assert keep({"BX": 16, "BY": 4}) and not keep({"BX": 8, "BY": 4})


def test_the_cache_file_is_closed_json(tmp_path: Path) -> None:
    space = bc.load_space(str(_record(tmp_path)))
    path = bc.write_kt_cache(space, tmp_path / "kt")
    assert path.endswith("kt.json")
    text = Path(path).read_text()
    assert text.strip()[-3:] in ("}\n}", "}}}")  # kernel_tuner reads it as a finished cache
    assert json.loads(text) == bc.kt_cache(space)


def test_a_file_that_is_not_a_tuning_record_is_left_out(tmp_path: Path) -> None:
    p = tmp_path / "m.json"
    p.write_text(json.dumps({"entries": {}}))
    assert bc.load_space(str(p)) is None
    searched = json.loads(_record(tmp_path).read_text())  # a budgeted search's own run
    p.write_text(json.dumps({**searched, "search": {"budget": 4, "runs": 4, "stopped": ""}}))
    assert bc.load_space(str(p)) is None


def test_the_projects_search_and_the_model_top(tmp_path: Path) -> None:
    space = bc.load_space(str(_record(tmp_path)))
    best, runs = bc.model_top(space, 2)  # predicted 1.0 and 1.1: measured 1.00 and 1.50
    assert best == 1.00 and runs == 2
    best, runs = bc.project_search(space, 7)
    assert runs <= 7 and not math.isinf(best)
    assert bc.model_top(space, 7)[0] == 0.80  # the failed point (measured 0.50) never wins


def test_kernel_tuner_replays_the_cache(tmp_path: Path) -> None:
    pytest.importorskip("kernel_tuner")
    pytest.importorskip("sklearn")
    space = bc.load_space(str(_record(tmp_path)))
    cache = bc.write_kt_cache(space, tmp_path / "kt.json")
    allowed_times = {p.ms for p in space.timed}
    for strategy in bc.STRATEGIES:
        best, runs = bc.kt_search(space, cache, strategy, 3, seed=1)
        assert runs <= 3 and (best in allowed_times or math.isinf(best)), strategy
    # a budget of the whole space finds the fastest; the same seed repeats its run
    assert bc.kt_search(space, cache, "random_sample", 8, seed=0) == (0.80, 8)
    assert bc.kt_search(space, cache, "bayes_opt", 4, 5) == bc.kt_search(space, cache, "bayes_opt", 4, 5)


def test_the_replay_gives_the_search_each_points_parameters(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """measure --budget learns from a timing about the timed point's neighbours in
    parameter space; the replay hands the search each point's parameters from the record,
    as measure does, so it runs the same search."""
    from occupancy.tune import budget

    seen: list[Any] = []
    real = budget.simulate
    monkeypatch.setattr(budget, "simulate", lambda c, t, b: seen.append(c) or real(c, t, b))
    space = bc.load_space(str(_record(tmp_path)))
    bc.project_search(space, 4)
    rows = [q for q in space.points if not q.pruned]
    assert [c.params for c in seen[0]] == [q.params for q in rows] and rows[0].params


def test_the_replay_reads_each_points_doubts_and_nothing_else(tmp_path: Path) -> None:
    """A record's `doubts` reach the replayed search as measure gives them: only the model's
    own names, each once, in its order (a record is hostile: other text and long lists are
    dropped); none where the key is missing or null."""
    from occupancy.tune.ranked import ROLLED_LOOP, WALKED_TABLE, read_doubts

    assert read_doubts([WALKED_TABLE, "x" * 10 ** 5, ROLLED_LOOP, ROLLED_LOOP, 3, None]) == \
        (ROLLED_LOOP, WALKED_TABLE)
    assert read_doubts(["junk"] * 10 ** 5) == () and read_doubts(None) == () and read_doubts("r") == ()
    path = _record(tmp_path)
    rec = json.loads(path.read_text())
    rec["results"][0]["doubts"] = [ROLLED_LOOP, {"not": "a name"}]
    rec["results"][1]["doubts"] = None
    path.write_text(json.dumps(rec))
    space = bc.load_space(str(path))
    assert [p.doubts for p in space.points[:3]] == [(ROLLED_LOOP,), (), ()]


def test_the_committed_warptiling_record_replays_within_3_percent() -> None:
    """corpus-check.json's figure for SGEMM_CUDA's warptiling at 2048 (docs/model.md item 47),
    replayed from the committed record: with each point's doubts, --budget 4 and 8 end
    within 3% of the fastest; without them (the search before item 47) they do not."""
    space = bc.load_space(str(ROOT / "bench/results/h200-corpus-repredicted/"
                                     "sgemm-warptiling-2048-2048-2048.json"))
    assert space is not None and sum(bool(p.doubts) for p in space.points) == 553
    for b in (4, 8):
        assert bc.project_search(space, b)[0] <= space.fastest_ms * 1.03
    for p in space.points:
        p.doubts = ()
    assert bc.project_search(space, 8)[0] > space.fastest_ms * 1.05


def test_a_kernel_tuner_run_that_never_returns_counts_as_finding_nothing(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """kernel_tuner 1.5's genetic algorithm never returned on some seeds of a space of 8
    valid points; the comparison gives each run KT_TIMEOUT_S, then counts it as a run that
    found nothing and names it, instead of hanging. (A stand-in that never returns plays the
    stuck strategy: this tests the guard, not kernel_tuner.)"""
    import signal
    import types

    def stuck(*args: Any, **kwargs: Any) -> Any:
        while True:
            time.sleep(0.01)

    monkeypatch.setitem(sys.modules, "kernel_tuner", types.SimpleNamespace(tune_kernel=stuck))
    handler = signal.getsignal(signal.SIGALRM)
    monkeypatch.setattr(bc, "KT_TIMEOUT_S", 1)
    monkeypatch.setattr(bc, "_seed", lambda seed: None)  # seeds kernel_tuner's own modules
    space = bc.load_space(str(_record(tmp_path)))
    with pytest.raises(bc.KtHung):
        bc.kt_search(space, str(tmp_path / "kt.json"), "genetic_algorithm", 4, seed=0)
    row = bc.compare(space, str(tmp_path / "kt.json"), [7], 2, ["genetic_algorithm"], 0.03)
    ga = row["budgets"]["7"]["genetic_algorithm"]
    assert ga["hung"] == 2 and ga["within"] == 0.0 and ga["best_over_fastest_median"] is None
    assert signal.getsignal(signal.SIGALRM) == handler and signal.alarm(0) == 0  # both restored
    assert row["budgets"]["7"]["model_top"]["within"] == 1.0  # the replay of the model still runs
