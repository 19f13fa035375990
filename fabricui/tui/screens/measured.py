"""A modal that takes an nccl-tests output: a file's path, or the output pasted; read
before it closes, off the event loop (``CheckedModal``: a large paste or a slow disk)."""

from __future__ import annotations

from typing import ClassVar

from textual import on
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical
from textual.widgets import Input, Label, TextArea

from fabricui.tui.screens.checked import Check, CheckedModal
from fabricui.tui.widgets.key_bar import KeyBar
from fabricui.tui.widgets.ordered_input import OrderedInput
from fabricui.tui.widgets.ordered_text_area import OrderedTextArea


class MeasuredModal(CheckedModal):
    """Open or paste an ``all_reduce_perf`` (any nccl-tests) output.

    Enter in the path line opens that file; ctrl+s loads what is pasted below (or the path
    when nothing is). ``check`` returns an error line for input that cannot be read, which
    keeps the modal open (it runs off the event loop); it dismisses with the path or the
    pasted text, or None on escape (also while it is checked).
    """

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape", "cancel", "Cancel", id="measured.cancel", tooltip="Close, no change"),
        Binding(
            "ctrl+s",
            "load",
            "Load",
            id="measured.load",
            tooltip="Load the pasted output (or the path)",
        ),
    ]
    """Escape cancels; ctrl+s loads the paste; enter in the path line opens the file.
    ctrl+s is not a priority binding: it runs once it has come up from the field, after the
    letters typed before it in one burst, not ahead of them."""

    DEFAULT_CSS = """
    MeasuredModal { align: center middle; }
    MeasuredModal > Vertical {
        width: 90; max-width: 95%; height: 80%; max-height: 30;
        border: round $primary; background: $panel; padding: 0 1;
    }
    MeasuredModal Label { width: 100%; }
    MeasuredModal #measured-paste { height: 1fr; }
    MeasuredModal .measured-help { color: $text-muted; }
    MeasuredModal #measured-error { color: $error; }
    MeasuredModal #measured-error.-checking { color: $text-muted; }
    """

    def __init__(self, check: Check) -> None:
        super().__init__(check)

    def compose(self) -> ComposeResult:
        """Path line, paste area, hints and the error line; the key bar."""
        with Vertical():
            yield Label("Measured nccl-tests output (all_reduce_perf ...)")
            yield OrderedInput(
                placeholder="path of the output file, then enter", id="measured-path"
            )
            yield Label("or paste the output below, then ctrl+s:", classes="measured-help")
            yield OrderedTextArea(id="measured-paste", soft_wrap=False)
            yield Label("", id="measured-error")
        yield KeyBar()

    def key_hints(self) -> list[Binding]:
        """Enter in the path line opens the file; tab goes between the path and the
        paste."""
        enter = [Binding("enter", "", "Open")] if isinstance(self.focused, Input) else []
        return [*enter, Binding("tab", "", "Next")]

    def show_checking(self, line: str) -> None:
        """The error line says the output is read."""
        label = self.query_one("#measured-error", Label)
        label.update(line)
        label.add_class("-checking")

    def show_refusal(self, error: str) -> None:
        """The error line says why it cannot be read."""
        label = self.query_one("#measured-error", Label)
        label.remove_class("-checking")
        label.update(error)

    def _path(self) -> str:
        return self.query_one(Input).value.strip()

    def _load_value(self) -> str:
        """What ctrl+s loads: the paste, or the path when nothing is pasted."""
        pasted = self.query_one(TextArea).text
        return pasted if pasted.strip() else self._path()

    @on(Input.Submitted, "#measured-path")
    def path_submitted(self, event: Input.Submitted) -> None:
        """Open the file named."""
        if event.value.strip():
            self.submit(event.value.strip(), self._path)

    def action_load(self) -> None:
        """Load the pasted output, or the path when nothing is pasted."""
        if self.is_checking:  # a second ctrl+s: the first is still read
            return
        value = self._load_value()
        if value:
            self.submit(value, self._load_value)
        else:
            self.show_refusal("give a path or paste an output")
