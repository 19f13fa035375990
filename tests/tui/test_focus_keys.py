"""``FocusKeyGate``: the keys and pastes read after tab (shift+tab), or after a key opening
or closing a dialog, in one burst reach the widget focused by then, whatever widgets the
form has (the explorer's fields and Textual's button here; the explorer's dialogs in
``test_prompt_burst`` and ``test_screen_burst``)."""

from __future__ import annotations

import asyncio
from typing import ClassVar

import pytest
from textual import events
from textual.app import App, ComposeResult
from textual.binding import Binding, BindingType
from textual.screen import ModalScreen
from textual.widgets import Button, Input

from fabricui.tui import focus_keys
from fabricui.tui.focus_keys import FocusKeyGate
from fabricui.tui.textual_private import press_burst
from fabricui.tui.widgets.ordered_input import OrderedInput


class Form(App[None]):
    """Two fields and a button, with the explorer's gate."""

    def __init__(self) -> None:
        super().__init__()
        self.gate = FocusKeyGate(self, super().on_event)
        self.pressed: list[str] = []

    def compose(self) -> ComposeResult:
        yield OrderedInput(id="first", select_on_focus=False)
        yield OrderedInput(id="second", select_on_focus=False)
        yield Button("OK", id="ok")

    async def on_event(self, event: events.Event) -> None:
        if not await self.gate.take(event):
            await super().on_event(event)

    def on_button_pressed(self, event: Button.Pressed) -> None:
        self.pressed.append(event.button.id or "")


def values(app: Form) -> tuple[str, str]:
    return app.query_one("#first", Input).value, app.query_one("#second", Input).value


@pytest.mark.parametrize(
    ("burst", "typed", "focused", "pressed"),
    [
        ("abc\tdef", ("abc", "def"), "second", []),
        ("abc\tdef\x1b[Zgh", ("abcgh", "def"), "first", []),
        ("a\tb\tc\td", ("ad", "b"), "first", []),  # round: first, second, OK, first
        ("abc\t\t\r", ("abc", ""), "ok", ["ok"]),  # enter: the button's, not the field's
        ("\t\t\x1b[Z\x1b[Zx", ("x", ""), "first", []),
    ],
)
async def test_the_keys_after_a_focus_key_reach_the_widget_it_focused(
    burst, typed, focused, pressed
):
    app = Form()
    async with app.run_test() as pilot:
        app.query_one("#first", Input).focus()
        await pilot.pause()
        await press_burst(pilot, burst)
        assert values(app) == typed
        assert app.focused is app.query_one(f"#{focused}")
        assert app.pressed == pressed
        assert not app.gate.waiting and not app.gate.held


async def test_a_paste_after_tab_goes_to_the_next_field():
    app = Form()
    async with app.run_test() as pilot:
        app.query_one("#first", Input).focus()
        await pilot.pause()
        for event in [events.Key("a", "a"), events.Key("tab", "\t"), events.Paste("pasted")]:
            app.post_message(event)
        await pilot.pause()
        assert values(app) == ("a", "pasted")


class SlowTab(Input):
    """A field that takes long over a tab (until ``release`` is set)."""

    release = asyncio.Event()

    async def on_key(self, event: events.Key) -> None:
        if event.key == "tab":
            await self.release.wait()


class SlowForm(Form):
    def compose(self) -> ComposeResult:
        yield SlowTab(id="first", select_on_focus=False)
        yield Input(id="second", select_on_focus=False)


async def test_keys_held_behind_a_focus_key_the_app_is_slow_to_handle_go_on(monkeypatch):
    """A tab whose handling outlasts ``HOLD_MAX_S`` holds the keys after it no longer: they
    go on to the widget focused then (never held for good)."""
    monkeypatch.setattr(focus_keys, "HOLD_MAX_S", 0.1)
    app = SlowForm()
    async with app.run_test() as pilot:
        SlowTab.release = asyncio.Event()
        app.query_one("#first", Input).focus()
        await pilot.pause()
        for event in [events.Key("tab", "\t"), events.Key("x", "x")]:
            app.post_message(event)
        await asyncio.sleep(0.3)
        assert not app.gate.waiting and not app.gate.held
        SlowTab.release.set()
        await pilot.pause()
        assert values(app) == ("x", "")  # x reached the field focused when it went on


async def test_keys_held_behind_a_key_released_into_a_slow_one_go_on(monkeypatch):
    """Home (a bound key: it holds the keys after it; quick), then tab (slow), ``x``,
    ``y`` read at once: released behind home, tab holds ``x`` and ``y`` in turn, no longer
    than ``HOLD_MAX_S`` either."""
    monkeypatch.setattr(focus_keys, "HOLD_MAX_S", 0.1)
    app = SlowForm()
    async with app.run_test() as pilot:
        SlowTab.release = asyncio.Event()
        app.query_one("#first", Input).focus()
        await pilot.pause()
        for key, character in [("home", None), ("tab", "\t"), ("x", "x"), ("y", "y")]:
            app.post_message(events.Key(key, character))
        await asyncio.sleep(0.3)
        assert not app.gate.waiting and not app.gate.held
        SlowTab.release.set()
        await pilot.pause()
        assert values(app) == ("xy", "")


class Dialog(ModalScreen[str]):
    """A field; enter closes the dialog with its text."""

    def compose(self) -> ComposeResult:
        yield OrderedInput(id="dialog", select_on_focus=False)

    def on_input_submitted(self, event: Input.Submitted) -> None:
        self.dismiss(event.value)


class DialogForm(Form):
    """The form, with ``d`` opening a dialog (its answer typed into the first field)."""

    BINDINGS: ClassVar[list[BindingType]] = [Binding("d", "dialog")]

    def compose(self) -> ComposeResult:
        yield Button("OK", id="ok")
        yield OrderedInput(id="first", select_on_focus=False)
        yield OrderedInput(id="second", select_on_focus=False)

    def action_dialog(self) -> None:
        self.push_screen(
            Dialog(),
            lambda text: self.query_one("#second", Input).insert_text_at_cursor(text or ""),
        )


@pytest.mark.parametrize(
    ("burst", "dialog", "typed"),
    [
        ("dabc", "abc", None),  # opened: the keys after d reach its field
        ("dabc\r", None, ("", "abc")),  # opened and closed
        ("dab\rd\tcd\r", None, ("", "abcd")),  # closed, opened again (tab: its one field)
    ],
)
async def test_the_keys_after_a_key_opening_or_closing_a_dialog_reach_the_screen_shown(
    burst, dialog, typed
):
    """A key pushing a screen (``d``) or popping one (enter), then keys, read at once: the
    keys reach the widget focused on the screen shown then, as typed one at a time."""
    app = DialogForm()
    async with app.run_test() as pilot:
        await press_burst(pilot, burst)
        if dialog is not None:
            assert isinstance(app.screen, Dialog)
            assert app.focused is app.screen.query_one("#dialog")
            assert app.screen.query_one("#dialog", Input).value == dialog
        else:
            assert not isinstance(app.screen, Dialog)
            assert values(app) == typed
        assert not app.gate.waiting and not app.gate.held
