"""The characters the explorer draws with, in two sets: Unicode, and plain ASCII for
terminals whose locale is not UTF-8 (or ``fabricui --ascii``). Widgets ask ``glyphs()`` when
they render, so one switch at start-up changes every view."""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass
from typing import TYPE_CHECKING, NamedTuple

if TYPE_CHECKING:
    from collections.abc import Mapping


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
    between_figures: str
    """Between figures or names on one line (the path's key line, ``50 GB/s · 3.23 us``;
    the map's jobs line, ``job 7 n[0-1] · job 8 n3``), spaces included; in ASCII not
    ``dot``'s ``-``, which reads as a minus between numbers and as a range between hosts."""
    ellipsis: str
    """Where text was cut (one column in Unicode, three in ASCII)."""
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
    chosen: str
    """Inside the button of the chosen option of a set (a radio button); the others are
    blank, so the choice shows without colours."""
    button_sides: str
    """Left and right side of such a button (2 characters)."""

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
    between_figures=" · ",
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
    chosen="●",
    button_sides="▐▌",
)
ASCII = Glyphs(
    dot="-",
    dash="-",
    between_figures="; ",
    ellipsis="...",  # not "~": that is the map's mark of a degraded link
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
    square="o",  # "#" is the heat map's full link
    chosen="*",
    button_sides="()",
)

_current = UNICODE


def glyphs() -> Glyphs:
    """The set in use."""
    return _current


def use_ascii(ascii_only: bool) -> None:
    """Draw with plain ASCII (True) or Unicode (False) from now on."""
    global _current
    _current = ASCII if ascii_only else UNICODE


def locale_is_utf8(environ: Mapping[str, str] | None = None) -> bool:
    """Whether the terminal's locale speaks UTF-8: the first of ``LC_ALL``, ``LC_CTYPE``,
    ``LANG`` that is set names UTF-8 (none set is the C locale: ASCII).

    Args:
        environ: The variables as the user set them; default: this process's, without the
            ``LC_CTYPE`` Python itself set (``user_locale``).
    """
    env = user_locale(os.environ) if environ is None else environ
    for name in ("LC_ALL", "LC_CTYPE", "LANG"):
        value = env.get(name)
        if value:
            return "utf-8" in value.lower() or "utf8" in value.lower()
    return False


#: What Python sets ``LC_CTYPE`` to when it coerces the C locale (PEP 538).
COERCED_CTYPES = ("C.UTF-8", "C.utf8", "UTF-8")


def user_locale(
    environ: Mapping[str, str],
    original: Mapping[str, str] | None = None,
    utf8_mode: bool | None = None,
) -> Mapping[str, str]:
    """``environ`` with ``LC_CTYPE`` as the user set it (or without it), not as Python
    set it itself.

    With the C or POSIX locale (``LANG=C``, or nothing set) Python coerces it at start-up
    (PEP 538): it writes ``LC_CTYPE=C.UTF-8`` into its own environment before any of our
    code runs, which would read as a UTF-8 terminal. The coercion is told from the
    environment the process started with (``/proc/self/environ`` on Linux) when there
    is one: there ``LC_CTYPE`` is what the user set, or absent. Elsewhere Python's UTF-8
    mode, which the C locale also turns on (PEP 540) unless ``PYTHONUTF8`` says otherwise,
    tells it.

    Args:
        environ: The process's environment now.
        original: The environment it started with; default: read from ``/proc``.
        utf8_mode: Python's UTF-8 mode; default: ``sys.flags.utf8_mode``.
    """
    value = environ.get("LC_CTYPE")
    if value not in COERCED_CTYPES or environ.get("LC_ALL"):
        return environ  # coercion sets one of these, and never under LC_ALL
    if original is None:
        original = _start_environ()
    if original is not None:
        coerced = original.get("LC_CTYPE") != value
    else:
        mode = sys.flags.utf8_mode if utf8_mode is None else utf8_mode
        coerced = bool(mode) and "PYTHONUTF8" not in environ
    if not coerced:
        return environ
    user = {k: v for k, v in environ.items() if k != "LC_CTYPE"}
    if original is not None and original.get("LC_CTYPE"):  # LC_CTYPE=C, say
        user["LC_CTYPE"] = original["LC_CTYPE"]
    return user


def _start_environ() -> dict[str, str] | None:
    """The environment this process started with (Linux), or None where it cannot be read."""
    try:
        with open("/proc/self/environ", "rb") as file:
            data = file.read()
    except OSError:
        return None
    pairs = (item.split(b"=", 1) for item in data.split(b"\0") if b"=" in item)
    return {k.decode(errors="replace"): v.decode(errors="replace") for k, v in pairs}
