"""The heat legend names the capacity it divides by: achievable, not the link's
bandwidth the path panel lists."""

from __future__ import annotations

import re

from textual.widgets import Static

from fabricui.tui.app import settle


async def test_busiest_link_is_against_achievable_capacity(app_factory):
    """``h`` on the pod: 'busiest ... 100% of 369 GB/s achievable' (NVLink4 x18 is 450
    GB/s in the panel; the heat divides by bandwidth x efficiency)."""
    app = app_factory()
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        await pilot.press("h")
        await settle(pilot)
        legend = str(app.screen.query_one("#map-legend", Static).render())
        assert re.search(r"busiest \S+->\S+ \d+% of \d+ GB/s achievable", legend), legend
