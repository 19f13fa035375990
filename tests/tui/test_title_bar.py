"""The title bar: app, view and topology on one line; its icon opens the command palette."""

from __future__ import annotations

from textual.command import CommandPalette

from fabricui.tui.app import settle
from fabricui.tui.widgets.title_bar import TitleBar


async def test_title_follows_the_view_and_the_topology(app_factory):
    app = app_factory()
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(pilot)
        bar = app.screen.query_one(TitleBar)
        assert "fabricui — Topology · dgx-h100-pod" in str(bar.render())
        await pilot.press("3")
        await settle(pilot)
        assert "Collectives" in str(app.screen.query_one(TitleBar).render())


async def test_narrow_title_is_cut_with_an_ellipsis(app_factory):
    app = app_factory()
    async with app.run_test(size=(40, 20)) as pilot:
        await settle(pilot)
        line = str(app.screen.query_one(TitleBar).render())
        assert len(line) <= 40 and line.rstrip().endswith("…")


async def test_clicking_the_icon_opens_the_command_palette(app_factory):
    app = app_factory()
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(pilot)
        await pilot.click(TitleBar, offset=(1, 0))
        await pilot.pause()
        assert isinstance(app.screen, CommandPalette)
