"""An error shown in a modal: what went wrong, in one or two lines, never a traceback."""

from __future__ import annotations

from typing import ClassVar

from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical
from textual.widgets import Label

from fabricui.tui.screens.modal import Modal
from fabricui.tui.widgets.key_bar import KeyBar


class ErrorModal(Modal[None]):
    """A title and a message; any of escape, enter or q closes it."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape,enter,q", "close", "Close", id="error.close", tooltip="Close the message"),
    ]
    """Keys that close the modal."""

    DEFAULT_CSS = """
    ErrorModal { align: center middle; }
    ErrorModal > Vertical {
        width: 70; max-width: 95%; height: auto;
        border: round $error; background: $panel; padding: 0 1;
    }
    ErrorModal Label { width: 100%; }
    ErrorModal #error-title { color: $error; text-style: bold; }
    ErrorModal #error-hint { color: $text-muted; }
    """

    def __init__(self, title: str, message: str) -> None:
        super().__init__()
        self.title_text = title
        """What failed."""
        self.message = message
        """Why."""

    def compose(self) -> ComposeResult:
        """Title, message and how to close; the key bar."""
        with Vertical():
            yield Label(self.title_text, id="error-title")
            yield Label(self.message, id="error-message")
            yield Label("escape or enter to close", id="error-hint")
        yield KeyBar()

    def action_close(self) -> None:
        """Close."""
        self.dismiss(None)
