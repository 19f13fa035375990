"""The one place that touches Textual's private API, so a Textual upgrade breaks here and
nowhere else (``textual`` is pinned exactly; the snapshot and pilot tests cover each use).

- ``screen_text``: the plain text of what the screen shows (Textual exports SVG only).
- ``notifications``: the notifications an app shows (tests assert on them).
- ``record_frames``: a callback per frame handed to the terminal driver (the start-up and
  key-latency benchmarks time frames, not Textual's idle waits).
- ``terminal_driver``: the driver an app draws with (restored on a signal).
- ``driver_drawing_on``: Textual's Linux driver drawing on another stream than stderr.
- ``reuse_parsed_css``: a stylesheet that keeps the rules parsed from each source when
  Textual parses every source again (each screen shown for the first time).
- ``build_mode``: a mode's screen built and mounted without switching to it.
- ``press_queued``: keys sent to an app under test as a terminal sends a burst of them (the
  pilot tests type paths and hold arrows without Textual's idle wait after each key).
- ``press_burst``: keys sent to an app under test as one read of the terminal (a paste,
  ``tmux send-keys C-u text Enter``): parsed as Textual's driver parses them, all queued
  before the app handles the first.
- ``run_own_binding``: a focused widget's own key binding run where the key arrives, not
  once the key has bubbled up to the app (``OrderedInput``).
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import io
import unicodedata
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any, Callable, TextIO

if TYPE_CHECKING:
    from textual.app import App
    from textual.css.stylesheet import Stylesheet
    from textual.driver import Driver
    from textual.notifications import Notification
    from textual.pilot import Pilot
    from textual.widget import AwaitMount, Widget

#: CSS sources whose parsed rules a stylesheet keeps (Textual keeps 64; the explorer's
#: screens, dialogs and widgets, Textual's own included, are about 45 and grow, and an LRU
#: cache smaller than the sources read in turn on each parse would keep none).
PARSED_SOURCES = 1024


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


def reuse_parsed_css(app: App[Any]) -> None:
    """Give ``app`` a stylesheet that parses each CSS source once per set of variables.

    Textual refreshes the CSS whenever a screen is shown for the first time (and on a theme
    change), and each refresh parses every source seen so far again, in a new stylesheet
    with an empty cache: about 0.1 s per new screen on a 2-core machine, growing with each
    widget class mounted. The rules parsed from a source depend only on its text and the
    variables (the theme's colours), so they are kept until the variables change.
    Call before the app runs (its stylesheet is still empty).
    """
    stylesheet = _reusing_stylesheet_class()(variables=app.stylesheet._variables)
    stylesheet.source = app.stylesheet.source.copy()
    app.stylesheet = stylesheet


@functools.cache
def _reusing_stylesheet_class() -> type[Stylesheet]:
    """The stylesheet class (made on first use: this module is imported before Textual)."""
    from textual.cache import LRUCache
    from textual.css.stylesheet import Stylesheet

    class ReusingStylesheet(Stylesheet):
        """Textual's stylesheet, keeping parsed rules across ``reparse``."""

        def __init__(self, *, variables: dict[str, str] | None = None) -> None:
            super().__init__(variables=variables)
            self._parse_cache = LRUCache(PARSED_SOURCES)

        def set_variables(self, variables: dict[str, str]) -> None:
            """Textual's, which forgets every parsed rule: only when they change."""
            if variables != self._variables:
                super().set_variables(variables)

        def reparse(self) -> None:
            """Textual's (parse in a new stylesheet, so that an error leaves this one as it
            was), with this one's parsed rules."""
            stylesheet = Stylesheet(variables=self._variables)
            stylesheet._parse_cache = self._parse_cache
            for read_from, (css, is_defaults, tie_breaker, scope) in self.source.items():
                stylesheet.add_source(
                    css,
                    read_from=read_from,
                    is_default_css=is_defaults,
                    tie_breaker=tie_breaker,
                    scope=scope,
                )
            try:
                stylesheet.parse()
            except Exception:
                self._invalid_css.update(stylesheet._invalid_css)
                raise
            self._rules = stylesheet.rules
            self._rules_map = None
            self.source = stylesheet.source
            self._require_parse = False

    return ReusingStylesheet


def build_mode(app: App[Any], mode: str) -> AwaitMount:
    """Build ``mode``'s screen and mount it, hidden, as switching to the mode first does
    (``App.switch_mode`` has no way to prepare a mode without showing it).

    Returns:
        An awaitable that waits for the screen and its widgets to be mounted.
    """
    return app._init_mode(mode)


async def press_burst(pilot: Pilot[Any], data: str) -> None:
    """Send ``data`` (``"\x15NCCL_ALGO=nvls\r"``) as a terminal hands over keys typed
    faster than the app answers: parsed by the xterm parser Textual's Linux driver reads the
    terminal with, every key posted before the app handles the first; then wait for idle.
    An escape at the end is the escape key (the driver takes it for one once no more input
    follows: here at once, with the keys before it)."""
    from textual._xterm_parser import XTermParser

    parser = XTermParser()
    for event in [*parser.feed(data), *parser.feed("")]:
        pilot.app.post_message(event)
    await pilot.pause()


async def run_own_binding(widget: Widget, key: str) -> bool:
    """Run ``widget``'s own (non-priority) binding of ``key``, as the app would once the
    key reached it, with the user's keymap applied; True if one ran.

    Textual runs a focused widget's bindings only after the key has bubbled from the widget
    up to the app, behind the keys already queued on the widget: in an ``Input``, the
    letters of a burst (``ctrl+u`` then text, read from the terminal at once) are typed
    first and ``ctrl+u`` then deletes them (Textual 8.2.8, ``App._check_bindings`` called
    from ``App._on_key``; Textualize/textual#6605). The app checks the priority bindings
    before the key reaches the widget, and the focused widget is the first namespace of
    its chain, so running them here changes which key runs when, never what it runs.
    """
    chain = widget.screen._modal_binding_chain
    if not chain or chain[0][0] is not widget:
        return False
    for binding in chain[0][1].key_to_bindings.get(key, ()):
        if not binding.priority and await widget.app.run_action(binding.action, widget):
            return True
    return False


async def press_queued(pilot: Pilot[Any], *keys: str, timeout_s: float = 30.0) -> None:
    """Press ``keys`` (as ``Pilot.press`` takes them) one after the other, as fast as the
    app handles them: a path typed, an arrow held down.

    ``Pilot.press`` waits for the process to be idle after each key (at least 40 ms a key:
    seconds for a path typed, or a map scrolled line by line). Here each key is sent once
    the one before has gone all the way: to the focused widget, then up through its
    parents to the app, whose bindings run last (an arrow's action, a backspace in an
    input). A key that opens a dialog or moves the focus goes through ``Pilot.press``:
    the widget the next key reaches is only known once the app is idle again.

    Raises:
        TimeoutError: A key was not handled within ``timeout_s`` [s].
    """
    from textual import events

    app = pilot.app
    for key in keys:
        name, character = _key_and_character(key)
        app.post_message(events.Key(name, character))
        await asyncio.wait_for(_key_handled(app), timeout_s)
    await pilot.pause()


async def _key_handled(app: App[Any]) -> None:
    """Return once the key the app was sent last has been handled where it can be: by the
    app (priority bindings), the focused widget, each of its parents (a key one of them
    does not stop goes on up) and the app again (bindings)."""
    handled = asyncio.Event()

    def after(nodes: list[Any]) -> None:
        # Queued behind the key on nodes[0]: runs once that node has passed it on.
        if nodes:
            nodes[0].call_later(after, nodes[1:])
        else:
            handled.set()

    def forwarded() -> None:
        after(list((app.focused or app.screen).ancestors_with_self))

    app.call_later(forwarded)
    await handled.wait()


def _key_and_character(key: str) -> tuple[str, str | None]:
    """The key event ``Pilot.press`` makes of ``key`` (a character or a key's name)."""
    from textual.keys import REPLACED_KEYS, _character_to_key, _get_unicode_name_from_key

    if len(key) == 1 and not key.isalnum():
        key = _character_to_key(key)
    try:
        return key, unicodedata.lookup(_get_unicode_name_from_key(REPLACED_KEYS.get(key, key)))
    except KeyError:
        return key, key if len(key) == 1 else None
