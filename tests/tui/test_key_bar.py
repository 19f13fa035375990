"""The key bar: one line of hints that fits the terminal and presses keys when clicked."""

from __future__ import annotations

from fabricui.tui.app import settle
from fabricui.tui.screens.collectives import CollectivesScreen
from fabricui.tui.screens.help import HelpModal
from fabricui.tui.widgets.key_bar import Hint, KeyBar, fit


def hint(key: str, description: str, keep: bool = False) -> Hint:
    return Hint(((key, key),), description, enabled=True, keep=keep)


def test_hint_width_counts_padding_keys_and_description():
    # " q Quit " is 8 columns; a group " 1 2 views " is 11.
    assert hint("q", "Quit").width == len(" q Quit ")
    group = Hint((("1", "1"), ("2", "2")), "views", enabled=True, keep=False)
    assert group.width == len(" 1 2 views ")


def test_fit_drops_the_last_droppable_hints_and_keeps_the_kept_ones():
    hints = [hint("a", "Alpha"), hint("b", "Beta"), hint("c", "Gamma"), hint("q", "Quit", True)]
    widths = [h.width for h in hints]
    assert fit(hints, sum(widths)) == hints
    narrow = fit(hints, widths[0] + widths[3])
    assert [h.description for h in narrow] == ["Alpha", "Quit"]
    # Too narrow even for the kept hints: they stay (the line is cropped), nothing crashes.
    assert [h.description for h in fit(hints, 3)] == ["Quit"]


async def test_every_view_at_80_columns_still_shows_save_help_and_quit(app_factory):
    app = app_factory()
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        for view in ("1", "2", "3", "4", "5"):
            await pilot.press(view)
            await settle(pilot)
            shown = [h.description for h in app.screen.query_one(KeyBar).hints()]
            assert {"Save", "Help", "Quit"} <= set(shown), (view, shown)
            assert sum(h.width for h in app.screen.query_one(KeyBar).hints()) <= 80


async def test_clicking_a_hint_presses_its_key(app_factory):
    app = app_factory()
    async with app.run_test(size=(200, 40)) as pilot:
        await settle(pilot)
        bar = app.screen.query_one(KeyBar)
        line = str(bar.render())
        # A key inside a group: "3" of "1 2 3 4 5 views" opens the collectives view.
        await pilot.click(KeyBar, offset=(line.index(" 3 ") + 1, 0))
        await settle(pilot)
        assert isinstance(app.screen, CollectivesScreen)
        bar = app.screen.query_one(KeyBar)
        line = str(bar.render())
        await pilot.click(KeyBar, offset=(line.index("Help"), 0))
        await pilot.pause()
        assert isinstance(app.screen, HelpModal)
