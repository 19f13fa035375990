"""Tab to the path panel shows that the panel has the focus (the map's arrows then scroll
it), in words above the map and on the panel's border; Tab back restores the legend."""

from __future__ import annotations

from textual.containers import VerticalScroll
from textual.widgets import Static

from fabricui.tui.app import settle
from fabricui.tui.screens.topology import PANEL_FOCUSED
from fabricui.tui.widgets.topology_map import TopologyMap


def legend(app) -> str:
    """The line above the map."""
    return str(app.screen.query_one("#map-legend", Static).render())


async def test_tab_says_the_path_panel_has_the_focus(app_factory):
    """Tab: the legend names the panel and how it scrolls, its border turns heavy; the
    arrows leave the map's cursor alone. Tab again: the map, its legend, its cursor."""
    app = app_factory()
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        keys = legend(app)
        side = app.screen.query_one("#path-side", VerticalScroll)
        assert side.styles.border_left[0] == "vkey"
        cursor = app.screen.query_one(TopologyMap).cursor
        await pilot.press("tab")
        await pilot.pause()
        assert app.focused is side
        assert legend(app).startswith(PANEL_FOCUSED)
        assert side.styles.border_left[0] == "heavy"
        await pilot.press("right")
        await pilot.pause()
        assert app.screen.query_one(TopologyMap).cursor == cursor
        await pilot.press("tab")
        await pilot.pause()
        assert legend(app) == keys
        assert side.styles.border_left[0] == "vkey"


async def test_the_heat_legend_comes_back_after_the_panel(app_factory):
    """With the heat shown, the legend says what its colours mean again once the focus
    leaves the panel."""
    app = app_factory()
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        await pilot.press("h")
        await settle(pilot)
        heat = legend(app)
        assert heat.startswith("heat: ")
        await pilot.press("tab")
        await pilot.pause()
        assert legend(app).startswith(PANEL_FOCUSED)
        await pilot.press("tab")
        await pilot.pause()
        assert legend(app) == heat
