"""Horizontal bar charts, linear or log-scaled, with an optional reference line."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import ClassVar

from rich.style import Style
from rich.text import Text
from textual.reactive import reactive
from textual.widget import Widget

from fabricui.tui.glyphs import glyphs

#: Eighth-block characters for the fractional end of a bar.


@dataclass(frozen=True)
class Bar:
    """One row of a bar chart."""

    label: str
    """Left-hand label."""
    value: float | None
    """Length of the bar in data units; None draws a note row (``label`` only)."""
    text: str = ""
    """Right-hand figure(s)."""
    tone: str = "normal"
    """``normal``, ``good``, ``warn``, ``bad`` or ``muted``."""


def bar_cells(value: float, top: float, width: int, log: bool, bottom: float = 1.0) -> float:
    """Length of a bar in character cells (fractional).

    Args:
        value: The bar's value.
        top: Value that fills ``width``.
        width: Cells available.
        log: Log scale from ``bottom`` to ``top``.
        bottom: Value drawn as an empty bar on a log scale.
    """
    if value <= 0 or top <= 0 or width <= 0:
        return 0.0
    if log:
        low = math.log10(bottom)
        span = math.log10(top) - low
        if span <= 0:
            return float(width)
        return max(0.5, min(width, width * (math.log10(value) - low) / span))
    return min(width, width * value / top)


def draw_bar(cells: float) -> str:
    """Block characters for a bar of ``cells`` cells."""
    whole = int(cells)
    part = int((cells - whole) * 8)
    g = glyphs()
    return g.full * whole + (g.eighths[part] if part else "")


class BarChart(Widget):
    """Bars with labels on the left and figures on the right.

    A log scale suits the bandwidth pyramid; a linear scale with a ``marker`` (the step time)
    suits communication against compute, where a bar past the marker is drawn in the
    ``bad`` tone and the marker column as a line through every bar row.
    """

    DEFAULT_CSS = """
    BarChart { height: auto; padding: 0 1; }
    BarChart > .bar-chart--normal { color: $primary; }
    BarChart > .bar-chart--good { color: $success; }
    BarChart > .bar-chart--warn { color: $warning; }
    BarChart > .bar-chart--bad { color: $error; }
    BarChart > .bar-chart--muted { color: $text-muted; }
    BarChart > .bar-chart--marker { color: $text; text-style: bold; }
    BarChart > .bar-chart--label { color: $text; }
    """

    COMPONENT_CLASSES: ClassVar[set[str]] = {
        "bar-chart--normal",
        "bar-chart--good",
        "bar-chart--warn",
        "bar-chart--bad",
        "bar-chart--muted",
        "bar-chart--marker",
        "bar-chart--label",
    }
    """Tones of bars, the marker and labels."""

    bars: reactive[tuple[Bar, ...]] = reactive((), layout=True)
    """The rows."""
    log_scale: reactive[bool] = reactive(False)
    """Log scale."""
    marker: reactive[float | None] = reactive(None)
    """Reference value drawn as a vertical line (linear scale), or None."""
    marker_label: reactive[str] = reactive("", layout=True)
    """Caption of the marker, shown under the bars."""
    empty: reactive[str] = reactive("", layout=True)
    """Shown when there are no bars."""

    def set_bars(
        self,
        bars: list[Bar],
        log: bool = False,
        marker: float | None = None,
        marker_label: str = "",
    ) -> None:
        """Replace the rows."""
        self.bars, self.log_scale = tuple(bars), log
        self.marker, self.marker_label = marker, marker_label

    def show_message(self, text: str) -> None:
        """No bars, just a line of text."""
        self.bars, self.empty = (), text

    def _style(self, name: str) -> Style:
        return self.get_component_rich_style(f"bar-chart--{name}", partial=True)

    def render(self) -> Text:
        """The chart for the current width."""
        if not self.bars:
            return Text(self.empty)
        values = [b.value for b in self.bars if b.value is not None and b.value > 0]
        label_w = max(len(b.label) for b in self.bars if b.value is not None)
        text_w = max((len(b.text) for b in self.bars if b.value is not None), default=0)
        area = max(4, self.size.width - label_w - text_w - 3)
        top = max(values + ([self.marker] if self.marker else [])) if values else 1.0
        bottom = 1.0
        if self.log_scale and values:
            bottom = 10 ** math.floor(math.log10(min(values)) - 0.3)
        marker_at = (
            int(bar_cells(self.marker, top, area, False))
            if self.marker and not self.log_scale
            else None
        )
        out = Text(no_wrap=True, overflow="crop")
        for i, bar in enumerate(self.bars):
            if i:
                out.append("\n")
            if bar.value is None:
                out.append(" " * (label_w + 1) + bar.label, self._style("muted"))
                continue
            out.append(bar.label.ljust(label_w) + " ", self._style("label"))
            cells = bar_cells(bar.value, top, area, self.log_scale, bottom)
            body = draw_bar(cells).ljust(area)
            tone = bar.tone
            if marker_at is not None and marker_at < area:
                before, after = body[:marker_at], body[marker_at + 1 :]
                out.append(before, self._style(tone))
                out.append(glyphs().marker, self._style("marker"))
                out.append(after, self._style("bad" if bar.value > self.marker else tone))  # type: ignore[operator]
            else:
                out.append(body, self._style(tone))
            out.append(" " + bar.text.rjust(text_w))
        if marker_at is not None and self.marker_label:
            column = label_w + 1 + marker_at
            out.append("\n")
            if column + 2 + len(self.marker_label) <= self.size.width:
                out.append(" " * column + glyphs().marker + " ", self._style("marker"))
                out.append(self.marker_label, self._style("muted"))
            else:
                start = max(0, column - len(self.marker_label) - 1)
                out.append(" " * start + self.marker_label + " ", self._style("muted"))
                out.append(glyphs().marker, self._style("marker"))
        return out
