"""A rich renderable drawn once per width, for a ``Static`` that holds a rich ``Table``.

Textual renders a ``Static``'s rich renderable whole to learn its height
(``RichVisual.get_height``), again to draw it (``render_strips``), and once more to measure
it after each layout change: three renders of every cell of a large table (the plugins
list, the strategies view's decision table) for one picture. The lines rendered at a width
are kept and given back for each of those asks.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from rich.console import Console, ConsoleOptions, RenderableType, RenderResult
    from rich.measure import Measurement
    from rich.segment import Segment

#: Widths whose lines are kept at most (a resize, a scroll bar shown or hidden): the
#: oldest goes first.
KEPT_WIDTHS = 4


class RenderedOnce:
    """``renderable``'s lines, rendered once per width and set of console options.

    Only for renderables whose lines do not depend on the height they are given (a
    ``Table``, a ``Group`` of tables and text; not a ``Layout``): the height Textual asks
    with differs between its measuring and its drawing.

    Args:
        renderable: What to render (never changed once given: a new table is a new
            ``RenderedOnce``).
    """

    def __init__(self, renderable: RenderableType) -> None:
        self.renderable = renderable
        """What is rendered."""
        self.renders = 0
        """Times the renderable was rendered (for tests)."""
        self._lines: dict[tuple[object, ...], list[Segment]] = {}

    def __rich_measure__(self, console: Console, options: ConsoleOptions) -> Measurement:
        """The renderable's own measurement (its cells' widths, no render)."""
        from rich.measure import Measurement

        return Measurement.get(console, options, self.renderable)

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        """The segments rendered at this width, rendered on the first ask."""
        key = (
            options.min_width,
            options.max_width,
            options.justify,
            options.overflow,
            options.no_wrap,
            options.highlight,
            options.markup,
            options.ascii_only,
            options.encoding,
            options.legacy_windows,
            options.is_terminal,
        )
        lines = self._lines.get(key)
        if lines is None:
            lines = list(console.render(self.renderable, options))
            self.renders += 1
            while len(self._lines) >= KEPT_WIDTHS:
                del self._lines[next(iter(self._lines))]
            self._lines[key] = lines
        yield from lines
