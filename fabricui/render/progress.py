"""Progress of long work on standard error: a one-line bar of named phases with the time so
far, redrawn in place while the work runs, when standard error is a terminal.

Services report phases through ``services.progress.Phases`` (``phase("max-min fair
rates")``) and stay unaware of terminals; a command passes ``terminal_progress(...)``, which
is a no-op for ``--json`` and pipes. Nothing is drawn for work that ends within
``DELAY_S``, so quick commands print exactly what they printed before; the line is erased
when the work ends, also on ctrl+c.
"""

from __future__ import annotations

import os
import sys
import threading
import time
from types import TracebackType
from typing import TextIO

from fabricui.services.progress import NO_PROGRESS, NoProgress

#: Seconds of work before the line first appears.
DELAY_S = 0.5
#: Seconds between redraws.
REDRAW_S = 0.2
#: Cells of the bar.
BAR_CELLS = 12


def bar_line(title: str, done: int, total: int, phase: str, elapsed_s: float) -> str:
    """The progress line: ``title [#####-------] 2/5 phase 3.1 s``."""
    filled = BAR_CELLS * done // max(total, 1)
    bar = "#" * filled + "-" * (BAR_CELLS - filled)
    return f"{title} [{bar}] {done}/{total} {phase} {elapsed_s:.1f} s"


class TerminalProgress:
    """Draws ``bar_line`` on a terminal from a background thread while the work runs.

    Use as a context manager around the work; ``phase`` may be called from the working
    thread at any rate (it only records the name).
    """

    def __init__(self, title: str, total_phases: int, stream: TextIO) -> None:
        self.title = title
        """What the work is (``traffic all_to_all among 1298 GPUs``)."""
        self.total = total_phases
        """Phases the work goes through."""
        self.stream = stream
        """The terminal drawn on."""
        self._done = -1
        self._phase = "starting"
        self._start = time.monotonic()
        self._drawn = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="fabricui-progress", daemon=True)

    def phase(self, name: str) -> None:
        """Enter phase ``name``."""
        self._done = min(self._done + 1, self.total)
        self._phase = name

    def __enter__(self) -> TerminalProgress:
        self._start = time.monotonic()
        self._thread.start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self._stop.set()
        self._thread.join()
        self._erase()

    def _run(self) -> None:
        if self._stop.wait(DELAY_S):
            return
        while not self._stop.is_set():
            self._draw()
            self._stop.wait(REDRAW_S)

    def _draw(self) -> None:
        elapsed = time.monotonic() - self._start
        line = bar_line(self.title, max(self._done, 0), self.total, self._phase, elapsed)
        width = _columns(self.stream) - 1
        line = line[:width]
        try:
            self.stream.write("\r" + line.ljust(self._drawn) + "\r")
            self.stream.flush()
        except (OSError, ValueError):
            self._stop.set()
            return
        self._drawn = len(line)

    def _erase(self) -> None:
        if not self._drawn:
            return
        try:
            self.stream.write("\r" + " " * self._drawn + "\r")
            self.stream.flush()
        except (OSError, ValueError):
            pass
        self._drawn = 0


def _columns(stream: TextIO) -> int:
    """Width of the terminal behind ``stream`` (80 when unknown)."""
    try:
        return os.get_terminal_size(stream.fileno()).columns
    except (OSError, ValueError, AttributeError):
        return 80


def terminal_progress(
    title: str, total_phases: int, quiet: bool = False
) -> TerminalProgress | NoProgress:
    """A ``TerminalProgress`` on standard error when it is a terminal and ``quiet`` is
    false (``--json``), else ``NO_PROGRESS``. Use it as a context manager."""
    stream = getattr(sys.stderr, "stream", sys.stderr)  # below the escaping writer: \r
    if quiet or stream is None or not _is_terminal(stream):
        return NO_PROGRESS
    return TerminalProgress(title, total_phases, stream)


def _is_terminal(stream: TextIO) -> bool:
    try:
        return bool(stream.isatty())
    except (OSError, ValueError, AttributeError):
        return False
