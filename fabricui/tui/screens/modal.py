"""The base of every dialog: it answers once.

Keys typed faster than a dialog closes (pasted, typed ahead over SSH, a key held) reach it
after its first answer: a second ``dismiss`` would pop the screen under it (the view: a
``Can't pop screen`` traceback; another dialog: closed without its answer).
"""

from __future__ import annotations

from typing import TypeVar

from textual.await_complete import AwaitComplete
from textual.screen import ModalScreen

ResultT = TypeVar("ResultT")


class Modal(ModalScreen[ResultT]):
    """A modal screen whose ``dismiss`` closes it only while it is the screen on top."""

    def dismiss(self, result: ResultT | None = None) -> AwaitComplete:
        """Close with ``result``; nothing once closed (keys queued behind the answer)."""
        if not self.is_active:
            return AwaitComplete.nothing()
        return super().dismiss(result)
