"""The log of ``fabricui serve``: every record of the process (aiohttp's, textual-serve's,
fabricui's) on one stream with the run's token masked, one plain line per record where
the log is a file, and tracebacks without their local variables (a request's locals hold
its token)."""

from __future__ import annotations

import logging
import traceback
from typing import Any, TextIO

#: What the log shows in place of the run's token.
TOKEN_MASK = "[token]"


def exception_line(exc: BaseException | None) -> str:
    """``Type: message`` of an exception, on one line."""
    if exc is None:
        return "unknown error"
    return " ".join("".join(traceback.format_exception_only(type(exc), exc)).split())


class TokenMaskingFormatter(logging.Formatter):
    """Log records with the token masked; on one line each where asked (a file)."""

    def __init__(self, token: str | None, *, one_line: bool, fmt: str) -> None:
        super().__init__(fmt, datefmt="%Y-%m-%d %H:%M:%S")
        self.token = token
        """The run's token, or None."""
        self.one_line = one_line
        """Whether a record is one line (a traceback shrunk to its last line)."""

    def format(self, record: logging.LogRecord) -> str:
        text = super().format(record)
        if self.token:
            text = text.replace(self.token, TOKEN_MASK)
        return " | ".join(text.splitlines()) if self.one_line else text

    def formatException(self, ei: Any) -> str:  # noqa: N802 (logging's name)
        if self.one_line:
            return exception_line(ei[1])
        return super().formatException(ei)


def configure_logging(stream: TextIO, token: str | None, *, debug: bool = False) -> logging.Handler:
    """Send every log record of the process (aiohttp's, textual-serve's, fabricui's) to
    ``stream``, the token masked as ``[token]``: Rich's lines on a terminal, one plain line
    per record otherwise (a file is grepped, and Rich would wrap it at 80 columns).

    Tracebacks carry no local variables (textual-serve asks Rich for them: a request's
    locals hold its token).

    Args:
        stream: Where the log goes (stderr).
        token: The run's token, or None.
        debug: Whether debug records are logged too.

    Returns:
        The handler now on the root logger.
    """
    handler: logging.Handler
    if stream.isatty():
        from rich.console import Console
        from rich.logging import RichHandler

        handler = RichHandler(
            console=Console(file=stream),
            show_path=False,
            show_time=False,
            rich_tracebacks=False,  # plain ones, through the formatter: masked, no locals
        )
        handler.setFormatter(TokenMaskingFormatter(token, one_line=False, fmt="%(message)s"))
    else:
        handler = logging.StreamHandler(stream)
        handler.setFormatter(
            TokenMaskingFormatter(token, one_line=True, fmt="%(asctime)s %(levelname)s %(message)s")
        )
    logging.basicConfig(
        level=logging.DEBUG if debug else logging.INFO, handlers=[handler], force=True
    )
    return handler
