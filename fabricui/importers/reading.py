"""Reading a saved output: bounded, regular files only, UTF-8 or PowerShell's UTF-16."""

from __future__ import annotations

from fabricui.files import read_bounded
from fabricui.importers.common import ParseError

#: Largest input read [bytes]; topology and state outputs are a few KiB to MiB.
MAX_INPUT_BYTES = 64 * 2**20
#: Byte-order marks of UTF-16 text (PowerShell's ``>`` writes UTF-16 with one).
UTF16_BOMS = (b"\xff\xfe", b"\xfe\xff")


def read_output(name: str, max_bytes: int = MAX_INPUT_BYTES) -> tuple[str, str]:
    """The text of FILE (``-`` = stdin) and the name to use in messages.

    Raises:
        ParseError: Missing, not a regular file, unreadable, binary, not UTF-8, too large
            or empty.
    """
    data, origin = read_bounded(
        name, max_bytes, ParseError, "a file", ", more than a saved tool output holds"
    )
    text = decode_output(data, origin)
    if not text.strip():
        raise ParseError(f"{origin}: empty input")
    return text, origin


def decode_output(data: bytes, origin: str) -> str:
    """The text a tool printed: UTF-8, or UTF-16 with a byte-order mark (PowerShell's ``>``).

    Raises:
        ParseError: Binary (NUL bytes) or not valid text, naming ``origin``.
    """
    if data.startswith(UTF16_BOMS):
        try:
            return data.decode("utf-16")
        except UnicodeDecodeError as exc:
            raise ParseError(f"{origin}: not valid UTF-16 text (byte {exc.start})") from None
    if b"\x00" in data:
        raise ParseError(f"{origin}: a binary file (NUL bytes), not text output")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ParseError(f"{origin}: not UTF-8 text (byte {exc.start})") from None
