"""A demanding keyboard user's round: odd text pasted into prompts, long paths in questions."""

from __future__ import annotations

from textual import events
from textual.widgets import Input, Label

from fabricui.tui.app import settle
from fabricui.tui.screens.confirm import ConfirmModal
from fabricui.tui.screens.error import ErrorModal
from fabricui.tui.screens.picker import PickerModal
from fabricui.tui.screens.prompt import PromptModal
from fabricui.tui.textual_private import notifications, screen_text
from tests.tui.test_save_overwrite import save_as_text


async def test_a_size_past_1_pib_is_refused_as_the_cli_refuses_it(app_factory):
    """``e`` then ``99999999999999999999999999G``: the prompt stays open saying the range
    (as ``collective --size`` does); no table of 10^35-byte rows, no plugin marked failed
    for the impossible time it was asked to price."""
    app = app_factory(view="collectives")
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        await pilot.press("e")
        await pilot.pause()
        modal = app.screen
        assert isinstance(modal, PromptModal)
        modal.query_one("#prompt-input", Input).value = "99999999999999999999999999G"
        await pilot.press("enter")
        await pilot.pause()
        assert app.screen is modal
        said = str(modal.query_one("#prompt-error", Label).render())
        assert "from 1 byte to 1 PiB" in said
        await pilot.press("escape")
        await settle(pilot)
        assert app.screen.size_range == "8:16G"
        assert not app.host.failures


async def test_the_overwrite_question_wraps_a_long_path_whole(app_factory, tmp_path):
    """A path longer than the dialog: the question wraps, so ``Overwrite it? y/n`` and the
    whole name are on the screen at 80x24 (they were cut at the dialog's edge)."""
    folder = tmp_path / ("a-rather-long-folder-name-for-reports" * 2)
    folder.mkdir()
    target = folder / "topology.txt"
    target.write_text("mine")
    app = app_factory()
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        await save_as_text(pilot, target)
        assert isinstance(app.screen, ConfirmModal)
        inner = [line.split("││")[1] for line in screen_text(app).splitlines() if "││" in line]
        shown = "".join(part.strip() for part in inner)  # the dialog's rows, unwrapped
        assert "already exists. Overwrite it? y/n" in shown
        assert str(target) in shown
    assert target.read_text() == "mine"


def dialog_text(app) -> str:
    """The rows of the dialog on top (its widest cell between two side borders), joined
    by spaces as they were wrapped at spaces."""
    rows = [line.split("│")[1:-1] for line in screen_text(app).splitlines()]
    return " ".join(max(row, key=len).strip() for row in rows if row)


async def test_a_long_error_wraps_whole_in_its_dialog(app_factory):
    """An error longer than the dialog (N 99999999 names the GPUs, the memory and the way
    out, --max-memory): read to its end; it was cut at the dialog's edge."""
    app = app_factory()
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        app.push_screen(ErrorModal("Cannot load h100-ib-cluster", "x " * 60 + "the end."))
        await pilot.pause()
        assert "the end." in dialog_text(app)


async def test_a_long_save_error_wraps_whole(app_factory, tmp_path):
    """A directory typed as the file, with a long name: the refusal is read to its end."""
    folder = tmp_path / ("a-rather-long-folder-name-for-reports" * 2)
    folder.mkdir()
    app = app_factory()
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        await save_as_text(pilot, folder)
        assert "is a directory, give a file name" in dialog_text(app)


async def test_the_command_palette_is_ascii_with_ascii(app_factory):
    """ctrl+p with ``--ascii`` (a vt100, LANG=C): no magnifier emoji, no ellipsis, no
    eighth-block rules, empty or with commands listed."""
    app = app_factory(ascii_only=True)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        await pilot.press("ctrl+p")
        await settle(pilot)
        text = screen_text(app)
        assert " > |Search for commands... " in text
        assert not {ch for ch in text if ord(ch) >= 128}
        await pilot.press("t", "o", "p")
        await settle(pilot)
        text = screen_text(app)
        assert "topology" in text
        assert not {ch for ch in text if ord(ch) >= 128}


async def test_a_report_and_its_drawing_both_there_are_asked_of_as_two(app_factory, tmp_path):
    """Markdown over a report whose drawing is also there: ``A and B already exist.
    Overwrite them?`` (not "exists")."""
    report, drawing = tmp_path / "r.md", tmp_path / "r-fabric.svg"
    report.write_text("mine")
    drawing.write_text("mine")
    app = app_factory()
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        await pilot.press("S")
        await pilot.pause()
        app.screen.query_one("#save-path", Input).value = str(report)
        await pilot.press("enter")
        await pilot.pause()
        assert isinstance(app.screen, ConfirmModal)
        assert app.screen.question == f"{report} and {drawing} already exist. Overwrite them? y/n"


async def test_page_down_on_a_panel_that_fits_says_so(app_factory):
    """PgDn (the key bar's "Panel") on a path panel with nothing below: said, not a key
    that seems broken; in a shorter window it scrolls, then says it is at its end."""
    app = app_factory(topology="h100-ib-cluster")
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        await pilot.press("pagedown", "pagedown", "pagedown")  # held: said once
        await pilot.pause()
        said = [n.message for n in notifications(app)]
        assert said.count("the path panel shows all it has: nothing to scroll") == 1
        await pilot.resize_terminal(80, 14)
        await settle(pilot)
        side = app.screen.query_one("#path-side")
        assert side.max_scroll_y > 0
        for _ in range(5):
            await pilot.press("pagedown")
            await pilot.pause()
        assert side.scroll_y == side.max_scroll_y
        said = [n.message for n in notifications(app)]
        assert "the path panel is at its end: nothing to scroll" in said


async def test_keys_faster_than_a_dialog_closes_do_not_crash(app_factory):
    """``o``, then down and enter twice before the picker has closed (keys pasted, or typed
    ahead over SSH): one answer; the second enter does not pop the view under the dialog
    (Textual's "Can't pop screen" traceback)."""
    app = app_factory(view="collectives")
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        view = app.screen
        await pilot.press("o")
        await pilot.pause()
        assert isinstance(app.screen, PickerModal)
        for key in ("down", "enter", "down", "enter"):  # queued together, as a terminal sends
            app.post_message(events.Key(key, "\r" if key == "enter" else None))
        await settle(pilot)
        assert app.screen is view
        assert view.op == "all_gather"


async def test_a_layout_that_cannot_be_priced_leaves_the_plan_shown_named(app_factory):
    """A layout whose plan fails (tp64 on 32 GPUs, which ``l`` and ``:layout`` refuse in
    their prompts, shown again from a place recorded earlier): the app says why; the
    controls name the layout of the plan still shown (not ``tp64 ... computing...`` forever
    over a tp8 plan)."""
    app = app_factory(view="strategies")
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        view = app.screen
        before = str(view.query_one("#strat-controls").render())
        assert "layout " in before and "computing" not in before
        view.restore_state({"model": view.model_id, "layout": "tp64"})
        await settle(pilot)
        assert app.screen is view
        assert any("64 GPUs" in n.message for n in notifications(app))
        assert str(view.query_one("#strat-controls").render()) == before
        assert view.choice is not None and view.choice.tp != 64


async def test_a_pasted_page_in_find_shows_why_it_is_refused(app_factory):
    """``/`` then 6,000 characters pasted: enter shows the refusal on screen (its start and
    its reason, the middle cut), where the whole echo pushed it past the screen's foot."""
    app = app_factory()
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        await pilot.press("slash")
        await pilot.pause()
        app.screen.query_one("#prompt-input", Input).value = "n1" * 3000
        await pilot.press("enter")
        await pilot.pause()
        said = dialog_text(app)
        assert "nothing named 'n1n1" in said and "or a rank" in said


async def test_the_message_size_typed_is_the_size_priced_and_plus_says_its_end(app_factory):
    """``m 1P`` prices 1 PiB (as ``path --message-size 1P``), not 16 TiB without a word;
    ``+`` there says it is the largest; ``-`` at 1 byte says it is the smallest."""
    app = app_factory()
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        view = app.screen
        await pilot.press("m")
        await pilot.pause()
        app.screen.query_one("#prompt-input", Input).value = "1P"
        await pilot.press("enter")
        await settle(pilot)
        assert view.size_bytes == 2**50
        assert "for 1024 TiB" in screen_text(app)
        await pilot.press("plus", "plus")
        await pilot.pause()
        said = [n.message for n in notifications(app)]
        assert said.count("1024 TiB is the largest message size") == 1
        view.size_bytes = 1
        await pilot.press("minus")
        await pilot.pause()
        assert "1 B is the smallest message size" in [n.message for n in notifications(app)]
        assert view.size_bytes == 1


async def test_an_nccl_release_past_the_newest_is_said(app_factory):
    """``v`` then ``2.99``: priced with the newest release modelled, and said so, as
    ``collective --nccl 2.99`` warns."""
    app = app_factory(view="collectives")
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        await pilot.press("v")
        await pilot.pause()
        app.screen.query_one("#prompt-input", Input).value = "2.99"
        await pilot.press("enter")
        await settle(pilot)
        said = [n.message for n in notifications(app)]
        assert any(m.startswith("NCCL 2.99 is newer than the newest release") for m in said)
