"""Keys read in one burst with a key that opens or closes a dialog (``m`` then text, ``:``
then a command, enter then the next key), and tab completing the ``:`` command line after
the letters read with it: each key goes where it goes typed one at a time (``pilot.press``).
"""

from __future__ import annotations

import pytest
from textual import events
from textual.widgets import Input, TextArea

from fabricui.tui import focus_keys
from fabricui.tui.app import settle
from fabricui.tui.command_line import CommandLineModal
from fabricui.tui.textual_private import press_burst


@pytest.fixture(autouse=True)
def patient_hold(monkeypatch):
    """No hold runs out here: these tests are about where keys go, and a busy test machine
    may take longer than ``HOLD_MAX_S`` to build a view the first time (the hold running
    out is ``test_focus_keys``'s)."""
    monkeypatch.setattr(focus_keys, "HOLD_MAX_S", 30.0)


def shown(app) -> tuple[str, str, str, str]:
    """The screen shown, its view, the widget focused and the text it holds."""
    focused = app.focused
    text = ""
    if isinstance(focused, Input):
        text = focused.value
    elif isinstance(focused, TextArea):
        text = focused.text
    return (
        type(app.screen).__name__,
        getattr(app.screen, "VIEW", ""),
        focused.id or type(focused).__name__ if focused is not None else "",
        text,
    )


def keys_of(burst: str) -> list[events.Key]:
    """The key events a terminal read of ``burst`` gives (as ``press_burst`` parses it)."""
    from textual._xterm_parser import XTermParser

    parser = XTermParser()
    return [e for e in [*parser.feed(burst), *parser.feed("")] if isinstance(e, events.Key)]


async def typed_one_at_a_time(app_factory, view: str, first: str, burst: str):
    """``first`` then each key of ``burst`` pressed with ``pilot.press``: what is shown."""
    app = app_factory(view=view)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        if first:
            await pilot.press(first)
        for key in keys_of(burst):
            await pilot.press(key.key)
        await settle(pilot)
        return shown(app)


async def typed_in_a_burst(app_factory, view: str, first: str, burst: str):
    """``first`` pressed, then ``burst`` read at once: what is shown."""
    app = app_factory(view=view)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        if first:
            await pilot.press(first)
        await press_burst(pilot, burst)
        await settle(pilot)
        assert not app._focus_keys.waiting and not app._focus_keys.held
        return shown(app)


@pytest.mark.parametrize(
    ("burst", "value"),
    [
        ("vie\t", "view"),
        ("view py\t", "view pyramid"),
        ("v\tcol", "viewcol"),  # the completion of "v" (no space: the command word)
        ("vie\t py\t", "view pyramid"),
        ("s\t", "src"),
    ],
)
async def test_tab_in_the_command_line_completes_the_letters_read_with_it(
    app_factory, burst, value
):
    """``:``, then letters and tab read at once: tab completes the text typed before it,
    as typed one key at a time (it took the completion of the empty line: ``vie``)."""
    burst_shown = await typed_in_a_burst(app_factory, "topology", ":", burst)
    assert burst_shown == ("CommandLineModal", "", "prompt-input", value)
    assert burst_shown == await typed_one_at_a_time(app_factory, "topology", ":", burst)


async def test_tab_completes_the_text_typed_not_the_completion_computed_before(app_factory):
    """The completion Textual computes after each change (a worker) may lag the text: tab
    takes the completion of the text as it is when tab runs."""
    app = app_factory(view="topology")
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        await pilot.press(":")
        modal = app.screen
        assert isinstance(modal, CommandLineModal)
        field = modal.query_one(Input)
        field.value = "he"
        field.cursor_position = 2
        field._suggestion = "help"  # computed for "he": stale once the text is "vi"
        field.value = "vi"
        field._suggestion = "help"
        await modal.run_action("complete")
        await pilot.pause()
        assert field.value == "view"


@pytest.mark.parametrize(
    ("view", "first", "burst"),
    [
        ("collectives", "", "mabc"),  # the measured-run dialog, its path
        ("collectives", "", "m\x15abc\tdef"),
        ("topology", "", "Sreport.md"),  # the save dialog, its path
        ("topology", "", ":view"),  # the command line
        ("topology", "", ":view pyramid\r"),  # opened, run: the pyramid
        ("topology", "", ":view pyramid\r:he"),  # closed, then opened again
        ("topology", "", ":view collectives\rmxy"),  # closed, the view's m: its dialog
        ("topology", ":", "view collectives\r:op\t"),
        ("topology", "", "?"),  # the help
    ],
)
async def test_keys_after_a_key_that_opens_or_closes_a_dialog_go_where_typed_one_at_a_time(
    app_factory, view, first, burst
):
    """A key opening (``m``, ``S``, ``:``) or closing (enter) a dialog, read at once with
    the keys after it: they reach the dialog opened (the screen shown once it closed), as
    typed one key at a time (they went to the widget focused when they were read)."""
    burst_shown = await typed_in_a_burst(app_factory, view, first, burst)
    assert burst_shown == await typed_one_at_a_time(app_factory, view, first, burst)


async def test_keys_after_escape_closing_a_dialog_go_to_the_view(app_factory):
    """Escape closing the command line, then ``:`` and letters, read at once (an escape
    followed by more is alt+key for a terminal parser: here as key events): they open the
    command line again, not type in the one closing."""
    app = app_factory(view="topology")
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        await pilot.press(":", "x")
        for key in [events.Key("escape", "\x1b"), events.Key("colon", ":"), events.Key("v", "v")]:
            app.post_message(key)
        await settle(pilot)
        assert shown(app) == ("CommandLineModal", "", "prompt-input", "v")
