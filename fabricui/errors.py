"""Error types: every user-facing failure is a FabricError with a one-line message."""

from __future__ import annotations


class FabricError(Exception):
    """Root of every error fabricui reports to a user as one line (exit status 2).

    Args:
        message: The whole explanation, on one line.
        title: A short area name shown before the message (e.g. ``hwdb``).
    """

    title = "error"

    def __init__(self, message: str, title: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        if title is not None:
            self.title = title

    def __str__(self) -> str:
        return self.message


class HwdbError(FabricError):
    """A hardware-database or topology YAML file is malformed or inconsistent."""

    title = "hwdb"


class ConfigError(FabricError):
    """A command-line argument or user setting is invalid."""

    title = "config"


class EngineError(FabricError, ValueError):
    """The engine was asked for something it cannot compute (bad ids, sizes, groups)."""

    title = "engine"


class PluginError(FabricError):
    """A plugin failed to load or registered invalid data."""

    title = "plugin"


def one_line(text: object) -> str:
    """``text`` with its lines joined by single spaces (messages are one line)."""
    return " ".join(part.strip() for part in str(text).splitlines() if part.strip())


def exception_line(exc: BaseException) -> str:
    """An exception as one line: a fabricui error's message, else ``Type: message``."""
    if isinstance(exc, FabricError):
        return one_line(exc.message)
    text = one_line(exc)
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__
