"""A one-line filter shown above a list or table when ``/`` is pressed: the view shows
only the rows that hold every word typed; escape clears and hides it."""

from __future__ import annotations

from typing import ClassVar

from textual import on
from textual.binding import Binding, BindingType
from textual.message import Message
from textual.widgets import Input

from fabricui.tui.widgets.ordered_input import OrderedInput


def table_bindings(view: str, shown: bool, header_clicks: bool) -> list[Binding]:
    """``/`` filter, ``>``/``<`` sort by the next/previous column, ``I`` invert: the keys of a
    view with a filterable, sortable table (its actions ``filter``, ``sort(step)``,
    ``invert``), ids ``VIEW.filter`` ... ``shown``: filter and ``>`` in the key bar."""
    hint = " (or click a header)" if header_clicks else ""
    return [
        Binding(
            "slash", "filter", "Filter", id=f"{view}.filter",
            tooltip="Show rows holding words", key_display="/", show=shown,
        ),
        Binding(
            "greater_than_sign", "sort(1)", "Sort >", id=f"{view}.sort_next",
            tooltip=f"Sort by the next column{hint}", key_display=">", show=shown,
        ),
        Binding(
            "less_than_sign", "sort(-1)", "Sort <", id=f"{view}.sort_previous",
            tooltip="Sort by the previous column", key_display="<", show=False,
        ),
        Binding(
            "I", "invert", "Invert", id=f"{view}.invert",
            tooltip="Reverse the sort order", show=False,
        ),
    ]  # fmt: skip


def row_matches(cells: list[str] | tuple[str, ...], query: str) -> bool:
    """Every word of ``query`` occurs in one of the row's cells (case-insensitive)."""
    text = " ".join(cells).lower()
    return all(word in text for word in query.lower().split())


class FilterBar(OrderedInput):
    """The filter line; posts ``FilterBar.Filtered`` with the words typed."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape", "clear", "Clear", id="filter.clear", tooltip="Clear the filter"),
    ]
    """Escape clears and hides the filter."""

    DEFAULT_CSS = """
    FilterBar, FilterBar:focus { display: none; height: 1; border: none; padding: 0 1; }
    FilterBar.-shown { display: block; }
    """

    class Filtered(Message):
        """The filter's words changed."""

        def __init__(self, query: str) -> None:
            self.query = query
            """The words typed ("" shows every row)."""
            super().__init__()

    def __init__(self, *, id: str | None = None) -> None:  # noqa: A002
        super().__init__(placeholder="filter: type words, escape clears", id=id)
        self.can_focus = False  # hidden until / : never the screen's first focus

    def open(self) -> None:
        """Show the filter and type into it."""
        self.can_focus = True
        self.add_class("-shown")
        self.focus()

    @on(Input.Changed)
    def _changed(self, event: Input.Changed) -> None:
        event.stop()
        self.post_message(self.Filtered(event.value))

    @on(Input.Submitted)
    def _submitted(self, event: Input.Submitted) -> None:
        """Enter keeps the filter and hands the keys back to the view."""
        event.stop()
        self.screen.focus_next()

    def action_clear(self) -> None:
        """Clear, hide and give the keys back."""
        self.value = ""
        self.remove_class("-shown")
        self.can_focus = False
        self.screen.focus_next()
