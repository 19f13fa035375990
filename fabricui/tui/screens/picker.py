"""Pick one item from a list in a modal (topologies, operations, groups, models)."""

from __future__ import annotations

from typing import ClassVar

from textual import on
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import Label, OptionList
from textual.widgets.option_list import Option


class PickerModal(ModalScreen["str | None"]):
    """A list of (id, text) choices; enter or a click picks one, escape cancels.

    Dismisses with the chosen id or None.
    """

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape", "cancel", "Cancel", id="picker.cancel", tooltip="Close without a change"),
    ]
    """Escape cancels; arrows and enter come from the list."""

    DEFAULT_CSS = """
    PickerModal { align: center middle; }
    PickerModal > Vertical {
        width: 90; max-width: 95%; height: auto; max-height: 90%;
        border: round $primary; background: $panel; padding: 0 1;
    }
    PickerModal OptionList { height: auto; max-height: 24; border: none; }
    """

    def __init__(
        self, title: str, choices: list[tuple[str, str]], current: str | None = None
    ) -> None:
        super().__init__()
        self.title_text = title
        """Shown above the list."""
        self.choices = choices
        """(id, text) of each choice."""
        self.current = current
        """Id highlighted first."""

    def compose(self) -> ComposeResult:
        """Title and the list."""
        with Vertical():
            yield Label(self.title_text)
            yield OptionList(*(Option(text, id=key) for key, text in self.choices))

    def on_mount(self) -> None:
        """Highlight the current choice."""
        options = self.query_one(OptionList)
        ids = [key for key, _ in self.choices]
        if self.current in ids:
            options.highlighted = ids.index(self.current)
        options.focus()

    @on(OptionList.OptionSelected)
    def selected(self, event: OptionList.OptionSelected) -> None:
        """Close with the chosen id."""
        self.dismiss(event.option.id)

    def action_cancel(self) -> None:
        """Close without a choice."""
        self.dismiss(None)
