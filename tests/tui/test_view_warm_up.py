"""The views built ahead: once the first fabric is drawn and nothing else runs, the explorer
builds the screens of the views not shown yet (``FabricApp.warm_up``, which the CLI sets),
so that the first switch to each is as quick as coming back to it; hidden, they compute
nothing."""

from __future__ import annotations

from textual.widgets import DataTable

from fabricui.tui.app import settle
from fabricui.tui.screens.base import ViewScreen
from fabricui.vocabulary import VIEWS

SIZE = (80, 24)


async def built_ahead(pilot) -> None:
    """Wait (at most about 10 s) until every view has its screen."""
    app = pilot.app
    for _ in range(200):
        if all(app.has_screen(view) for view in VIEWS):
            return
        await pilot.pause(0.05)
    raise AssertionError(f"views not built: {[v for v in VIEWS if not app.has_screen(v)]}")


def view_screen(app, view: str) -> ViewScreen:
    screen = app.get_screen_stack(view)[0]
    assert isinstance(screen, ViewScreen)
    return screen


async def test_views_are_built_ahead_hidden_and_compute_once_shown(app_factory):
    """After the first fabric, every view's screen is built and mounted while the topology
    view stays shown; none has drawn the fabric (no worker of theirs ran); shown, the
    collectives view computes its table at once."""
    app = app_factory()
    app.warm_up = True
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        focused = app.focused
        await built_ahead(pilot)
        await settle(pilot)
        assert app.current_mode == "topology" and app.focused is focused is not None
        for view in VIEWS[1:]:
            screen = view_screen(app, view)
            assert screen.is_mounted and screen.data is None, view
        await pilot.press("3")
        await settle(pilot)
        screen = app.screen
        assert screen is view_screen(app, "collectives") and screen.data is app.data
        assert screen.query_one(DataTable).row_count > 0
        assert "Collectives" in app.sub_title
        assert not app.failures


async def test_keys_pressed_during_the_warm_up_are_handled(app_factory):
    """A view switched to while the others are imported or built is shown and computed;
    the warm-up then builds the rest."""
    app = app_factory()
    app.warm_up = True
    async with app.run_test(size=SIZE) as pilot:
        while app.data is None:
            await pilot.pause(0.01)
        await pilot.press("4", "2")
        assert app.current_mode == "pyramid"
        await built_ahead(pilot)
        await settle(pilot)
        assert app.screen.data is app.data
        assert view_screen(app, "collectives").data is None  # never shown
        assert not app.failures


async def test_nothing_is_built_ahead_without_warm_up(app_factory):
    """Snapshots and tests show the view they ask for and build no other."""
    app = app_factory(view="pyramid")
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.pause(0.5)
        assert [view for view in VIEWS if app.has_screen(view)] == ["pyramid"]
