"""The line under the collectives table gives every setting that forces the cursor size's
best pick, whatever the width: it wraps onto a second line, never drops a setting."""

from __future__ import annotations

import pytest
from textual.widgets import DataTable, Static

from fabricui.tui.app import settle
from fabricui.tui.screens.collectives import advice_lines


def test_advice_wraps_at_spaces_and_says_where_it_cut():
    """Two lines at most, broken between settings; a third line's text is cut with an
    ellipsis at the end of the second."""
    text = "256 KiB: best tree/ll in 67 us: NCCL_ALGO=allreduce:Tree NCCL_PROTO=allreduce:LL"
    assert advice_lines(text, 78) == [
        "256 KiB: best tree/ll in 67 us: NCCL_ALGO=allreduce:Tree",
        "NCCL_PROTO=allreduce:LL",
    ]
    assert advice_lines(text, 100) == [text]
    cut = advice_lines(text + " (caution: " + "x " * 60 + ")", 78)
    assert len(cut) == 2 and len(cut[1]) == 78 and cut[1].endswith("…")


@pytest.mark.parametrize("width", [80, 200])
async def test_every_setting_of_every_size_is_on_screen(app_factory, width):
    """dgx-h100-pod all_reduce: on every row the advice shows each of the size's NCCL_*
    settings in full (at 80 columns 256 KiB needs both NCCL_ALGO and NCCL_PROTO), the
    table does not move as the cursor does, and ``y`` offers the settings."""
    app = app_factory(view="collectives")
    async with app.run_test(size=(width, 24 if width == 80 else 60)) as pilot:
        await settle(pilot)
        screen = app.screen
        pred = screen.prediction
        advice = screen.query_one("#coll-advice", Static)
        table = screen.query_one(DataTable)
        heights = {advice.size.height}
        seen = 0
        # Every size that has settings to show (the others show none), visited in table order.
        for row in range(table.row_count):
            table.move_cursor(row=row)
            index = screen._cursor_index()
            if not pred.choice.env[index]:
                continue
            await pilot.pause()
            shown = str(advice.render()).replace("\n", " ")
            for key, value in pred.choice.env[index].items():
                assert f"{key}={value}" in shown
                seen += 1
            heights.add(advice.size.height)
        assert seen and len(heights) == 1
        table.move_cursor(row=table.get_row_index(str(256 * 1024)))
        await pilot.pause()
        shown = str(advice.render())
        assert "NCCL_ALGO=allreduce:Tree" in shown and "NCCL_PROTO=allreduce:LL" in shown
        items = dict(screen.copy_items())
        assert items["settings for 256 KiB's best pick"] == (
            "NCCL_ALGO=allreduce:Tree NCCL_PROTO=allreduce:LL"
        )
