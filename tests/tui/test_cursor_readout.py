"""On an overview map (one glyph per GPU) a line names the GPU under the cursor."""

from __future__ import annotations

from textual.widgets import Static

from fabricui.tui.app import settle


def readout(app) -> Static:
    """The cursor line above the map."""
    return app.screen.query_one("#map-cursor", Static)


async def test_the_overview_names_the_gpu_under_the_cursor(app_factory):
    """1,024 GPUs: down down right right puts the cursor on n4.g2, and the line says so
    with its host and rank; zoomed on the node (boxes number their GPUs) it is hidden."""
    app = app_factory(topology="h100-ib-cluster", nodes=128)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        assert readout(app).display
        assert str(readout(app).render()).startswith("cursor n0.g0 · host n0 · rank 0")
        await pilot.press("down", "down", "right", "right")
        await pilot.pause()
        assert str(readout(app).render()).startswith("cursor n4.g2 · host n4 · rank 34")
        await pilot.press("z")
        await pilot.pause()
        assert not readout(app).display
        await pilot.press("z")
        await pilot.pause()
        assert readout(app).display


async def test_node_boxes_have_no_cursor_line(app_factory):
    """The 4-node pod draws boxes: no cursor line, the map keeps the row."""
    app = app_factory()
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        assert not readout(app).display
