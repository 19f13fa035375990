"""How a service reports the phases of long work, without knowing who listens: the
command line draws them on a terminal (``render.progress``), ``--json`` and tests ignore
them."""

from __future__ import annotations

from typing import Protocol


class Phases(Protocol):
    """What a service reports while it works."""

    def phase(self, name: str) -> None:
        """The work enters phase ``name`` (the previous one is done)."""


class NoProgress:
    """Reports nothing (``--json``, a pipe, tests); also a no-op context manager."""

    def phase(self, name: str) -> None:
        """Ignore ``name``."""

    def __enter__(self) -> NoProgress:
        return self

    def __exit__(self, *exc: object) -> None:
        return None


#: The reporter that reports nothing.
NO_PROGRESS = NoProgress()
