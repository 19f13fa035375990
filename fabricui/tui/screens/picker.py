"""Pick one item from a list in a modal (topologies, operations, groups, models), with a
filter: type anywhere and the list narrows to the rows holding every word typed."""

from __future__ import annotations

from collections.abc import Sequence
from typing import ClassVar, Union

from rich.text import Text
from textual import events, on
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical
from textual.widgets import Input, Label, OptionList
from textual.widgets.option_list import Option

from fabricui.render.table import text_table
from fabricui.tui.glyphs import glyphs
from fabricui.tui.screens.modal import Modal
from fabricui.tui.widgets.key_bar import KeyBar
from fabricui.tui.widgets.ordered_input import OrderedInput
from fabricui.vocabulary import spelling_key

Cells = Union[str, Sequence[str]]
"""A choice's text: one string, or cells laid out in aligned columns."""


def choice_lines(choices: Sequence[tuple[str, Cells]]) -> list[str]:
    """One line per choice; cells of every choice padded to shared column widths. Among
    choices given as cells, one given as a single string (``the previous fabric: ...``)
    is a line of its own: it does not widen their first column."""
    rows = [[text] if isinstance(text, str) else list(text) for _, text in choices]
    if not rows:
        return []
    cells = [i for i, (_, text) in enumerate(choices) if not isinstance(text, str)]
    if not cells:
        return _aligned(rows)
    aligned = iter(_aligned([rows[i] for i in cells]))
    return [text if isinstance(text, str) else next(aligned) for _, text in choices]


def _aligned(rows: list[list[str]]) -> list[str]:
    """Rows padded to shared column widths, columns of numbers right-aligned."""
    width = max(len(r) for r in rows)
    numbers = {c for c in range(width) if all(len(r) > c and r[c][:1].isdigit() for r in rows)}
    return text_table(rows, right=numbers)


def matches(line: str, query: str) -> bool:
    """Every word of ``query`` occurs in ``line`` (case-insensitive), as typed or as a
    spelling of one of its words (``dgx_b200``, ``DGXB200`` and ``meta-llama/Llama-3-70B``
    find ``dgx-b200`` and ``llama3-70b``, as the command line takes them)."""
    text = line.lower()
    keys: list[str] | None = None
    for word in query.lower().split():
        if word in text:
            continue
        key = spelling_key(word)
        if keys is None:
            keys = [spelling_key(token) for token in text.split()]
        if not key or not any(key in token for token in keys):
            return False
    return True


class PickerModal(Modal["str | None"]):
    """A list of (id, text) choices; typing filters it, enter or a click picks one,
    escape cancels.

    Dismisses with the chosen id or None.
    """

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape", "cancel", "Cancel", id="picker.cancel", tooltip="Close without a change"),
        Binding(
            "slash",
            "focus_filter",
            "Filter",
            id="picker.filter",
            tooltip="Type words to narrow the list",
            key_display="/",
        ),
    ]
    """Escape cancels, / filters; arrows and enter come from the list."""

    DEFAULT_CSS = """
    PickerModal { align: center middle; }
    PickerModal > Vertical {
        width: auto; min-width: 40; max-width: 95%; height: auto; max-height: 90%;
        border: round $primary; background: $panel; padding: 0 1;
    }
    PickerModal #picker-filter { border: none; height: 1; padding: 0; background: $panel; }
    PickerModal OptionList, PickerModal OptionList:focus {
        height: auto; border: none; width: auto; padding: 0;
    }
    PickerModal #picker-count { color: $text-muted; }
    """

    def __init__(
        self, title: str, choices: Sequence[tuple[str, Cells]], current: str | None = None
    ) -> None:
        super().__init__()
        self.title_text = title
        """Shown above the list."""
        self.choices = list(choices)
        """(id, text or cells) of each choice."""
        self.current = current
        """Id highlighted first."""
        self.lines = dict(zip((key for key, _ in self.choices), choice_lines(self.choices)))
        """Id -> the aligned line shown for it."""

    def compose(self) -> ComposeResult:
        """Title, the filter, the list and how many rows it shows; the key bar."""
        with Vertical():
            yield Label(self.title_text)
            yield OrderedInput(
                placeholder="type to filter (/)", id="picker-filter", select_on_focus=False
            )
            yield OptionList()
            yield Label("", id="picker-count")
        yield KeyBar()

    def key_hints(self) -> list[Binding]:
        """Enter picks the highlighted row (from the list or the filter); tab goes between
        the filter and the list."""
        return [Binding("enter", "", "Pick"), Binding("tab", "", "Next")]

    def on_mount(self) -> None:
        """Fit the list to the screen, highlight the current choice, focus the list."""
        self._fit()
        self._show(list(self.lines), self.current)
        self.query_one(OptionList).focus()

    def on_resize(self) -> None:
        """A new terminal size: the list fits it again, on the same row."""
        if self._fit():
            options = self.query_one(OptionList)
            index = options.highlighted
            current = options.get_option_at_index(index).id if index is not None else None
            self._show([o.id for o in options.options if o.id is not None], current)

    def _fit(self) -> bool:
        """Cap the list's height at what the modal has left on this screen (the modal is
        at most 90% high: border, title, filter and count take 5 rows), so that scrolling
        to the highlighted row really shows it; True when the list's size changed."""
        width, height = self.app.size
        rows = max(3, height * 9 // 10 - 5)
        fit = max(20, width * 95 // 100 - 4)  # at most 95% wide; border and padding take 4
        changed = (fit, rows) != (self._width, self._rows)
        self._width, self._rows = fit, rows
        self.query_one(OptionList).styles.max_height = rows
        return changed

    _width = 0
    """Columns a line of the list has (lines longer are cut, with an ellipsis)."""
    _rows = 0
    """Rows the list has on this screen."""

    def _show(self, ids: Sequence[str], current: str | None) -> None:
        """List ``ids`` (cut to the modal's width: the last cell, a description, gives
        way) and highlight ``current``, else the first."""
        cut = glyphs().ellipsis
        options = self.query_one(OptionList)
        fit = self._width
        if len(ids) > self._rows:  # the scrollbar shows: it tells that there is more
            fit -= options.styles.scrollbar_size_vertical
        options.clear_options()
        lines = ((key, self.lines[key]) for key in ids)
        options.add_options(
            [  # Text: no markup, so a [tag] or a description's brackets show as written
                Option(Text(line if len(line) <= fit else line[: fit - len(cut)] + cut), id=key)
                for key, line in lines
            ]
        )
        if ids:
            shown = list(ids)
            options.highlighted = shown.index(current) if current in shown and current else 0

    @on(Input.Changed, "#picker-filter")
    def filter_changed(self, event: Input.Changed) -> None:
        """Show only the rows holding every word typed."""
        shown = [key for key, line in self.lines.items() if matches(line, event.value)]
        self._show(shown, None)
        total = len(self.lines)
        self.query_one("#picker-count", Label).update(
            f"{len(shown)} of {total}" if event.value.strip() else ""
        )

    @on(Input.Submitted, "#picker-filter")
    def filter_submitted(self) -> None:
        """Enter in the filter picks the highlighted row."""
        options = self.query_one(OptionList)
        if options.highlighted is not None and options.option_count:
            option = options.get_option_at_index(options.highlighted)
            self.dismiss(option.id)

    def on_key(self, event: events.Key) -> None:
        """Typing on the list goes to the filter; down from the filter goes to the list."""
        field = self.query_one("#picker-filter", Input)
        options = self.query_one(OptionList)
        if options.has_focus and event.is_printable and event.character not in (None, "/"):
            field.focus()
            field.insert_text_at_cursor(event.character or "")
            event.stop()
        elif field.has_focus and event.key == "down":
            options.focus()
            event.stop()

    @on(OptionList.OptionSelected)
    def selected(self, event: OptionList.OptionSelected) -> None:
        """Close with the chosen id."""
        self.dismiss(event.option.id)

    def action_focus_filter(self) -> None:
        """Move to the filter."""
        self.query_one("#picker-filter", Input).focus()

    def action_cancel(self) -> None:
        """Close without a choice."""
        self.dismiss(None)
