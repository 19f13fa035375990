"""Text output fitted to the terminal it is printed on.

On a terminal narrower than a line, the terminal cuts the line at its edge and carries on
at column 0, which scrambles a table's free-text column and leaves prose unindented. When
standard output is a terminal, lines longer than it are reflowed instead: a table row
wraps its last column under that column (or its last columns below the row when they
start too far right), prose wraps at word boundaries under its own indent. A pipe or a
file gets every line as it was written (scripts see one row per line).
"""

from __future__ import annotations

import re
import textwrap
from typing import TextIO

from fabricui.streams import StreamWrapper

#: Narrowest a table's last column is wrapped to [columns]; a row leaving less is kept whole.
MIN_TAIL_COLUMNS = 20
#: Shortest last cell moved under its row [characters]: a short one (a header word, a
#: figure) stays in its row, as the other rows' cells of that column do.
MIN_BELOW_CHARS = 8
#: An environment setting as one word (``NCCL_ALGO=ring``).
_SETTING = re.compile(r"[A-Z][A-Z0-9_]{2,}=\S+")


def _gives_settings(line: str) -> bool:
    """Whether ``line`` gives settings to copy: two in a row (``best for 1 GiB:
    NCCL_ALGO=... NCCL_PROTO=... (caution: ...)``), or one or more ending the line right
    after a label (``set: NCCL_IB_HCA=mlx5_0``). Such a line stays whole so that it copies
    from the terminal as one line; prose that names a setting in passing (``capture it with
    NCCL_DEBUG=INFO (...)``, ``do not set NCCL_IB_DISABLE=1``) wraps like other prose."""
    words = line.split()
    settings = [bool(_SETTING.fullmatch(word)) for word in words]
    if any(a and b for a, b in zip(settings, settings[1:])):
        return True
    if not settings or not settings[-1]:
        return False
    first = len(settings) - 1  # where the settings ending the line start
    while first > 0 and settings[first - 1]:
        first -= 1
    return first == 0 or words[first - 1].endswith(":")


#: A gap between table cells: two or more spaces between two non-space characters.
_CELL_GAP = re.compile(r"(?<=\S) {2,}(?=\S)")


def fit_line(line: str, width: int) -> list[str]:
    """``line`` as lines of at most ``width`` columns where it can be: a table row or a
    ``key  value`` line (cells apart by two or more spaces) wraps its last cell under where
    that cell starts, or, for a row of three cells or more whose last one starts too far
    right, puts its last cells on the lines below (as few as fit); prose wraps at spaces
    with continuation lines indented two more than the line. Words longer than a line
    (URLs) are never split, and a line that gives environment settings to copy
    (``_gives_settings``: ``best for 1 GiB: NCCL_PROTO=Simple``) is kept whole.

    Args:
        line: One line of output, without its newline.
        width: The terminal's columns.

    Returns:
        The lines to print (``[line]`` when it fits or cannot be fitted).
    """
    if len(line) <= width or width < MIN_TAIL_COLUMNS or _gives_settings(line):
        return [line]
    indent = " " * (len(line) - len(line.lstrip(" ")) + 2)
    gaps = list(_CELL_GAP.finditer(line))
    if gaps:
        start = gaps[-1].end()
        if width - start >= MIN_TAIL_COLUMNS:  # a table row or a `key  value` line
            tail = _wrap(line[start:], width - start)
            return [line[:start] + tail[0], *(" " * start + part for part in tail[1:])]
        if len(gaps) >= 2:
            # A table row (three cells or more) too wide for its last cell to wrap in
            # place: its last cells go under the row, as few as leave the rest within the
            # width, and the columns before them stay aligned (every row of a table has the
            # same column starts, so every row splits at the same column).
            for gap in reversed(gaps):
                head, rest = line[: gap.start()], line[gap.end() :]
                if len(head) <= width and len(rest) >= MIN_BELOW_CHARS:
                    below = _wrap(rest, width - len(indent))
                    return [head, *(indent + part for part in below)]
            return [line]
    return _wrap(line, width, indent)


def _wrap(text: str, width: int, indent: str = "") -> list[str]:
    """``text`` wrapped at spaces only: a URL or a path longer than ``width`` stays whole
    (copied from the terminal, it still works)."""
    if width <= len(indent) + 1:  # no room to wrap into: leave the line to the terminal
        return [text]
    lines = textwrap.wrap(
        text, width, subsequent_indent=indent, break_long_words=False, break_on_hyphens=False
    )
    return lines or [text]


class FitWriter(StreamWrapper):
    """A text stream that reflows each complete line to ``width`` (``fit_line``) and holds
    a partial line until its newline or a flush."""

    def __init__(self, stream: TextIO, width: int) -> None:
        super().__init__(stream)
        self.width = width
        """The terminal's columns."""
        self._pending = ""

    def write(self, text: str) -> int:
        """Write the complete lines of ``text`` fitted; returns ``len(text)``."""
        *lines, self._pending = (self._pending + text).split("\n")
        if lines:
            out = [part for line in lines for part in fit_line(line, self.width)]
            self.stream.write("\n".join(out) + "\n")
        return len(text)

    def flush(self) -> None:
        """Write a held partial line as it is, then flush the wrapped stream."""
        if self._pending:
            self.stream.write(self._pending)
            self._pending = ""
        super().flush()


def fitted_width(stream: object) -> int | None:
    """The terminal's columns when ``stream`` is fitted to one (a ``FitWriter``, perhaps
    under other wrappers), else None: a command can lay a table out for that width instead
    of leaving it to be reflowed."""
    while isinstance(stream, StreamWrapper):
        if isinstance(stream, FitWriter):
            return stream.width
        stream = stream.stream
    return None
