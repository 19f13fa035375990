"""The key bar: one line of hints that fits the terminal and presses keys when clicked; a
dialog's names the dialog's keys."""

from __future__ import annotations

from textual.widgets import Input

from fabricui.tui.app import screen_text, settle
from fabricui.tui.screens.collectives import CollectivesScreen
from fabricui.tui.screens.confirm import ConfirmModal
from fabricui.tui.screens.help import HelpModal
from fabricui.tui.screens.picker import PickerModal
from fabricui.tui.screens.prompt import PromptModal
from fabricui.tui.screens.save import SaveModal
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


def bottom_line(app) -> str:
    """The last line of the screen: the key bar the user sees."""
    return screen_text(app).rstrip("\n").splitlines()[-1]


#: Hints only the views' key bar shows (none of them works in a dialog).
VIEW_ONLY = ("Quit", "Help", "Source", "Panel", "^p palette")


async def test_a_dialog_shows_its_own_keys_not_the_views(app_factory, tmp_path):
    """The save dialog, the picker, the help, the prompt, the yes/no question and Textual's
    command palette each have the bottom line name their keys (enter, tab, escape ...);
    none of the view's keys, which do nothing while they are open. Enter's hint follows the
    focus (a button's name on a button), and the view's bar is back once they close."""
    target = tmp_path / "view.txt"
    target.write_text("mine")
    app = app_factory()
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        assert "Quit" in bottom_line(app)
        opened = (
            ("S", SaveModal, ["⏎ Save", "tab Next", "esc Cancel"]),
            ("t", PickerModal, ["⏎ Pick", "tab Next", "esc Cancel", "/ Filter"]),
            ("question_mark", HelpModal, ["PgDn Scroll", "esc Close"]),
            ("N", PromptModal, ["⏎ OK", "esc Cancel"]),
        )
        for key, modal, keys in opened:
            await pilot.press(key)
            await pilot.pause()
            assert isinstance(app.screen, modal)
            line = bottom_line(app)
            assert all(k in line for k in keys), (modal, line)
            assert not any(k in line for k in VIEW_ONLY), (modal, line)
            await pilot.press("escape")
            await pilot.pause()
            assert not isinstance(app.screen, modal)
            assert "Quit" in bottom_line(app)

        # Tab from the file name reaches the buttons: enter presses the focused one.
        await pilot.press("S")
        await pilot.pause()
        await pilot.press("tab")
        await pilot.pause()
        assert "⏎ Save " in bottom_line(app)
        await pilot.press("tab")
        await pilot.pause()
        assert "⏎ Cancel " in bottom_line(app)
        await pilot.press("enter")
        await pilot.pause()
        assert not isinstance(app.screen, SaveModal) and "Quit" in bottom_line(app)

        # The yes/no question over the save dialog: y and n only.
        app.push_screen(SaveModal("topology", tmp_path))
        await pilot.pause()
        app.screen.query_one("#save-path", Input).value = target.name
        await pilot.press("enter")
        await pilot.pause()
        assert isinstance(app.screen, ConfirmModal)
        line = bottom_line(app)
        assert "y Yes" in line and "n No" in line
        assert not any(k in line for k in (*VIEW_ONLY, "Save", "Cancel")), line
        await pilot.press("n")
        await pilot.pause()
        assert isinstance(app.screen, SaveModal) and "esc Cancel" in bottom_line(app)
        await pilot.press("escape")
        await pilot.pause()

        # Textual's palette has no key bar: the view's shows the palette's keys meanwhile.
        await pilot.press("ctrl+p")
        await pilot.pause()
        line = bottom_line(app)
        assert "esc" in line and not any(k in line for k in VIEW_ONLY), line
        await pilot.press("escape")
        await pilot.pause()
        assert "Quit" in bottom_line(app)


async def test_a_dialogs_keys_stay_ascii_with_ascii(app_factory):
    """``--ascii``: enter is spelt out on a dialog's key bar (Textual draws a return arrow)."""
    app = app_factory(ascii_only=True)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        await pilot.press("S")
        await pilot.pause()
        line = bottom_line(app)
        assert "enter Save" in line and line.isascii(), line
