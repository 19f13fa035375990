"""A text field that takes a burst of keys in the order they were typed.

A terminal hands over the keys typed faster than the screen answers in one read (a paste,
typing over a slow SSH link, ``tmux send-keys``). Textual's ``Input`` types the letters of
such a burst where they arrive, but runs its bound keys (``ctrl+u``, ``ctrl+w``,
backspace, enter) only once they have bubbled up to the app, behind those letters:
``ctrl+u NCCL_ALGO=nvls enter`` cleared the text typed after ``ctrl+u`` and submitted an
empty field.
"""

from __future__ import annotations

from textual import events
from textual.widgets import Input

from fabricui.tui.textual_private import run_own_binding


class OrderedInput(Input):
    """An ``Input`` running its own key bindings when the key reaches it, in turn with the
    letters typed around them."""

    async def _on_key(self, event: events.Key) -> None:
        """A bound key runs here and goes no further (``Input``'s handler, run next, types
        the letters)."""
        if not event.is_printable and await run_own_binding(self, event.key):
            event.stop()
