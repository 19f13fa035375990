"""Error types: every user-facing failure is a FabricError with a one-line message."""

from __future__ import annotations

import difflib
from collections.abc import Iterable, Sequence


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


def nearest(name: str, candidates: Iterable[str], count: int = 3) -> list[str]:
    """The ``count`` candidates closest to ``name`` (for 'did you mean' messages)."""
    pool = sorted(set(candidates))
    close = difflib.get_close_matches(name, pool, n=count, cutoff=0.4)
    if not close:
        close = [c for c in pool if name.lower() in c.lower() or c.lower() in name.lower()]
    return close[:count]


def unknown_key_message(key: str, known: Iterable[str]) -> str:
    """One line for a YAML key no schema has: ``unknown key (nearest: nics_per_node; known:
    link, gbps, ...)``, the likely typo's fix first."""
    pool = list(known)
    close = nearest(key, pool)
    hint = f"nearest: {', '.join(close)}; " if close else ""
    return f"unknown key ({hint}known: {', '.join(pool)})"


def unknown_id_message(kind: str, name: str, candidates: Iterable[str]) -> str:
    """One line: ``unknown gpu 'h100' (nearest: h100-sxm, h200-sxm)``."""
    pool = list(candidates)
    close = nearest(name, pool)
    hint = f"nearest: {', '.join(close)}" if close else f"valid: {', '.join(sorted(pool)[:8])}"
    return f"unknown {kind} {name!r} ({hint})"


def format_path(path: Sequence[str | int]) -> str:
    """Render a key path of a YAML input as ``links[3].bw_GBps`` (``(top level)`` when
    empty), the way every YAML error names the field it points at."""
    out = ""
    for part in path:
        if isinstance(part, int):
            out += f"[{part}]"
        else:
            out += f".{part}" if out else str(part)
    return out or "(top level)"
