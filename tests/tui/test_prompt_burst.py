"""Keys typed in one burst (a paste, typing over a slow SSH link, ``tmux send-keys C-u
text Enter``) reach a prompt in the order typed: a bound key (``ctrl+u``, ``ctrl+w``,
backspace, enter) runs in turn with the letters around it, not after them."""

from __future__ import annotations

import pytest
from textual.widgets import Input, TextArea

from fabricui.tui.app import settle
from fabricui.tui.screens.prompt import PromptModal
from fabricui.tui.textual_private import press_burst


async def open_prompt(pilot, key: str) -> Input:
    """``key`` pressed in the view: the prompt's field."""
    await pilot.press(key)
    await pilot.pause()
    assert isinstance(pilot.app.screen, PromptModal)
    return pilot.app.screen.query_one("#prompt-input", Input)


async def test_ctrl_u_then_settings_then_enter_in_one_burst_takes_the_settings(app_factory):
    """``v``, then ``ctrl+u NCCL_ALGO=ring enter`` read at once: the view runs with
    NCCL_ALGO=ring (the burst cleared the text typed after ctrl+u, and enter then took an
    empty field: the newest release, silently)."""
    app = app_factory(view="collectives")
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        view = app.screen
        view.nccl = "2.21"
        await open_prompt(pilot, "v")
        await press_burst(pilot, "\x15NCCL_ALGO=ring\r")
        await settle(pilot)
        assert app.screen is view
        assert view.nccl == "NCCL_ALGO=ring"


async def test_a_burst_over_the_prefilled_sizes_replaces_them(app_factory):
    """``e`` (the sizes, prefilled and selected), then ``ctrl+u 1K:1M enter`` at once."""
    app = app_factory(view="collectives")
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        view = app.screen
        await open_prompt(pilot, "e")
        await press_burst(pilot, "\x151K:1M\r")
        await settle(pilot)
        assert app.screen is view
        assert view.size_range == "1K:1M"


@pytest.mark.parametrize(
    ("burst", "typed"),
    [
        ("\x15abc", "abc"),  # ctrl+u, then text
        ("xy\x15abc", "abc"),  # text, ctrl+u (deletes it), text
        ("xy\x17abc", "abc"),  # ctrl+w: the word left of the cursor
        ("xyz\x7fab", "xyab"),  # backspace: one letter
        ("ab\x01c", "cab"),  # ctrl+a: to the start
        ("ab\x01\x05c", "abc"),  # ctrl+a, ctrl+e: back to the end
        ("abc\x01\x0bxy", "xy"),  # ctrl+k: all right of the cursor
        ("ab\x1b[Dc", "acb"),  # left arrow
    ],
)
async def test_bound_keys_run_in_turn_with_the_letters_of_a_burst(app_factory, burst, typed):
    """Each editing key of the field, read in one burst with text: the field holds what
    the keys typed one at a time give."""
    app = app_factory(view="collectives")
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        field = await open_prompt(pilot, ":")
        await press_burst(pilot, burst)
        assert field.value == typed


async def test_the_save_dialogs_path_takes_a_burst_in_order(app_factory):
    """The save dialog's path field (``S``), like the prompts: ``ctrl+u`` then a path read at
    once leaves the path typed, not an empty field."""
    from fabricui.tui.screens.save import SaveModal

    app = app_factory()
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        await pilot.press("S")
        await pilot.pause()
        assert isinstance(app.screen, SaveModal)
        field = app.screen.query_one("#save-path", Input)
        await press_burst(pilot, "\x15report.md")
        await settle(pilot)
        assert field.value == "report.md"


async def open_paste_area(pilot) -> TextArea:
    """``m`` pressed in the collectives view, then tab: the measured-run dialog's paste
    area, focused."""
    from fabricui.tui.screens.measured import MeasuredModal

    await pilot.press("m")
    await pilot.pause()
    assert isinstance(pilot.app.screen, MeasuredModal)
    await pilot.press("tab")
    await pilot.pause()
    area = pilot.app.screen.query_one("#measured-paste", TextArea)
    assert pilot.app.focused is area
    return area


@pytest.mark.parametrize(
    ("burst", "typed"),
    [
        ("xy\x15abc", "abc"),  # ctrl+u: the line left of the cursor
        ("xy\x17abc", "abc"),  # ctrl+w: the word left of the cursor
        ("xyz\x7fab", "xyab"),  # backspace: one letter
        ("ab\x01c", "cab"),  # ctrl+a: to the line's start
        ("abc\x01\x0bxy", "xy"),  # ctrl+k: the line right of the cursor
        ("ab\x1b[Dc", "acb"),  # left arrow
        ("one\rtwo\x15three", "one\nthree"),  # enter, then ctrl+u on the new line
    ],
)
async def test_the_measured_paste_area_takes_a_burst_in_order(app_factory, burst, typed):
    """The measured-run dialog's paste area (``m``, tab), like the prompts: each editing key
    read in one burst with text runs in turn with the letters around it."""
    app = app_factory(view="collectives")
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        area = await open_paste_area(pilot)
        await press_burst(pilot, burst)
        assert area.text == typed


async def test_text_then_ctrl_s_in_one_burst_loads_the_text(app_factory):
    """The paste area, then ``text ctrl+s`` read at once: ctrl+s loads the text typed before
    it (it ran first, and refused an empty paste)."""
    app = app_factory(view="collectives")
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        await open_paste_area(pilot)
        submitted: list[str] = []
        app.screen.submit = lambda text, again: submitted.append(text)
        await press_burst(pilot, "not an output\x13")
        assert submitted == ["not an output"]


# A key that moves the focus (tab, shift+tab) read in one burst with text: the keys after it
# go to the part of the dialog it moved to, as when typed one at a time.


async def open_measured(pilot):
    """``m`` pressed in the collectives view: the measured-run dialog, its path focused."""
    from fabricui.tui.screens.measured import MeasuredModal

    await pilot.press("m")
    await pilot.pause()
    assert isinstance(pilot.app.screen, MeasuredModal)
    assert pilot.app.focused is pilot.app.screen.query_one("#measured-path", Input)
    return pilot.app.screen


@pytest.mark.parametrize(
    ("burst", "path", "pasted", "focused"),
    [
        ("abc\tdef", "abc", "def", "#measured-paste"),  # tab: to the paste area
        # shift+tab: back to the path, its text selected (as the field does on focus):
        # the text typed then replaces it, as when typed one key at a time
        ("abc\tdef\x1b[Zgh", "gh", "def", "#measured-path"),
        ("ab\tcd\x1b[Z\x15xy\tz", "xy", "cdz", "#measured-paste"),  # ctrl+u in the path
        ("abc\tone\rtwo", "abc", "one\ntwo", "#measured-paste"),  # enter: a new line
        ("\tab\x1b[Zcd\tef\x1b[Zgh", "gh", "abef", "#measured-path"),
    ],
)
async def test_tab_in_a_burst_takes_the_keys_after_it_to_the_next_field(
    app_factory, burst, path, pasted, focused
):
    """The measured-run dialog (a path line, a paste area), then text with tab or shift+tab
    read at once: each field holds the text typed while it had the focus. (Every key of
    the burst went to the path line, the field focused when they were read: the text after
    tab was typed in the path, and enter submitted the path.)"""
    app = app_factory(view="collectives")
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        dialog = await open_measured(pilot)
        submitted: list[str] = []
        dialog.submit = lambda text, again: submitted.append(text)
        await press_burst(pilot, burst)
        assert dialog.query_one("#measured-path", Input).value == path
        assert dialog.query_one("#measured-paste", TextArea).text == pasted
        assert app.focused is dialog.query_one(focused)
        assert submitted == []


@pytest.mark.parametrize(
    ("burst", "answer"),
    [
        ("abc\x1b", None),  # escape: closed without a value
        ("abc\r", "abc"),  # enter in the path: the path
        ("abc\tdef\x13", "def"),  # ctrl+s in the paste area: the paste
        ("abc\t\x1b", None),
    ],
)
async def test_enter_escape_and_ctrl_s_after_text_in_a_burst(app_factory, burst, answer):
    """Text, then the key that answers the dialog, read at once: it answers with the text
    typed before it."""
    app = app_factory(view="collectives")
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        dialog = await open_measured(pilot)
        answers: list[str | None] = []
        dialog.submit = lambda text, again: answers.append(text)
        dialog.dismiss = lambda result=None: answers.append(result)
        await press_burst(pilot, burst)
        assert answers == [answer]


async def test_enter_on_the_cancel_button_after_tabs_in_a_burst_cancels(
    app_factory, tmp_path, monkeypatch
):
    """The save dialog (``S``), then ``ctrl+u report.md tab tab enter`` read at once: tab
    to Save, tab to Cancel, enter presses Cancel and nothing is written. (The enter reached
    the path field: it saved report.md.)"""
    from fabricui.tui.screens.save import SaveModal

    monkeypatch.chdir(tmp_path)
    app = app_factory()
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        await pilot.press("S")
        await pilot.pause()
        assert isinstance(app.screen, SaveModal)
        await press_burst(pilot, "\x15report.md\t\t\r")
        await settle(pilot)
        assert not isinstance(app.screen, SaveModal)
        assert sorted(p.name for p in tmp_path.iterdir()) == []


async def test_shift_tab_to_the_formats_in_a_burst_picks_one_with_the_keys_after_it(
    app_factory, tmp_path, monkeypatch
):
    """The save dialog, then ``ctrl+u report shift+tab down space`` read at once: the
    name typed, the format the arrow and space picked (svg). (Down and space reached the
    path field: space was typed in the name, the format stayed Markdown.)"""
    from fabricui.tui.screens.save import SaveModal

    monkeypatch.chdir(tmp_path)
    app = app_factory()
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        await pilot.press("S")
        await pilot.pause()
        dialog = app.screen
        assert isinstance(dialog, SaveModal)
        await press_burst(pilot, "\x15report\x1b[Z\x1b[B ")
        await settle(pilot)
        assert dialog.query_one("#save-path", Input).value == "report"
        assert dialog.format == "svg"
