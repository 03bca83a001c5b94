"""What separates tied leaders (issue 18, item 3): shared values, the parameter that moves
the predicted time most, and the text."""

from __future__ import annotations

import pytest

from occupancy.tune.leaders import describe, leaders


def test_what_separates_the_leaders() -> None:
    pts = [({"BM": 128, "BK": 32, "TM": 8}, 0.550), ({"BM": 128, "BK": 16, "TM": 8}, 0.580),
           ({"BM": 128, "BK": 32, "TM": 4}, 0.552), ({"BM": 128, "BK": 16, "TM": 4}, 0.600)]
    lead = leaders(pts)
    assert lead is not None
    assert lead.agreed == (("BM", "128"),)
    assert [s.param for s in lead.separations] == ["BK", "TM"]
    bk, tm = lead.separations
    assert bk.best_ms == (("32", 0.550), ("16", 0.580))
    assert bk.spread == pytest.approx(0.580 / 0.550 - 1)
    assert tm.spread == pytest.approx(0.552 / 0.550 - 1)
    text = describe(lead, 4, 0.15)
    assert text.startswith("The 4 tied points: all have BM=128; BK moves the predicted time most "
                           "(BK=32 0.55 ms, BK=16 0.58 ms: 5.5% apart); TM change it by under 1%.")
    assert "(15%)" in text and "--budget" in text
    assert lead.to_dict()["separations"][0] == {"param": "BK", "spread": bk.spread,
                                                  "best_predicted_ms": {"32": 0.55, "16": 0.58}}


def test_no_tie_and_nothing_shared() -> None:
    assert leaders([({"a": 1}, 1.0)]) is None
    assert leaders([]) is None
    lead = leaders([({"a": 1, "b": 2}, 1.0), ({"a": 2, "b": 3}, 1.1)])
    assert lead is not None and lead.agreed == ()
    assert [s.param for s in lead.separations] == ["a", "b"]  # equal spreads keep their order
    assert "all have" not in describe(lead, 2, 0.15)
    # a parameter that moves it more than 1% is not listed as small
    lead = leaders([({"a": 1, "b": 2}, 1.0), ({"a": 2, "b": 2}, 1.02), ({"a": 2, "b": 3}, 1.05)])
    assert lead is not None and "b change it" not in describe(lead, 3, 0.15)


def test_only_parameters_every_point_has() -> None:
    """Entries of a shipped family have different parameters: only the shared ones count."""
    lead = leaders([({"TILE": 32, "ROWS": 8}, 1.0), ({"TILE": 64, "VEC": 4}, 1.1)])
    assert lead is not None and [s.param for s in lead.separations] == ["TILE"]
    assert lead.agreed == ()
