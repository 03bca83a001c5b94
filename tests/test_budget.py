"""`measure --budget N`: which points the budgeted search times and when it stops, on
synthetic spaces whose truth is known, and on the H200 records of this project's spaces."""

from __future__ import annotations

import glob
import itertools
import json
import math
from pathlib import Path

import pytest

from occupancy.tune import budget
from occupancy.tune.budget import (
    MODEL_BAND,
    NOISE,
    OFFSET,
    Candidate,
    Search,
    Z,
    _Posterior,
    distance,
    simulate,
)

ROOT = Path(__file__).resolve().parent.parent


def _space(n: int, truth_factor: dict[str, float]) -> tuple[list[Candidate], dict[str, float]]:
    """n points predicted 1.00, 1.01, ...: p{i} has layout 'cols' (odd i) or 'rows', block
    32 << (i // 2 % 4) and unroll i // 8 + 1 (no two alike); the truth scales each layout
    by its factor (the model wrong about one layout, right about the other)."""
    cands = [Candidate(f"p{i}", 1.0 + 0.01 * i, {"layout": "cols" if i % 2 else "rows",
                                                  "block": 32 << (i // 2 % 4), "unroll": i // 8 + 1})
             for i in range(n)]
    return cands, {c.key: c.predicted_ms * truth_factor[str(c.params["layout"])] for c in cands}


def test_distance_counts_differing_parameters() -> None:
    assert distance({"b": 64, "s": "x"}, {"b": 64, "s": "x"}) == 0
    assert distance({"b": 64}, {"b": 128}) == 1 and distance({"b": 64}, {"b": 1024}) == 1
    assert math.isclose(distance({"b": 64}, {"b": 96}), math.log2(1.5))
    assert distance({"s": "x", "f": True}, {"s": "y", "f": False}) == 2  # text, flags: 1 each
    assert distance({"b": 0}, {"b": 1}) == 1 and distance({"b": 1}, {"c": 1}) == 2
    assert distance({"b": 10 ** 400}, {"b": 1}) == 1  # no overflow from a hostile value
    assert distance({"b": math.inf}, {"b": 1}) == 1 and distance({"b": math.nan}, {"b": 1}) == 1


def _solve(a: list[list[float]], b: list[float]) -> list[float]:
    """Gaussian elimination, for checking the search's incremental factor."""
    n = len(b)
    m = [row[:] + [b[i]] for i, row in enumerate(a)]
    for c in range(n):
        for r in range(c + 1, n):
            f = m[r][c] / m[c][c]
            m[r] = [x - f * y for x, y in zip(m[r], m[c], strict=True)]
    x = [0.0] * n
    for r in reversed(range(n)):
        x[r] = (m[r][n] - sum(m[r][k] * x[k] for k in range(r + 1, n))) / m[r][r]
    return x


def test_the_posterior_is_the_gaussian_process_one() -> None:
    """The factor grown a row per measurement gives the textbook posterior mean and variance
    (k* K^-1 y, k** - k* K^-1 k*), with the model's band as the prior spread."""
    cands, truth = _space(12, {"rows": 1.3, "cols": 0.9})
    s = Search(cands, 12)
    timed = [0, 3, 4, 9]
    for i in timed:
        s.record(cands[i].key, truth[cands[i].key])
    post = _Posterior(cands)
    k = post.kernel
    gram = [[k(a, b) + (NOISE ** 2 if a == b else 0.0) for b in timed] for a in timed]
    y = [math.log(truth[cands[i].key] / cands[i].predicted_ms) for i in timed]
    alpha = _solve(gram, y)
    for j in (1, 2, 7, 11):
        kj = [k(j, i) for i in timed]
        mean = math.log(cands[j].predicted_ms) + sum(a * b for a, b in zip(kj, alpha, strict=True))
        inv_kj = _solve(gram, kj)
        amplitude = sum(a * b for a, b in zip(y, alpha, strict=True)) / len(y)  # y' K^-1 y / n
        sd = math.sqrt(max(1.0, amplitude)) * math.sqrt(
            k(j, j) - sum(a * b for a, b in zip(kj, inv_kj, strict=True)))
        assert math.isclose(s.expected_ms(cands[j]), math.exp(mean), rel_tol=1e-9)
        assert math.isclose(s.optimistic_ms(cands[j]), math.exp(mean - Z * sd), rel_tol=1e-9)
    assert math.isclose(k(0, 0), OFFSET ** 2 + MODEL_BAND ** 2)


def test_the_leaders_first_then_what_the_timings_leave_room_for() -> None:
    # the model calls 'cols' points 1.5x too slow: the truth's best is p1, predicted #2
    cands, truth = _space(40, {"rows": 1.0, "cols": 1 / 1.5})
    s = simulate(cands, truth, 4)
    assert list(s.measured)[:2] == ["p0", "p1"]  # the first half of the budget: the leaders
    assert s.best() == ("p1", truth["p1"])
    # then the points the timings say can beat p1: 'cols' ones, not the next 'rows' (p2)
    assert all(cands[int(k[1:])].params["layout"] == "cols" for k in list(s.measured)[2:])


def test_neighbours_learn_from_a_timing() -> None:
    """The model reads one neighbourhood (rows, block 64) too slow: p2, a leader, runs at
    0.8x its prediction, and its neighbours at 0.6x; the fastest, p10 (unroll 2), is
    predicted #10, out of a plain top 6. Having timed p2, the search goes to its
    neighbours and finds p10 within 6 runs. A point's measured time moves its neighbours'
    expected times more than far points'."""
    cands, truth = _space(40, {"rows": 1.0, "cols": 1.0})
    for c in cands:
        if c.params["layout"] == "rows" and c.params["block"] == 64:
            truth[c.key] = c.predicted_ms * (0.8 if c.key == "p2" else 0.6)
    fastest = min(truth, key=truth.__getitem__)
    assert fastest == "p10" and "p10" not in [c.key for c in cands[:6]]
    assert simulate(cands, truth, 6).best() == ("p10", truth["p10"])
    one = Search(cands, 8)
    one.record("p0", 0.5)  # p0: rows, block 32; twice as fast as predicted
    moved = {c.key: one.expected_ms(c) / c.predicted_ms for c in cands}
    assert moved["p0"] < moved["p2"] < moved["p3"] < moved["p15"] < 1  # 1, 2 and 3 parameters apart


def test_a_kernel_wide_bias_moves_every_point_and_widens_no_doubt() -> None:
    """The model 2x too fast on every point (a device whose constants were never measured):
    the timed leaders move every point's expected time, far ones too, and leave the doubt
    at the band's."""
    cands, truth = _space(40, {"rows": 2.0, "cols": 2.0})
    s = Search(cands, 8)
    for c in cands[:4]:
        s.record(c.key, truth[c.key])
    far = cands[39]  # cols, block 256, unroll 5: unlike every timed point
    assert 1.9 < s.expected_ms(far) / far.predicted_ms < 2.1 and s._post.scale == 1.0


def _tiled(doubting: bool) -> tuple[list[Candidate], dict[str, float]]:
    """A tiled kernel's 24 points, BK x THREADS x TM x TN: ptxas keeps the k loop rolled at
    BK = 16 and 32 (`doubting`: the model names it for those points), which the model reads
    6% faster than BK = 8 and which run 20% slower than it says; BK = 8 runs as predicted."""
    cands, truth = [], {}
    for i, (bk, threads, tm, tn) in enumerate(itertools.product((8, 16, 32), (128, 256),
                                                                (4, 8), (4, 8))):
        rolled = bk > 8
        pred = 1.0 + 0.02 * (i * 7 % 24) / 24 + (0.0 if rolled else 0.06)
        c = Candidate(f"p{i}", pred, {"BK": bk, "THREADS": threads, "TM": tm, "TN": tn},
                      ("rolled k loop",) if rolled and doubting else ())
        cands.append(c)
        truth[c.key] = pred * (1.2 if rolled else 1.0)
    return cands, truth


def test_a_cost_the_model_does_not_price_is_tested_early() -> None:
    """The leaders all have the k loop rolled, a cost the model names and does not price.
    Timed 20% slow, they say little about the points without it: with the doubts, the
    search times a BK = 8 point within 4 runs and finds the fastest; without them the same
    timings read as the kernel's bias, and it times more rolled points (13% behind)."""
    cands, truth = _tiled(doubting=True)
    best = min(truth.values())
    s = simulate(cands, truth, 4)
    assert all(cands[int(k[1:])].params["BK"] > 8 for k in list(s.measured)[:2])  # leaders
    assert s.best()[1] == best  # type: ignore[index]
    assert s.picks[2][1].endswith("; no point timed has its doubts (none)")  # BK = 8, untested
    plain = simulate(*_tiled(doubting=False), 4)
    assert plain.best()[1] > best * 1.1  # type: ignore[index]
    # points whose doubts are all the same: no doubt term, the search of no doubts
    same = [Candidate(c.key, c.predicted_ms, c.params, ("rolled k loop",)) for c in cands]
    assert simulate(same, truth, 8).picks == simulate(*_tiled(doubting=False)[:1], truth, 8).picks
    assert _Posterior(same).prior == OFFSET ** 2 + MODEL_BAND ** 2
    # nor where only a point with no prediction has other doubts (the model did not read it)
    unread = [*same, Candidate("unread", math.inf, {"BK": 64})]
    assert _Posterior(unread).doubt == 0.0 and _Posterior([*cands, unread[-1]]).doubt > 0
    # once a point without the doubt is timed, the next such picks are no longer untested
    eight = simulate(cands, truth, 8)  # 4 leaders, then 4 BK = 8 points
    assert [w.endswith("has its doubts (none)") for _, w in eight.picks].count(True) == 1
    post = _Posterior(cands)
    assert math.isclose(post.kernel(0, 0), OFFSET ** 2 + 2 * MODEL_BAND ** 2)  # BK 8 with itself
    # BK 8 against BK 16, the other parameters alike: no doubt shared, one parameter more apart
    assert math.isclose(post.kernel(0, 8), OFFSET ** 2 + MODEL_BAND ** 2 * budget.RHO ** 2)
    assert math.isclose(post.kernel(8, 16), OFFSET ** 2 + MODEL_BAND ** 2 * (1 + budget.RHO))


def test_a_point_within_the_noise_is_not_worth_a_run(monkeypatch: pytest.MonkeyPatch) -> None:
    # b is expected ~1% faster than the best measured: within the timing noise, not timed
    monkeypatch.setattr(budget, "Z", 0.0)
    cands = [Candidate("a", 1.0, {"x": 1}), Candidate("b", 1.0, {"x": 1})]
    s = simulate(cands, {"a": 1.01, "b": 1.0}, 2)
    assert list(s.measured) == ["a"] and s.stopped.startswith("no unmeasured point")


def test_it_stops_when_nothing_can_beat_the_best() -> None:
    # one clear winner, every other point predicted far slower: no need to spend the budget
    cands = [Candidate("win", 1.0)] + [Candidate(f"p{i}", 4.0 + i) for i in range(30)]
    s = simulate(cands, {c.key: c.predicted_ms for c in cands}, 20)
    assert len(s.measured) == 10 and s.stopped.startswith("no unmeasured point")  # the leaders
    flat = [Candidate(f"q{i}", 1.0, {"i": i}) for i in range(10)]  # any of them could win
    assert simulate(flat, {c.key: 1.0 for c in flat}, 3).stopped == "budget of 3 runs spent"


def test_past_max_fit_timings_still_count_but_fit_nothing(monkeypatch: pytest.MonkeyPatch) -> None:
    """The process is fitted on the first MAX_FIT timings (each later one would cost a row of
    the factor for every candidate); later points are still timed, and the best still wins."""
    monkeypatch.setattr(budget, "MAX_FIT", 2)
    cands, truth = _space(20, {"rows": 1.0, "cols": 1.0})
    truth["p5"] = 0.5
    s = Search(cands, 20)
    for key in ("p0", "p1", "p2", "p5"):
        s.record(key, truth[key])
    assert len(s._post.fitted) == 2 and s.best() == ("p5", 0.5)
    flat = simulate(cands, {c.key: 1.0 for c in cands}, 6)
    assert len(flat.measured) == 6 and len(flat._post.fitted) == 2


def test_a_failed_point_never_wins_and_the_budget_holds() -> None:
    cands, truth = _space(12, {"rows": 1.0, "cols": 1.0})
    del truth["p0"]  # failed to verify: infinite
    s = simulate(cands, truth, 5)
    assert len(s.measured) <= 5 and math.isinf(s.measured["p0"]) and s.best()[0] != "p0"  # type: ignore[index]
    assert Search(cands, 1).next() == cands[0]
    # a point with no usable prediction (none, 0, negative, NaN) comes after every point
    # that could still win, in the given order; a space of such points runs in order
    odd = [Candidate("a", math.inf), Candidate("z", 0.0), Candidate("n", math.nan),
           Candidate("m", -1.0), Candidate("b", 2.0), Candidate("c", 9.0)]
    assert list(simulate(odd, {c.key: 1.0 for c in odd}, 6).measured) == [
        "b", "c", "a", "z", "n", "m"]  # three leaders by prediction, then the rest in order
    s = simulate(odd, {c.key: 1.0 for c in odd}, 2)
    assert list(s.measured) == ["b", "a"]  # one leader; c (9.0) cannot beat b's 1.0, a might
    assert list(simulate(odd[:4], {}, 3).measured) == ["a", "z", "n"]
    assert simulate([Candidate("tiny", 1e-320)], {"tiny": 1.0}, 1).best() == ("tiny", 1.0)


def test_on_this_projects_h200_records() -> None:
    """Every committed tuning record of 8+ points, replayed: with 8 runs the search ends
    within 3% of the measured best on every one, as often as the model's plain top 8."""
    spaces = 0
    for f in sorted(glob.glob(str(ROOT / "bench/results/h200-*/*.json"))):
        if "h200-corpus" in f:  # public kernels: bench/corpus_check.py reports them
            continue
        if "h200-lsu-conflicts" in f:  # a microbenchmark built to find where the model
            continue  # fails, not a space to tune (its README gives the search's +18%)
        d = json.loads(Path(f).read_text())
        if isinstance(d, dict) and "search" in d:  # a search's own run: the points it chose
            continue
        rows = [r for r in d.get("results", []) if isinstance(d, dict) and "params" in r
                and r.get("predicted_ms") and r["verified"] is not False] if isinstance(d, dict) else []
        if len(rows) < 8:
            continue
        spaces += 1
        cands = [Candidate(json.dumps(r["params"], sort_keys=True), r["predicted_ms"], r["params"])
                 for r in rows]
        truth = {c.key: r["measured"]["median_ms"] for c, r in zip(cands, rows, strict=True)}
        s = simulate(cands, truth, 8)
        assert s.best()[1] <= min(truth.values()) * 1.03, f  # type: ignore[index]
    assert spaces >= 15


def test_each_pick_says_why_and_the_view_shows_it_inert() -> None:
    """The search records why it timed each point: a leader, a point that could beat the
    best so far (with its expected and optimistic times), or one with no prediction; the
    measure view lists them under the summary, point text inert."""
    from rich.console import Console

    from occupancy.output.terminal_tune import measured_view

    cands, truth = _space(40, {"rows": 1.0, "cols": 1 / 1.5})
    s = simulate(cands + [Candidate("none", math.inf)], truth, 4)
    whys = [w for _, w in s.picks]
    assert [k for k, _ in s.picks] == list(s.measured)
    assert whys[:2] == ["a leader", "a leader"] and whys[2].startswith("could beat the best so far")
    assert "expected" in whys[2] and "ms at best" in whys[2]
    lone = simulate([Candidate("b", 2.0), Candidate("a", math.inf), Candidate("c", 9.0)], {"b": 1.0}, 2)
    assert lone.picks[1] == ("a", "no prediction, and no predicted point can win")
    rec = json.loads((ROOT / "bench/results/h200-budget-gp/round2/kt-pnpoly-2000000-b4.json").read_text())
    rec["search"]["picks"] = [{"point": "x=1\x1b[31m\n::error::pwned", "why": "a leader"}]
    out = Console(width=200, color_system=None, record=True)
    out.print(measured_view(rec, True))
    text = out.export_text()
    assert "4 runs of a budget of 4" in text and "1. 'x=1\\x1b[31m\\n::error::pwned': a leader" in text
    assert "\x1b" not in text and "\n::error" not in text

