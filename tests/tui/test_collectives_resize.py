"""The collectives table keeps the row under its cursor when a resize lays its columns
out again (crossing the narrow width)."""

from __future__ import annotations

from textual.widgets import DataTable, Static

from fabricui.tui.app import settle
from fabricui.tui.widgets.ring_stepper import RingStepper


async def test_resizing_across_the_narrow_width_keeps_the_cursor_size(app_factory):
    """Cursor on 256 KiB at 80x24, then 200x60 and back: still 256 KiB, with its advice
    and the stepper drawing its algorithm (tree), not 8 B's."""
    app = app_factory(view="collectives")
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        screen = app.screen
        table = screen.query_one(DataTable)
        key = str(256 * 1024)
        table.move_cursor(row=table.get_row_index(key))
        await pilot.pause()
        columns = len(table.columns)
        for size in ((200, 60), (80, 24)):
            await pilot.resize_terminal(*size)
            await settle(pilot)
            assert table.coordinate_to_cell_key(table.cursor_coordinate).row_key.value == key
            assert str(screen.query_one("#coll-advice", Static).render()).startswith("256 KiB:")
            assert screen.query_one(RingStepper).algorithm.startswith("tree")
        assert len(table.columns) == columns
