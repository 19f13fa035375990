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
        """The icon, then the title centred in what is left (cut with an ellipsis)."""
        width = self.size.width
        middle = max(0, width - 2 * SIDE_W)
        title = self.title_text()
        if len(title) > middle:
            cut = glyphs().ellipsis
            title = title[: max(0, middle - len(cut))] + cut if middle > len(cut) else ""
        line = Text(no_wrap=True, overflow="crop", end="")
        line.append(f" {glyphs().icon} ".ljust(SIDE_W))
        line.append(title.center(middle))
        return line

    def on_click(self, event: events.Click) -> None:
        """The icon opens the command palette."""
        if event.x < SIDE_W and self.app.ENABLE_COMMAND_PALETTE:
            event.stop()
            self.app.action_command_palette()
