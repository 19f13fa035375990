"""A yes/no question in a modal (``y`` or ``n``), for a step that cannot be undone."""

from __future__ import annotations

from typing import ClassVar

from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical
from textual.widgets import Label

from fabricui.tui.screens.modal import Modal
from fabricui.tui.widgets.key_bar import KeyBar


class ConfirmModal(Modal[bool]):
    """A question; ``y`` dismisses with True, ``n`` or escape with False."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("y", "answer(True)", "Yes", id="confirm.yes", tooltip="Yes, go ahead"),
        Binding("n,escape", "answer(False)", "No", id="confirm.no", tooltip="No, change nothing"),
    ]
    """y answers yes; n and escape answer no."""

    DEFAULT_CSS = """
    ConfirmModal { align: center middle; }
    ConfirmModal > Vertical {
        width: 70; max-width: 95%; height: auto;
        border: round $warning; background: $panel; padding: 0 1;
    }
    ConfirmModal #confirm-question { width: 100%; }
    ConfirmModal #confirm-hint { color: $text-muted; }
    """

    def __init__(self, question: str) -> None:
        super().__init__()
        self.question = question
        """What is asked (ends with the question itself: ``Overwrite it?``)."""

    def compose(self) -> ComposeResult:
        """The question and its keys (in the question and on the key bar)."""
        with Vertical():
            yield Label(self.question, id="confirm-question")
            yield Label("y yes, n or escape no", id="confirm-hint")
        yield KeyBar()

    def action_answer(self, yes: bool) -> None:
        """Close with the answer."""
        self.dismiss(yes)
