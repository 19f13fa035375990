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
