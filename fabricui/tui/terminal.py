"""The terminal the explorer takes over: drawn on the standard stream that is the terminal,
and given back as it was whatever signal ends the explorer and whenever it arrives.

Why a guard of our own: Textual restores the terminal when its app exits normally, but
SIGTERM and SIGHUP kill the process outright (alternate screen on, raw mode, cursor hidden),
and a handler set once the app is mounted leaves the first moments (the screen taken over,
the first view not yet composed) uncovered. The guard is set before the app starts: until
the app is up a signal restores the terminal through Textual's own driver and ends the
process at once (status 128+N); once it is up a signal exits like ``q``, with the forced
restore as a fallback should that take too long. A second signal never waits.
"""

from __future__ import annotations

import contextlib
import os
import signal
import sys
import threading
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any, TextIO

from fabricui.tui.textual_private import terminal_driver

if TYPE_CHECKING:
    import asyncio

    from textual.app import App

#: Signals that end the explorer with the terminal restored.
SIGNALS = ("SIGTERM", "SIGHUP", "SIGINT")
#: How long a signalled explorer may take to exit like ``q`` before its terminal is
#: restored by force [s].
GRACE_S = 2.0
#: How long the forced restore may take before the process ends regardless [s].
RESTORE_TIMEOUT_S = 1.0
#: What Textual's driver writes when it gives the terminal back (mouse reports, bracketed
#: paste, focus events and the Kitty keyboard protocol off, line wrap on, the alternate
#: screen left, the cursor shown), written straight to the terminal when the driver could
#: not do it: a signal that lands while the main thread holds the lock of the driver's
#: output queue would wait on it for ever.
RESET_SEQUENCES = (
    "\x1b[?1000l\x1b[?1003l\x1b[?1015l\x1b[?1006l\x1b[?2004l\x1b[?1004l\x1b[<u"
    "\x1b[?7h\x1b[?1049l\x1b[?25h"
)


def terminal_stream() -> TextIO | None:
    """The stream the explorer draws on: standard error when it is the terminal (Textual's
    choice, which leaves stdout free), else standard output when that is (``fabricui
    2>e.log``); None when neither is (the explorer refuses to start before this)."""
    for stream in (sys.__stderr__, sys.__stdout__):
        with contextlib.suppress(ValueError, OSError, AttributeError):
            if stream is not None and stream.isatty():
                return stream
    return None


class TerminalGuard:
    """Restores the terminal on SIGTERM, SIGHUP and SIGINT, from before the app draws
    anything until it has given the terminal back.

    Use ``guarding(app)`` around ``app.run()``; the app calls ``ready`` once mounted.
    """

    def __init__(self, app: App[Any], fd: int) -> None:
        self.app = app
        """The explorer whose driver draws on the terminal."""
        self.fd = fd
        """The terminal's input descriptor (whose modes raw mode changes)."""
        self.saved: list[Any] | None = _modes(fd)
        """The terminal's modes before the app started (None: not a terminal)."""
        self.loop: asyncio.AbstractEventLoop | None = None
        """The app's event loop once it is up (signals then exit like ``q``)."""
        stream = terminal_stream()
        self.out_fd: int | None = stream.fileno() if stream is not None else None
        """The descriptor the explorer draws on (for the reset when the driver cannot)."""
        self._exiting = False
        self._restoring = False
        self._driver_stopped = False

    def ready(self, loop: asyncio.AbstractEventLoop) -> None:
        """The app is mounted: from now on a signal first asks it to exit."""
        self.loop = loop

    def on_signal(self, signum: int, _frame: object = None) -> None:
        """A signal handler (main thread): exit like ``q`` when the app is up and this is
        the first signal, else restore the terminal and end the process now."""
        if self.loop is not None and not self._exiting:
            self._exiting = True
            with contextlib.suppress(RuntimeError):  # the loop closed: force it below
                self.loop.call_soon_threadsafe(self.app.exit, None, 128 + signum)
                fallback = threading.Timer(GRACE_S, self.restore_and_exit, (signum,))
                fallback.daemon = True
                fallback.start()
                return
        self.restore_and_exit(signum)

    def restore_and_exit(self, signum: int) -> None:
        """Give the terminal back (Textual's driver first, then the saved modes) and end
        the process with status 128+``signum``, without waiting for anything else.

        The driver is stopped on this (the main) thread, where Textual resets its signal
        handlers; a watchdog ends the process should that block (a terminal that is gone
        never drains).
        """
        if self._restoring:
            return  # a second signal during the restore: the first one ends the process
        self._restoring = True
        watchdog = threading.Timer(RESTORE_TIMEOUT_S, self._exit, (signum,))
        watchdog.daemon = True
        watchdog.start()
        self._stop_driver()
        self._exit(signum)

    def _exit(self, signum: int) -> None:
        """Put the saved terminal modes back and end the process now (the screen modes too,
        written directly, when the driver did not finish giving them back)."""
        if not self._driver_stopped and self.out_fd is not None:
            with contextlib.suppress(OSError):
                os.write(self.out_fd, RESET_SEQUENCES.encode())
        if self.saved is not None:
            with contextlib.suppress(Exception):
                import termios

                termios.tcsetattr(self.fd, termios.TCSANOW, self.saved)
        os._exit(128 + signum)

    def _stop_driver(self) -> None:
        """Textual's own restore: its queued output, then the sequences that stop mouse
        reports, leave the alternate screen and show the cursor, in that order."""
        driver = terminal_driver(self.app)
        if driver is None:
            return
        with contextlib.suppress(Exception):  # not started yet, or the terminal is gone
            driver.stop_application_mode()
        with contextlib.suppress(Exception):
            driver.close()
            self._driver_stopped = True


@contextlib.contextmanager
def guarding(app: App[Any]) -> Iterator[TerminalGuard]:
    """Guard the terminal while the block runs ``app``; the previous handlers come back
    after it."""
    fd = sys.__stdin__.fileno() if sys.__stdin__ is not None else 0
    guard = TerminalGuard(app, fd)
    previous = {}
    for name in SIGNALS:
        signum = getattr(signal, name, None)
        if signum is not None:
            previous[signum] = signal.signal(signum, guard.on_signal)
    try:
        yield guard
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)


def _modes(fd: int) -> list[Any] | None:
    """The terminal modes of ``fd`` (None when it is not a terminal)."""
    try:
        import termios

        return termios.tcgetattr(fd)
    except Exception:  # no termios (Windows), not a terminal, closed
        return None
