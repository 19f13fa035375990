"""What every command prints goes through here: JSON that is always valid (never NaN or
Infinity) and text with the control characters of its inputs escaped, so a log or a
record file can never move the cursor, clear the screen or retitle the terminal."""

from __future__ import annotations

import json
import re
import sys
from typing import Any, TextIO

from fabricui.errors import FabricError
from fabricui.streams import StreamWrapper

#: C0 and C1 control characters other than newline and tab (ESC, BEL, CSI, OSC, DCS ...).
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")


def escape_controls(text: str) -> str:
    """``text`` with every control character except newline and tab written as ``\\xNN``."""
    return _CONTROL.sub(lambda m: f"\\x{ord(m.group()):02x}", text)


def json_text(data: Any, indent: int | None = 2) -> str:
    """``data`` as JSON text; a non-finite number is a bug, reported as one line.

    Raises:
        FabricError: ``data`` holds NaN or an infinity.
    """
    try:
        return json.dumps(data, indent=indent, allow_nan=False)
    except ValueError as exc:
        raise FabricError(f"the result holds a number JSON cannot carry ({exc})") from None


def print_json(data: Any, indent: int | None = 2) -> None:
    """Print ``data`` as JSON (see ``json_text``)."""
    print(json_text(data, indent))


class SafeWriter(StreamWrapper):
    """A text stream that escapes control characters before they reach the terminal."""

    def write(self, text: str) -> int:
        """Write ``text`` with its control characters escaped; returns ``len(text)``."""
        self.stream.write(escape_controls(text))
        return len(text)


def safe_streams() -> tuple[TextIO, TextIO]:
    """Wrap ``sys.stdout`` and ``sys.stderr`` in ``SafeWriter``; returns the originals."""
    originals = (sys.stdout, sys.stderr)
    if sys.stdout is not None and not isinstance(sys.stdout, SafeWriter):
        sys.stdout = SafeWriter(sys.stdout)
    if sys.stderr is not None and not isinstance(sys.stderr, SafeWriter):
        sys.stderr = SafeWriter(sys.stderr)
    return originals
