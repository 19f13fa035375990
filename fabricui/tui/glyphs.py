"""The characters the explorer draws with, in two sets: Unicode, and plain ASCII for
terminals whose locale is not UTF-8 (or ``fabricui --ascii``). Widgets ask ``glyphs()`` when
they render, so one switch at start-up changes every view."""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import NamedTuple


class Frame(NamedTuple):
    """The six characters of a frame, in the order ``Glyphs.box`` lists them."""

    top_left: str
    top_right: str
    bottom_right: str
    bottom_left: str
    horizontal: str
    vertical: str


@dataclass(frozen=True)
class Glyphs:
    """One set of drawing characters."""

    dot: str
    """Separator between parts of a line (``a · b``)."""
    dash: str
    """Between the app name and the view in the title."""
    ellipsis: str
    """Where text was cut."""
    icon: str
    """The title bar's mark."""
    down: str
    """A step down (bandwidth ratio, ring order)."""
    wrap: str
    """The ring closing on itself."""
    eighths: str
    """Partial horizontal blocks, 0/8 to 7/8 (index = eighths)."""
    full: str
    """A whole horizontal block."""
    marker: str
    """A vertical marker line across bars."""
    levels: str
    """Vertical levels, empty to full (index 0..8)."""
    vline: str
    """Axis, vertical."""
    hline: str
    """Axis, horizontal."""
    corner: str
    """Axis corner (bottom left)."""
    box: str
    """Box corners and sides, ``top-left top-right bottom-right bottom-left horizontal
    vertical`` (6 characters)."""
    double: str
    """The same for a double frame (a scale-up domain around its hosts)."""
    square: str
    """A filled square (a marked device)."""

    @property
    def box_frame(self) -> Frame:
        """``box`` as named characters."""
        return Frame(*self.box)

    @property
    def double_frame(self) -> Frame:
        """``double`` as named characters."""
        return Frame(*self.double)


UNICODE = Glyphs(
    dot="·",
    dash="—",
    ellipsis="…",
    icon="⭘",
    down="↓",
    wrap="↺",
    eighths=" ▏▎▍▌▋▊▉",
    full="█",
    marker="┃",
    levels=" ▁▂▃▄▅▆▇█",
    vline="│",
    hline="─",
    corner="└",
    box="╭╮╯╰─│",
    double="╔╗╝╚═║",
    square="■",
)
ASCII = Glyphs(
    dot="-",
    dash="-",
    ellipsis="~",
    icon="*",
    down="v",
    wrap="^",
    eighths="        ",
    full="#",
    marker="|",
    levels=" ..::=##@",
    vline="|",
    hline="-",
    corner="+",
    box="++++-|",
    double="++++=|",
    square="#",
)

_current = UNICODE


def glyphs() -> Glyphs:
    """The set in use."""
    return _current


def use_ascii(ascii_only: bool) -> None:
    """Draw with plain ASCII (True) or Unicode (False) from now on."""
    global _current
    _current = ASCII if ascii_only else UNICODE


def locale_is_utf8(environ: dict[str, str] | None = None) -> bool:
    """Whether the terminal's locale speaks UTF-8: the first of ``LC_ALL``, ``LC_CTYPE``,
    ``LANG`` that is set names UTF-8 (none set is the C locale: ASCII)."""
    env = os.environ if environ is None else environ
    for name in ("LC_ALL", "LC_CTYPE", "LANG"):
        value = env.get(name)
        if value:
            return "utf-8" in value.lower() or "utf8" in value.lower()
    return False
