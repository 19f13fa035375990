"""Leaving the strategies view while its layout search runs: the other view shows at once,
and the search's rows are there on coming back."""

from __future__ import annotations

import threading

from fabricui.services.loaded import LoadedFabric
from fabricui.tui.app import settle
from fabricui.tui.screens.topology import TopologyScreen


def searching(app) -> bool:
    """Whether the strategies view's layout search is running."""
    return any(w.is_running and w.group == "strategies-search" for w in app.workers)


async def test_a_view_switch_does_not_wait_for_a_running_search(app_factory, monkeypatch):
    """``f`` then ``1`` while the search runs (held until the view is shown): the topology
    view is on screen with the search still running in its worker; ``4`` then shows the
    search's rows, none lost."""
    started, release = threading.Event(), threading.Event()
    search = LoadedFabric.search

    def held_search(self, *args, **kwargs):
        started.set()
        release.wait(10)
        return search(self, *args, **kwargs)

    monkeypatch.setattr(LoadedFabric, "search", held_search)
    app = app_factory(view="strategies")
    try:
        async with app.run_test(size=(80, 24)) as pilot:
            await settle(pilot)
            view = app.screen
            await pilot.press("f")
            while not started.is_set():
                await pilot.pause(0.01)
            await pilot.press("1")
            await pilot.pause()
            assert isinstance(app.screen, TopologyScreen) and searching(app)
            release.set()
            await settle(pilot)
            await pilot.press("4")
            await settle(pilot)
            assert app.screen is view and len(view.plans) == 10
            assert str(view.query_one("#search-title").render()).startswith("layout search: ")
    finally:
        release.set()
