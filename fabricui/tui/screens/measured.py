"""A modal that takes an nccl-tests output: a file's path, or the output pasted."""

from __future__ import annotations

from typing import Callable, ClassVar

from textual import on
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical
from textual.widgets import Input, Label, TextArea

from fabricui.tui.screens.modal import Modal
from fabricui.tui.widgets.key_bar import KeyBar


class MeasuredModal(Modal["str | None"]):
    """Open or paste an ``all_reduce_perf`` (any nccl-tests) output.

    Enter in the path line opens that file; ctrl+s loads what is pasted below (or the path
    when nothing is). ``check`` returns an error line for input that cannot be read, which
    keeps the modal open; it dismisses with the path or the pasted text, or None on escape.
    """

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape", "cancel", "Cancel", id="measured.cancel", tooltip="Close, no change"),
        Binding(
            "ctrl+s",
            "load",
            "Load",
            priority=True,
            id="measured.load",
            tooltip="Load the pasted output (or the path)",
        ),
    ]
    """Escape cancels; ctrl+s loads the paste; enter in the path line opens the file."""

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
    """

    def __init__(self, check: Callable[[str], str | None]) -> None:
        super().__init__()
        self.check = check
        """Returns an error line for a path or paste that cannot be read, else None."""

    def compose(self) -> ComposeResult:
        """Path line, paste area, hints and the error line; the key bar."""
        with Vertical():
            yield Label("Measured nccl-tests output (all_reduce_perf ...)")
            yield Input(placeholder="path of the output file, then enter", id="measured-path")
            yield Label("or paste the output below, then ctrl+s:", classes="measured-help")
            yield TextArea(id="measured-paste", soft_wrap=False)
            yield Label("", id="measured-error")
        yield KeyBar()

    def key_hints(self) -> list[Binding]:
        """Enter in the path line opens the file; tab goes between the path and the
        paste."""
        enter = [Binding("enter", "", "Open")] if isinstance(self.focused, Input) else []
        return [*enter, Binding("tab", "", "Next")]

    def _submit(self, value: str) -> None:
        error = self.check(value)
        if error:
            self.query_one("#measured-error", Label).update(error)
            return
        self.dismiss(value)

    @on(Input.Submitted, "#measured-path")
    def path_submitted(self, event: Input.Submitted) -> None:
        """Open the file named."""
        if event.value.strip():
            self._submit(event.value.strip())

    def action_load(self) -> None:
        """Load the pasted output, or the path when nothing is pasted."""
        pasted = self.query_one(TextArea).text
        value = pasted if pasted.strip() else self.query_one(Input).value.strip()
        if value:
            self._submit(value)
        else:
            self.query_one("#measured-error", Label).update("give a path or paste an output")

    def action_cancel(self) -> None:
        """Close without a change."""
        self.dismiss(None)
