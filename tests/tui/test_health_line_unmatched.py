"""The 'as it is' line under a view's title, when some conditions were not applied: the
changes follow the counts they detail, and the count of conditions not applied comes
after them (it used to come first, so the changes read as the conditions not applied)."""

from __future__ import annotations

from fabricui.tui.glyphs import glyphs
from fabricui.tui.widgets.health_line import overlay_line
from tests.tui.test_health_line import TAIL, _change, _overlay


def test_the_changes_follow_their_counts_and_what_was_not_applied_ends_the_line():
    """Whole: counts, changes, not applied, the end; cut: the changes give way, the counts
    and what was not applied stay."""
    overlay = _overlay(
        _change("degraded", "n0.nic0 (n0 mlx5_0) -> leaf0", 0.25),
        _change("degraded", "n0.nic1 (n0 mlx5_1) -> leaf1", 0.25),
        unmatched=["x", "y"],
    )
    whole = overlay_line(overlay)
    assert whole == (
        "as it is: 2 degraded (n0.nic0 (n0 mlx5_0) -> leaf0 keeps 25%; n0.nic1 (n0 mlx5_1) "
        "-> leaf1 keeps 25%); 2 condition(s) not applied" + TAIL
    )
    cut = overlay_line(overlay, 78)
    assert len(cut) <= 78
    assert cut.startswith("as it is: 2 degraded (n0.nic0 (n0 mlx5_0) -> ")
    assert cut.endswith(f"{glyphs().ellipsis}); 2 condition(s) not applied")
