"""The title bar: app name, view and topology on one line, as a single widget.

Why not Textual's ``Header``: it is four widgets (icon, title, clock space and itself) with
their own stylesheets, mounted on every view; one rendered line does the same job and keeps
start-up close to an empty Textual app's. Clicking the icon opens the command palette, as
in ``Header``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from rich.text import Text
from textual.widget import Widget

from fabricui.tui.glyphs import glyphs

if TYPE_CHECKING:
    from textual import events

#: The icon drawn at the left; a click on it opens the command palette.
#: Columns kept for the icon on the left and, for symmetry, on the right.
SIDE_W = 8
#: Fewest characters of the topology arguments kept when they give way; below that the
#: whole title is cut at its end instead.
MIN_ARGS_KEPT = 4


def fit_title(title: str, args: str, width: int, cut: str) -> str:
    """``title`` in ``width`` columns: ``args`` (the topology arguments, in its middle) give
    way first, cut at their end (between words where they have several), so that the
    view's name before them and the markers after them (``(as it is)``, the view's state)
    stay whole; when that is not enough, the whole title is cut at its end. ``cut`` marks
    where text was cut."""
    if len(title) <= width:
        return title
    at = title.find(args) if args else -1
    if at >= 0:
        kept = len(args) - (len(title) - width) - len(cut)
        if kept >= MIN_ARGS_KEPT:
            piece = args[:kept]
            if args[kept] != " " and " " in piece:  # whole words: not "--nodes 1…" for 128
                piece = piece[: piece.rfind(" ")]
            return title[:at] + piece.rstrip() + cut + title[at + len(args) :]
    return title[: max(0, width - len(cut))] + cut if width > len(cut) else ""


class TitleBar(Widget):
    """``title — sub_title`` centred on one line, the palette icon at the left."""

    DEFAULT_CSS = """
    TitleBar {
        dock: top;
        height: 1;
        background: $panel;
        color: $foreground;
    }
    """

    def on_mount(self) -> None:
        """Redraw when the app's title or sub-title changes."""
        self.watch(self.app, "title", self._titles_changed, init=False)
        self.watch(self.app, "sub_title", self._titles_changed, init=False)

    def _titles_changed(self) -> None:
        self.refresh()

    def title_text(self) -> str:
        """What the bar says: ``fabricui — Topology · dgx-h100-pod``."""
        title, sub_title = self.app.title, self.app.sub_title
        return f"{title} {glyphs().dash} {sub_title}" if sub_title else title

    def render(self) -> Text:
        """The icon, then the title centred in what is left (``fit_title``)."""
        width = self.size.width
        middle = max(0, width - 2 * SIDE_W)
        args = getattr(self.app, "title_args", "")
        title = fit_title(self.title_text(), args, middle, glyphs().ellipsis)
        line = Text(no_wrap=True, overflow="crop", end="")
        line.append(f" {glyphs().icon} ".ljust(SIDE_W))
        line.append(title.center(middle))
        return line

    def on_click(self, event: events.Click) -> None:
        """The icon opens the command palette."""
        if event.x < SIDE_W and self.app.ENABLE_COMMAND_PALETTE:
            event.stop()
            self.app.action_command_palette()
