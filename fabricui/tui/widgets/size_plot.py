"""A column plot of one figure against message size (busbw against size, log-x)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import ClassVar

from rich.style import Style
from rich.text import Text
from textual.reactive import reactive
from textual.widget import Widget

from fabricui.tui.glyphs import glyphs

#: Widest a single size's column gets (including its gap).
MAX_COLUMN_WIDTH = 6
#: Vertical eighth blocks, empty to full.


def short_size(size_bytes: float) -> str:
    """``8``, ``64K``, ``1G``: nccl-tests' binary suffixes, for axis labels."""
    value = float(size_bytes)
    for suffix in ("", "K", "M", "G", "T"):
        if value < 1024 or suffix == "T":
            return f"{value:.0f}{suffix}" if value == int(value) else f"{value:.3g}{suffix}"
        value /= 1024
    return f"{value:.3g}T"  # pragma: no cover - loop always returns


def plot_columns(n: int, width: int) -> list[int]:
    """Which size each column draws (-1: a gap): wide plots give every size the same bar
    and a gap after it, narrow ones sample the sizes evenly."""
    if n <= 0:
        return []
    if width >= 2 * n:
        per = min(width // n, MAX_COLUMN_WIDTH)
        return [i if c < per - 1 else -1 for i in range(n) for c in range(per)]
    if width >= n:
        return list(range(n))
    return [min(n - 1, int(c * n / width)) for c in range(width)]


def paired_columns(n: int, width: int) -> list[tuple[int, int]]:
    """(size, series) each column draws when two series stand side by side: a column of
    each and a gap per size where the width allows, else the sizes sampled evenly with
    both series; (-1, 0) is a gap."""
    if n <= 0:
        return []
    if width >= 3 * n:
        return [cell for i in range(n) for cell in ((i, 0), (i, 1), (-1, 0))]
    pairs = max(1, width // 2)
    picks = [min(n - 1, int(p * n / pairs)) for p in range(pairs)]
    return [cell for i in picks for cell in ((i, 0), (i, 1))]


class SizePlot(Widget):
    """Columns of a figure for each size: sizes spread evenly (log-x), linear y from 0.

    The selected size's column is drawn in the highlight tone, so the plot follows the
    table's cursor. A second series (a measurement beside a prediction) stands next to the
    first, size by size, in its own tone.
    """

    DEFAULT_CSS = """
    SizePlot { height: 1fr; padding: 0 1; }
    SizePlot > .size-plot--bar { color: $primary; }
    SizePlot > .size-plot--selected { color: $warning; text-style: bold; }
    SizePlot > .size-plot--axis { color: $text-muted; }
    SizePlot > .size-plot--second { color: $success; }
    """

    COMPONENT_CLASSES: ClassVar[set[str]] = {
        "size-plot--bar",
        "size-plot--selected",
        "size-plot--axis",
        "size-plot--second",
    }
    """Tones of the columns, the selected column, the axes and the second series."""

    sizes: reactive[tuple[float, ...]] = reactive(())
    """Message sizes [bytes], ascending."""
    values: reactive[tuple[float, ...]] = reactive(())
    """The figure for each size (GB/s)."""
    selected: reactive[int | None] = reactive(None)
    """Index of the highlighted size."""
    title: reactive[str] = reactive("busbw GB/s")
    """Caption above the plot."""
    second: reactive[tuple[float, ...]] = reactive(())
    """A second series beside the first (empty: none)."""

    def set_data(
        self,
        sizes: Sequence[float],
        values: Sequence[float],
        title: str,
        second: Sequence[float] | None = None,
    ) -> None:
        """Plot ``values`` (and ``second`` beside them) against ``sizes``."""
        self.sizes, self.values, self.title = tuple(sizes), tuple(values), title
        self.second = tuple(second or ())

    def select(self, index: int | None) -> None:
        """Highlight one size."""
        self.selected = index

    def _style(self, name: str) -> Style:
        return self.get_component_rich_style(f"size-plot--{name}", partial=True)

    def render(self) -> Text:
        """The plot for the current size."""
        out = Text(no_wrap=True, overflow="crop")
        if not self.values:
            return out
        paired = len(self.second) == len(self.values)
        top = max([*self.values, *(self.second if paired else ())]) or 1.0
        y_labels = [f"{top:.4g}", f"{top / 2:.4g}", "0"]
        axis_w = max(len(s) for s in y_labels) + 1
        width = max(4, self.size.width - axis_w)
        height = max(2, self.size.height - 3)
        n = len(self.values)
        single = [(i, 0) for i in plot_columns(n, width)]
        cells = paired_columns(n, width) if paired else single
        columns = [i for i, _ in cells]
        out.append(self.title + "\n", self._style("axis"))
        for row in range(height):
            level = height - row
            label = ""
            if row == 0:
                label = y_labels[0]
            elif row == height // 2:
                label = y_labels[1]
            out.append(label.rjust(axis_w - 1) + glyphs().vline, self._style("axis"))
            for index, series in cells:
                if index < 0:
                    out.append(" ")
                    continue
                value = (self.second if series else self.values)[index]
                fill = value / top * height
                part = min(8, max(0, int(round((fill - (level - 1)) * 8))))
                tone = "second" if series else "selected" if index == self.selected else "bar"
                out.append(glyphs().levels[part], self._style(tone))
            out.append("\n")
        out.append(
            " " * (axis_w - 1) + glyphs().corner + glyphs().hline * width + "\n",
            self._style("axis"),
        )
        first, last = short_size(self.sizes[0]), short_size(self.sizes[-1])
        middle = short_size(self.sizes[n // 2])
        axis = [" "] * (width + axis_w)
        used = len(columns)
        marks = [(axis_w, first)]
        if n > 2:
            marks.append((axis_w + used // 2 - len(middle) // 2, middle))
        if n > 1:
            marks.append((axis_w + used - len(last), last))
        for pos, label in marks:
            for i, ch in enumerate(label):
                if 0 <= pos + i < len(axis):
                    axis[pos + i] = ch
        out.append("".join(axis).rstrip(), self._style("axis"))
        return out
