"""A radio button whose chosen state shows without colours."""

from __future__ import annotations

from textual.widgets import RadioButton

from fabricui.tui.glyphs import glyphs


class ChoiceButton(RadioButton):
    """A ``RadioButton`` marked by a glyph, not only by its colour: the chosen option has a
    dot in its button (``*`` in ASCII, ``(*)``), the others a blank, so monochrome
    terminals and ``NO_COLOR`` still tell which one is chosen.

    Textual draws every radio button with the same dot and tells them apart by colour
    alone; ``BUTTON_INNER`` (and the sides, which are not ASCII) are set per instance
    from the glyph set in use.
    """

    def on_mount(self) -> None:
        """Take the glyph set's sides (``()`` in ASCII) and mark the current state."""
        sides = glyphs().button_sides
        self.BUTTON_LEFT, self.BUTTON_RIGHT = sides[0], sides[1]
        self._mark()

    def watch_value(self) -> None:
        """Move the mark with the choice (then Textual's own reaction: the ``-on`` class
        and the ``Changed`` message)."""
        self._mark()
        super().watch_value()

    def _mark(self) -> None:
        self.BUTTON_INNER = glyphs().chosen if self.value else " "
        self.refresh()
