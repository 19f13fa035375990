"""The one place that touches Textual's private API, so a Textual upgrade breaks here and
nowhere else (``textual`` is pinned exactly; the snapshot and pilot tests cover each use).

- ``screen_text``: the plain text of what the screen shows (Textual exports SVG only).
- ``notifications``: the notifications an app shows (tests assert on them).
- ``record_frames``: a callback per frame handed to the terminal driver (the start-up and
  key-latency benchmarks time frames, not Textual's idle waits).
- ``terminal_driver``: the driver an app draws with (restored on a signal).
- ``driver_drawing_on``: Textual's Linux driver drawing on another stream than stderr.
"""

from __future__ import annotations

import contextlib
import io
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any, Callable, TextIO

if TYPE_CHECKING:
    from textual.app import App
    from textual.driver import Driver
    from textual.notifications import Notification


def screen_text(app: App[Any]) -> str:
    """The current screen as plain text, line by line (what the SVG shows, without styles)."""
    from rich.console import Console

    width, height = app.size
    console = Console(
        width=width,
        height=height,
        file=io.StringIO(),
        force_terminal=True,
        color_system=None,
        record=True,
        legacy_windows=False,
        safe_box=False,
    )
    update = app.screen._compositor.render_update(
        full=True, screen_stack=app._background_screens, simplify=True
    )
    console.print(update)
    lines = console.export_text(styles=False).splitlines()
    return "\n".join(line.rstrip() for line in lines) + "\n"


def notifications(app: App[Any]) -> list[Notification]:
    """The notifications the app currently holds, oldest first."""
    return list(app._notifications)


@contextlib.contextmanager
def record_frames(
    on_frame: Callable[[], None], app_class: type[App[Any]] | None = None
) -> Iterator[None]:
    """Call ``on_frame()`` whenever a frame goes to the terminal, while the block runs.

    Args:
        on_frame: Called for each frame (not for empty updates).
        app_class: The class (or an app instance's class) to hook; default every App.
    """
    from textual.app import App

    target = app_class or App
    display = target._display

    def hooked(self: Any, screen: Any, renderable: Any) -> None:
        if renderable is not None:
            on_frame()
        display(self, screen, renderable)

    target._display = hooked  # type: ignore[method-assign]
    try:
        yield
    finally:
        target._display = display  # type: ignore[method-assign]


def terminal_driver(app: App[Any]) -> Driver | None:
    """The driver ``app`` draws with (None before it starts)."""
    return app._driver


def driver_drawing_on(stream: TextIO) -> type[Driver]:
    """Textual's Linux driver, writing to ``stream`` instead of ``sys.__stderr__``."""
    from textual.drivers.linux_driver import LinuxDriver

    class TerminalDriver(LinuxDriver):
        """Draws on the terminal standard output is, when standard error is not one."""

        def __init__(self, *args: Any, **kwargs: Any) -> None:
            super().__init__(*args, **kwargs)
            self._file = stream  # type: ignore[assignment]  # any text stream will do

    return TerminalDriver
