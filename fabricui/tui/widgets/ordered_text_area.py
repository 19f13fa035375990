"""A text area that takes a burst of keys in the order they were typed (the measured-run
dialog's paste area).

As in ``OrderedInput``: Textual's ``TextArea`` types the letters of a burst (typing over a
slow SSH link, ``tmux send-keys``) where they arrive, but runs its bound keys (``ctrl+u``,
``ctrl+w``, backspace, the arrows) only once they have bubbled up to the app, behind those
letters: ``text ctrl+u more`` deleted the line's start after ``more`` was typed.
"""

from __future__ import annotations

from textual import events
from textual.widgets import TextArea

from fabricui.tui.textual_private import run_own_binding


class OrderedTextArea(TextArea):
    """A ``TextArea`` running its own key bindings when the key reaches it, in turn with
    the letters typed around them."""

    async def _on_key(self, event: events.Key) -> None:
        """A bound key runs here and goes no further (``TextArea``'s handler, run next,
        types the letters, enter and tab)."""
        if not event.is_printable and await run_own_binding(self, event.key):
            event.stop()
