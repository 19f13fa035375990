"""A one-line question in a modal: a GPU id, a size, a layout; checked before it closes
(off the event loop: ``CheckedModal``)."""

from __future__ import annotations

from typing import ClassVar

from textual import on
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical
from textual.validation import Validator
from textual.widgets import Input, Label

from fabricui.tui.glyphs import glyphs
from fabricui.tui.screens.checked import Check, CheckedModal
from fabricui.tui.widgets.key_bar import KeyBar
from fabricui.tui.widgets.ordered_input import OrderedInput

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


class PromptModal(CheckedModal):
    """Ask for one value, validated when submitted (Textual validators: ``validators``,
    then ``check`` returning an error line, run off the event loop); a failure keeps the
    modal open with the text typed and says why.

    Dismisses with the text typed, or None on escape (also while it is checked).
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
    PromptModal #prompt-error.-checking { color: $text-muted; }
    """

    def __init__(
        self,
        title: str,
        value: str = "",
        help_text: str = "",
        check: Check | None = None,
        validators: list[Validator] | None = None,
    ) -> None:
        super().__init__(check)
        self.title_text = title
        """Question shown above the input."""
        self.value = value
        """Initial text."""
        self.help_text = help_text
        """Hint under the input."""
        self.validators = list(validators or [])
        """What the value must pass before ``check`` is asked."""

    def compose(self) -> ComposeResult:
        """Title, input, hint and the error line; the key bar."""
        with Vertical():
            yield Label(self.title_text)
            yield OrderedInput(
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
        if self.is_checking:  # a second enter: the first is still checked
            return
        result = event.validation_result
        if result is not None and not result.is_valid:
            self.show_refusal("; ".join(result.failure_descriptions))
            return
        field = event.input
        self.submit(event.value.strip(), lambda: field.value.strip())

    def show_checking(self, line: str) -> None:
        """The error line says the check runs."""
        label = self.query_one("#prompt-error", Label)
        label.update(line)
        label.add_class("-checking")

    def show_refusal(self, error: str) -> None:
        """The error line says why (its middle cut when long); the field is marked invalid,
        as a Textual validator marks it."""
        label = self.query_one("#prompt-error", Label)
        label.remove_class("-checking")
        label.update(middle_cut(error))
        if error:
            field = self.query_one("#prompt-input", Input)
            field.set_class(True, "-invalid")
            field.set_class(False, "-valid")
