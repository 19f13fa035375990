"""A text stream that passes everything but ``write`` to the stream it wraps.

Two wrappers sit on ``sys.stdout``: the control-character escaper of ``render.output`` and
the plugin output router of ``plugins.process``. Both differ only in ``write``."""

from __future__ import annotations

import contextlib
import io
from typing import BinaryIO, TextIO


class StreamWrapper(io.TextIOBase):
    """Flush, close, ``isatty``, ``fileno`` and the encoding of a wrapped text stream;
    subclasses write."""

    def __init__(self, stream: TextIO) -> None:
        super().__init__()
        self.stream = stream
        """The stream written to."""

    def flush(self) -> None:
        """Flush the wrapped stream."""
        self.stream.flush()

    def close(self) -> None:
        """Drop the wrapper. Its flush of the wrapped stream may fail by then (a reader gone
        away) and is not worth a report: Python 3.13 prints finalizer errors it used to ignore.
        """
        with contextlib.suppress(OSError, ValueError):
            super().close()

    def isatty(self) -> bool:
        """Whether the wrapped stream is a terminal."""
        return self.stream.isatty()

    def fileno(self) -> int:
        """The wrapped stream's descriptor."""
        return self.stream.fileno()

    @property
    def buffer(self) -> BinaryIO:
        """The wrapped stream's binary buffer: bytes (a PDF on standard output) go there as
        they are, past any escaping a wrapper does to text."""
        return self.stream.buffer

    def writable(self) -> bool:
        """Always True: a text stream one writes to."""
        return True

    @property
    def encoding(self) -> str:  # type: ignore[override]
        """The wrapped stream's encoding."""
        return str(getattr(self.stream, "encoding", "utf-8"))
