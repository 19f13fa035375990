"""A one-line question in a modal: a GPU id, a size, a layout; checked before it closes."""

from __future__ import annotations

from typing import Callable, ClassVar

from textual import on
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import Input, Label


class PromptModal(ModalScreen["str | None"]):
    """Ask for one value; ``check`` returns an error line (kept open) or None (accepted).

    Dismisses with the text typed, or None on escape.
    """

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape", "cancel", "Cancel", id="prompt.cancel", tooltip="Close without a change"),
    ]
    """Escape cancels; enter submits (the input's own key)."""

    DEFAULT_CSS = """
    PromptModal { align: center middle; }
    PromptModal > Vertical {
        width: 60; max-width: 95%; height: auto;
        border: round $primary; background: $panel; padding: 0 1;
    }
    PromptModal Label { width: 100%; }
    PromptModal #prompt-help { color: $text-muted; }
    PromptModal #prompt-error { color: $error; }
    """

    def __init__(
        self,
        title: str,
        value: str = "",
        help_text: str = "",
        check: Callable[[str], str | None] | None = None,
    ) -> None:
        super().__init__()
        self.title_text = title
        """Question shown above the input."""
        self.value = value
        """Initial text."""
        self.help_text = help_text
        """Hint under the input."""
        self.check = check
        """Returns an error line for bad input, else None."""

    def compose(self) -> ComposeResult:
        """Title, input, hint and the error line."""
        with Vertical():
            yield Label(self.title_text)
            yield Input(value=self.value, id="prompt-input", select_on_focus=True)
            yield Label(self.help_text, id="prompt-help")
            yield Label("", id="prompt-error")

    @on(Input.Submitted)
    def submitted(self, event: Input.Submitted) -> None:
        """Check the value; close with it, or show why not."""
        value = event.value.strip()
        error = self.check(value) if self.check else None
        if error:
            self.query_one("#prompt-error", Label).update(error)
            return
        self.dismiss(value)

    def action_cancel(self) -> None:
        """Close without a value."""
        self.dismiss(None)
