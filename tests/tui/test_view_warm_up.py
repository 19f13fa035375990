"""The views built ahead: once the first fabric is drawn and nothing else runs, the explorer
builds the screens of the views not shown yet (``FabricApp.warm_up``, which the CLI sets),
so that the first switch to each is as quick as coming back to it; hidden, they draw
nothing, and the figures each asks for first are computed ahead (the fabric keeps them)."""

from __future__ import annotations

from textual.widgets import DataTable

from fabricui.tui.app import settle
from fabricui.tui.screens.base import ViewScreen
from fabricui.tui.textual_private import record_frames
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


def has_figures(screen) -> bool:
    """Whether a view holds the figures of the fabric shown (not "computing...")."""
    if screen.data is None or screen.data is not screen.app.data:
        return False
    return {
        "pyramid": lambda: bool(screen.tiers),
        "collectives": lambda: screen.prediction is not None,
        "strategies": lambda: screen.table is not None and screen.plan is not None,
        "plugins": lambda: bool(getattr(screen, "_rows", None)),
    }[screen.VIEW]()


async def figures_ahead(pilot) -> None:
    """Wait (at most about 20 s) until the warm-up has computed every view's figures."""
    app = pilot.app
    for _ in range(400):
        if app._figured_ahead >= set(VIEWS) and not any(w.is_running for w in app.workers):
            return
        await pilot.pause(0.05)
    raise AssertionError(f"figures computed ahead: {sorted(app._figured_ahead)}")


async def test_a_view_built_ahead_has_its_figures_in_its_first_frame(app_factory):
    """Once every view is built, the warm-up computes the figures each asks for first (the
    fabric keeps them; hidden, no view draws them); switched to, each view's first frame
    holds them, with no frame that says "computing..." first."""
    app = app_factory()
    app.warm_up = True
    frames: list[tuple[str, bool]] = []

    def frame() -> None:
        screen = app.screen
        if isinstance(screen, ViewScreen) and screen.VIEW != "topology":
            frames.append((screen.VIEW, has_figures(screen)))

    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await built_ahead(pilot)
        await figures_ahead(pilot)
        for view in VIEWS[1:]:
            assert view_screen(app, view).data is None, view
        with record_frames(frame, type(app)):
            for key, view in zip("2345", VIEWS[1:]):
                frames.clear()
                await pilot.press(key)
                await settle(pilot)
                shown = [has for name, has in frames if name == view]
                assert shown and all(shown), (view, shown)
        assert not app.failures


async def test_no_figures_ahead_on_a_fabric_above_the_limit(app_factory, monkeypatch):
    """On a fabric larger than ``FIGURES_AHEAD_MAX_GPUS`` the views are built ahead but
    compute nothing until shown (pricing would hold the router a path asked for meanwhile
    waits on); shown, a view computes its figures as it does without a warm-up."""
    monkeypatch.setattr("fabricui.tui.app.FIGURES_AHEAD_MAX_GPUS", 16)  # the pod has 32
    app = app_factory()
    app.warm_up = True
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await built_ahead(pilot)
        await settle(pilot)
        await pilot.pause(0.3)
        assert not app._figured_ahead
        assert not any(w.is_running for w in app.workers)
        await pilot.press("3")
        await settle(pilot)
        assert has_figures(app.screen)
        assert not app.failures
