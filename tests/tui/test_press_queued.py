"""``press_queued`` (the pilot tests' burst of keys) does what ``Pilot.press`` does, key for
key, without its idle wait after each: the same text typed, every arrow handled in order."""

from __future__ import annotations

from typing import Any, ClassVar

import pytest
from textual import events
from textual.app import App, ComposeResult
from textual.binding import Binding, BindingType
from textual.widget import Widget
from textual.widgets import Input

from fabricui.tui.textual_private import _key_and_character, press_queued

TYPED = ("/tmp/a_b-c.txt", "space", "x", "backspace", "minus", "underscore", "colon")


class Counter(Widget, can_focus=True):
    """Records up and down arrows (its bindings, run by the app) and letters (taken by the
    widget itself, as an input does), in the order they come."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("up", "step(-1)", "Up", id="counter.up"),
        Binding("down", "step(1)", "Down", id="counter.down"),
    ]

    def __init__(self) -> None:
        super().__init__()
        self.seen: list[int | str] = []

    def action_step(self, step: int) -> None:
        self.seen.append(step)

    def on_key(self, event: events.Key) -> None:
        if event.is_printable:
            event.stop()
            self.seen.append(event.key)


class Typing(App[None]):
    def compose(self) -> ComposeResult:
        yield Input()
        yield Counter()


async def _typed(*keys: str, queued: bool) -> tuple[str, Any]:
    app = Typing()
    async with app.run_test() as pilot:
        app.query_one(Input).focus()
        await pilot.pause()
        if queued:
            await press_queued(pilot, *keys)
        else:
            await pilot.press(*keys)
        return app.query_one(Input).value, app.query_one(Input).cursor_position


@pytest.mark.parametrize(
    "key", ["/", "_", "-", ".", " ", "a", "N", "slash", "minus", "space", "enter", "up", "ctrl+a"]
)
def test_a_key_is_the_event_the_pilot_sends(key):
    """Characters become their key names with the character; names keep theirs."""
    import unicodedata

    from textual.keys import REPLACED_KEYS, _character_to_key, _get_unicode_name_from_key

    name = _character_to_key(key) if len(key) == 1 and not key.isalnum() else key
    try:
        character = unicodedata.lookup(_get_unicode_name_from_key(REPLACED_KEYS.get(name, name)))
    except KeyError:
        character = name if len(name) == 1 else None
    assert _key_and_character(key) == (name, character)


async def test_typed_text_is_what_the_pilot_types():
    """A path, names of keys and a backspace (an input binding, run by the app after the
    key went up from the input) give the input the same text and cursor."""
    keys = (*TYPED[0], *TYPED[1:])
    assert await _typed(*keys, queued=True) == await _typed(*keys, queued=False)
    assert (await _typed(*keys, queued=True))[0] == "/tmp/a_b-c.txt -_:"  # x rubbed out


async def test_every_held_arrow_is_handled_in_order():
    """200 arrows, then arrows between letters: each is handled, in the order pressed,
    before the call returns."""
    app = Typing()
    async with app.run_test() as pilot:
        counter = app.query_one(Counter)
        counter.focus()
        await pilot.pause()
        await press_queued(pilot, *["down"] * 150, *["up"] * 50)
        assert counter.seen == [1] * 150 + [-1] * 50
        counter.seen.clear()
        await press_queued(pilot, "down", "a", "up", "b", "c", "down")
        assert counter.seen == [1, "a", -1, "b", "c", 1]
