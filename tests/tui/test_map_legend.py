"""The line above the map reads as keys, with the bottleneck mark given as a mark."""

from __future__ import annotations

from fabricui.tui.screens.topology import LEGEND
from fabricui.tui.widgets.topology_map import BOTTLENECK_BRACKETS


def test_the_bottleneck_mark_is_not_offered_as_a_key():
    """``<7>=bottleneck`` (the map's mark, with the brackets the map draws), never
    ``<> bottleneck``, which reads as two keys that do nothing."""
    left, right = BOTTLENECK_BRACKETS
    assert f"{left}7{right}=bottleneck" in LEGEND
    assert not any(item.startswith("<>") for item in LEGEND)
