"""Pinned predictions: a path, collective or step time that moves beyond its case's tolerance
fails here, so the change that moved it has to re-pin it and say why (cases.yaml)."""

from __future__ import annotations

import pytest

from tests.golden import figures_of, load_cases, moved, run_json

CASES = load_cases()


@pytest.mark.parametrize("case", CASES, ids=[c["id"] for c in CASES])
def test_prediction_is_where_it_was_pinned(case):
    now = figures_of(case["argv"], run_json(case["argv"]))
    pinned = case["figures"]
    assert pinned, f"{case['id']} pins nothing: run python -m tests.golden.update"
    assert set(now) == set(pinned), (case["id"], sorted(set(now) ^ set(pinned)))
    changes = [
        f"{key}: pinned {pinned[key]!r}, now {now[key]!r}"
        for key in pinned
        if moved(pinned[key], now[key], case["tolerance"])
    ]
    assert not changes, (
        f"{case['id']} moved beyond {case['tolerance']:.1%} ({case['why']}): "
        + "; ".join(changes)
        + ". If intended: python -m tests.golden.update, and say why in the commit."
    )


def test_a_moved_figure_is_caught():
    """The comparison itself: a 1% move fails a 0.5% tolerance, a name change always."""
    assert moved(100.0, 101.0, 0.005) and not moved(100.0, 100.4, 0.005)
    assert moved("ring", "tree", 0.5) and not moved(8, 8, 0.0)
