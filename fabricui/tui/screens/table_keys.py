"""The sort and filter keys of the table views (collectives, strategies, plugins), written
once: ``/`` filters, ``>``/``<`` step the sort column, ``I`` reverses it, a header click
sorts by that column (again: the other way)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from textual.reactive import var

from fabricui.tui.widgets.filter_bar import FilterBar

if TYPE_CHECKING:
    from textual.screen import Screen
    from textual.widgets import DataTable

    _TableScreen = Screen[None]  # what the mixin is mixed into, for the type checker
else:
    _TableScreen = object


class SortedFilteredTable(_TableScreen):
    """Mixin for a screen with one sortable, filterable table.

    The screen says how many columns the sort steps through (``sort_column_count``) and how
    it redraws (``resorted`` after a sort change, ``refiltered`` after the filter's words
    change). Handlers go by Textual's ``on_`` names: ``@on`` is only read on the screen's
    own class.
    """

    sort_column: var[int] = var(0, init=False)
    """The column the table is sorted by."""
    reverse: var[bool] = var(False, init=False)
    """Sorted the other way."""
    filter_text: var[str] = var("", init=False)
    """Only rows holding these words are shown."""

    def sort_column_count(self) -> int:
        """How many columns ``>`` and ``<`` step through."""
        raise NotImplementedError

    def resorted(self) -> None:
        """Redraw after the sort column or direction changed."""
        raise NotImplementedError

    def refiltered(self) -> None:
        """Redraw after the filter's words changed."""
        raise NotImplementedError

    def can_sort(self) -> bool:
        """Whether there is something to sort (else a key says what to do first)."""
        return True

    def watch_sort_column(self) -> None:
        self.resorted()

    def watch_reverse(self) -> None:
        self.resorted()

    def watch_filter_text(self) -> None:
        self.refiltered()

    def on_filter_bar_filtered(self, message: FilterBar.Filtered) -> None:
        """Show only the rows holding the filter's words."""
        self.filter_text = message.query

    def header_sort_column(self, event: DataTable.HeaderSelected) -> int | None:
        """The sort column a clicked header stands for (None: not sortable); by default
        its position, for a screen that shows every sortable column in order."""
        index = event.column_index
        return index if index < self.sort_column_count() else None

    def on_data_table_header_selected(self, event: DataTable.HeaderSelected) -> None:
        """A click on a header sorts by that column (again: the other way)."""
        column = self.header_sort_column(event)
        if column is None:
            return
        if column == self.sort_column:
            self.reverse = not self.reverse
        else:
            self.sort_column = column

    def action_filter(self) -> None:
        """Show the filter line (it takes every key typed until enter or escape)."""
        self.query_one(FilterBar).open()

    def action_sort(self, step: int) -> None:
        """Sort by the next (or previous) column."""
        if self.can_sort():
            self.sort_column = (self.sort_column + step) % self.sort_column_count()

    def action_invert(self) -> None:
        """Reverse the order."""
        self.reverse = not self.reverse
