"""The line under a view's title on the fabric as it is (``--health``): what the health
files changed, so that the view on screen, and its saved text or SVG, say why its figures
are not the fabric as built."""

from __future__ import annotations

from typing import TYPE_CHECKING

from rich.text import Text
from textual.reactive import reactive
from textual.widget import Widget

from fabricui.tui.glyphs import glyphs

if TYPE_CHECKING:
    from fabricui.fabric.health import HealthChange, HealthOverlay

#: How the line starts, and how it ends (the figures without the files).
HEAD = "as it is: "
TAIL = "; without --health: as built"
#: Fewest characters of the changes kept before the line's end is cut instead [columns].
MIN_CHANGES_COLUMNS = 12


def kept_short(change: HealthChange) -> str:
    """What a changed link keeps, in a word or two: ``keeps 25%``, ``down``,
    ``erroring`` (and ``, erroring`` after what a slowed link keeps)."""
    if change.kind == "errors":
        return "erroring"
    kept = "down" if change.factor <= 0.0 else f"keeps {change.factor:.0%}"
    return kept + (", erroring" if change.erroring else "")


def overlay_line(overlay: HealthOverlay, width: int | None = None) -> str:
    """``as it is: 1 degraded (n0.nic0 (n0 mlx5_0) -> leaf0 keeps 25%); without --health:
    as built``: the overlay's counts, its changes worst first right after them, then how
    many conditions were not applied, in ``width`` columns (None: whole). Where the line
    is too long the end (``; without ...``) goes first, then the changes are cut (with the
    glyph set's ellipsis) so that the counts stay; a line too narrow even for that is cut
    at its end."""
    # The changes go after the counts they detail, not after "N condition(s) not
    # applied", which they are not.
    counts, sep, unmatched = overlay.summary().removeprefix("health: ").partition("; ")
    head, rest = HEAD + counts, sep + unmatched
    order = overlay.worst_first()
    changes = "; ".join(f"{c.label} {kept_short(c)}" for c in order)
    said = f"{head} ({changes}){rest}" if changes else head + rest
    if width is None or len(said) + len(TAIL) <= width:
        return said + TAIL
    if len(said) <= width:
        return said
    cut = glyphs().ellipsis
    room = width - len(head) - len(" (") - len(cut) - len(")") - len(rest)
    if changes and room >= MIN_CHANGES_COLUMNS:
        return f"{head} ({changes[:room].rstrip()}{cut}){rest}"
    return said[: max(0, width - len(cut))] + cut


class HealthLine(Widget):
    """``as it is: ...`` on the fabric as it is (``overlay_line``); hidden on the fabric
    as built."""

    DEFAULT_CSS = """
    HealthLine {
        display: none;
        height: 1;
        padding: 0 1;
        color: $warning;
    }
    """

    overlay: reactive[HealthOverlay | None] = reactive(None)
    """What ``--health`` changed in the fabric shown (None: the fabric as built)."""

    def watch_overlay(self, overlay: HealthOverlay | None) -> None:
        """Shown only on an overlaid fabric."""
        self.display = overlay is not None

    def render(self) -> Text:
        """The line cut to the widget's width."""
        if self.overlay is None:
            return Text("")
        line = overlay_line(self.overlay, self.content_size.width)
        return Text(line, no_wrap=True, overflow="crop", end="")
