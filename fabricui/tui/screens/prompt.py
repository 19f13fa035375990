"""A one-line question in a modal: a GPU id, a size, a layout; checked before it closes."""

from __future__ import annotations

from typing import Callable, ClassVar

from textual import on
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical
from textual.validation import ValidationResult, Validator
from textual.widgets import Input, Label

from fabricui.tui.glyphs import glyphs
from fabricui.tui.screens.modal import Modal
from fabricui.tui.widgets.key_bar import KeyBar

#: Characters of an error the prompt shows whole (four lines of the dialog).
ERROR_CHARS = 224


def middle_cut(text: str, limit: int = ERROR_CHARS) -> str:
    """``text``, its middle cut when longer than ``limit``: an error quoting a pasted page
    would push the dialog past the screen's foot, and the error with it (enter then seems
    to do nothing); its start and its end, the reason, stay."""
    if len(text) <= limit:
        return text
    cut = f" {glyphs().ellipsis} "
    keep = (limit - len(cut)) // 2
    return text[:keep] + cut + text[-keep:]


class CheckValidator(Validator):
    """A Textual validator from a check function: ``check(text)`` returns an error line
    for bad input, or None (the engine's own one-line messages become the failure text)."""

    def __init__(self, check: Callable[[str], str | None]) -> None:
        super().__init__()
        self.check = check
        """Returns an error line for bad input, else None."""

    def validate(self, value: str) -> ValidationResult:
        """Valid when ``check`` finds nothing wrong."""
        error = self.check(value.strip())
        return self.failure(error) if error else self.success()


class PromptModal(Modal["str | None"]):
    """Ask for one value, validated when submitted (Textual validators: ``validators``, or
    ``check`` returning an error line); a failure keeps the modal open and says why.

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
        validators: list[Validator] | None = None,
    ) -> None:
        super().__init__()
        self.title_text = title
        """Question shown above the input."""
        self.value = value
        """Initial text."""
        self.help_text = help_text
        """Hint under the input."""
        self.validators = list(validators or []) + ([CheckValidator(check)] if check else [])
        """What the value must pass before the modal closes."""

    def compose(self) -> ComposeResult:
        """Title, input, hint and the error line; the key bar."""
        with Vertical():
            yield Label(self.title_text)
            yield Input(
                value=self.value,
                id="prompt-input",
                select_on_focus=True,
                validators=self.validators,
                validate_on=["submitted"],
            )
            yield Label(self.help_text, id="prompt-help")
            yield Label("", id="prompt-error")
        yield KeyBar()

    def key_hints(self) -> list[Binding]:
        """Enter in the field gives the value."""
        return [Binding("enter", "", "OK")]

    @on(Input.Submitted)
    def submitted(self, event: Input.Submitted) -> None:
        """Check the value; close with it, or show why not."""
        result = event.validation_result
        if result is not None and not result.is_valid:
            said = "; ".join(result.failure_descriptions)
            self.query_one("#prompt-error", Label).update(middle_cut(said))
            return
        self.dismiss(event.value.strip())

    def action_cancel(self) -> None:
        """Close without a value."""
        self.dismiss(None)
