"""Two fabrics side by side: before and after a what-if, or two topologies (``c``)."""

from __future__ import annotations

from typing import TYPE_CHECKING, ClassVar

from rich.table import Table
from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import VerticalScroll
from textual.widgets import Static

from fabricui.tui.screens.modal import Modal
from fabricui.tui.widgets.key_bar import KeyBar
from fabricui.units import format_time_us

if TYPE_CHECKING:
    from fabricui.services.compare import ComparedFigure


def _value(value: float | None, unit: str) -> str:
    if value is None:
        return "-"
    if unit == "us":
        return format_time_us(value)
    return f"{value:,.1f} {unit}"


def compare_table(figures: list[ComparedFigure], a: str, b: str) -> Table:
    """Figure, its value on ``a`` and ``b``, and the change (green: better, red: worse)."""
    table = Table(box=None, padding=(0, 1), pad_edge=False, expand=True)
    table.add_column("figure", ratio=1)
    table.add_column(a, justify="right", no_wrap=True)
    table.add_column(b, justify="right", no_wrap=True)
    table.add_column("change", justify="right", no_wrap=True)
    for fig in figures:
        ratio = fig.ratio
        better = fig.better
        style = "" if better is None else ("green" if better else "red")
        change = "-" if ratio is None else f"x{ratio:.3g}"
        table.add_row(
            fig.name, _value(fig.a, fig.unit), _value(fig.b, fig.unit), Text(change, style=style)
        )
    return table


class CompareModal(Modal[None]):
    """The comparison; escape or q closes it."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape,q", "close", "Close", id="compare.close", tooltip="Close the comparison"),
    ]
    """Keys that close it."""

    DEFAULT_CSS = """
    CompareModal { align: center middle; }
    CompareModal > VerticalScroll {
        width: 110; max-width: 98%; height: auto; max-height: 90%;
        border: round $primary; background: $panel; padding: 0 1;
    }
    """

    def __init__(self, figures: list[ComparedFigure], a: str, b: str) -> None:
        super().__init__()
        self.figures = figures
        """The figures compared."""
        self.labels = (a, b)
        """What each side is."""

    def compose(self) -> ComposeResult:
        """The title and the table; the key bar."""
        a, b = self.labels
        with VerticalScroll() as scroll:
            scroll.border_title = f"compare: {a} vs {b} (esc closes)"
            yield Static(compare_table(self.figures, "A", "B"))
            yield Static(Text(f"A = {a}\nB = {b}", style="dim"))
        yield KeyBar()

    def action_close(self) -> None:
        """Close."""
        self.dismiss(None)
