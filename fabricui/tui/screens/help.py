"""The help modal: every key of every view, with what it does."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import ClassVar

from rich.table import Table
from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import VerticalScroll
from textual.widgets import Static

from fabricui.tui.screens.modal import Modal
from fabricui.tui.widgets.key_bar import KeyBar

Section = tuple[str, Sequence[BindingType]]
"""(area title, bindings) of one part of the help."""


def key_label(binding: Binding) -> str:
    """``+``, ``ctrl+s``, ``1``: what to press, all alternatives joined by ``/``."""
    if binding.key_display:
        return binding.key_display
    names = {
        "question_mark": "?",
        "plus": "+",
        "minus": "-",
        "equals_sign": "=",
        "left_square_bracket": "[",
        "right_square_bracket": "]",
        "escape": "esc",
    }
    return "/".join(names.get(k.strip(), k.strip()) for k in binding.key.split(","))


def _bindings(items: Iterable[BindingType]) -> list[Binding]:
    out = []
    for item in items:
        if isinstance(item, Binding):
            out.append(item)
        else:
            out.append(Binding(*item))
    return out


#: Below this many columns the help folds each binding's id into its explanation, which
#: would otherwise wrap a few words a line beside an unwrapped id column.
NARROW_COLUMNS = 100


def help_table(sections: Sequence[Section], narrow: bool = False) -> Table:
    """Every binding by area: key, what it does, its id (for keymaps; never wrapped) and
    the longer explanation (wrapped to the width left); ``narrow`` puts the id after the
    explanation, dimmed, so the explanation gets the id's column."""
    table = Table(box=None, padding=(0, 1), pad_edge=False, expand=True, show_header=False)
    table.add_column("key", no_wrap=True, style="bold", max_width=12)
    table.add_column("what", no_wrap=True)
    if not narrow:
        table.add_column("id", no_wrap=True, style="dim")
    table.add_column("detail", ratio=1)
    blank = ("",) * (3 if narrow else 4)
    for title, bindings in sections:
        table.add_row("", Text(title, style="bold underline"), *blank[2:])
        for binding in _bindings(bindings):
            tooltip, key_id = binding.tooltip or "", binding.id or ""
            if narrow:
                detail = Text(tooltip)
                if key_id:
                    detail.append(f"{' ' if tooltip else ''}({key_id})", style="dim")
                table.add_row(key_label(binding), binding.description, detail)
            else:
                table.add_row(key_label(binding), binding.description, key_id, tooltip)
        table.add_row(*blank)
    return table


class HelpModal(Modal[None]):
    """Every key by area, then how to use the palette; escape, q or ? closes it."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding(
            "escape,q,question_mark", "close", "Close", id="help.close", tooltip="Close the help"
        ),
    ]
    """Keys that close the help."""

    DEFAULT_CSS = """
    HelpModal { align: center middle; }
    HelpModal > VerticalScroll {
        width: 100; max-width: 98%; height: 90%;
        border: round $primary; background: $panel; padding: 0 1;
    }
    """

    def __init__(self, sections: Sequence[Section]) -> None:
        super().__init__()
        self.sections = sections
        """The areas and their bindings."""
        self._narrow: bool | None = None
        """The layout the key table was built for (None: not built yet)."""

    def compose(self) -> ComposeResult:
        """The key table in a scrolling box (built for the terminal's width); the key
        bar."""
        with VerticalScroll() as scroll:
            scroll.border_title = "fabricui keys (esc closes; ctrl+p opens the command palette)"
            self._narrow = self.app.size.width < NARROW_COLUMNS
            yield Static(help_table(self.sections, narrow=self._narrow), id="help-keys")
        yield KeyBar()

    def key_hints(self) -> list[Binding]:
        """The arrows and PgUp/PgDn scroll the help."""
        return [Binding("pagedown", "", "Scroll", key_display="PgDn")]

    def on_resize(self) -> None:
        """Fold the ids into the explanations on a narrow terminal (SSH at 80 columns);
        built again only when the terminal crosses that width."""
        narrow = self.app.size.width < NARROW_COLUMNS
        if narrow != self._narrow:
            self._narrow = narrow
            self.query_one("#help-keys", Static).update(help_table(self.sections, narrow=narrow))

    def action_close(self) -> None:
        """Close."""
        self.dismiss(None)
