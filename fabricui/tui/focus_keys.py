"""Keys typed after tab in one burst go where tab moved the focus.

A terminal hands over the keys typed faster than the screen answers in one read (typing
over a slow SSH link, ``tmux send-keys``). Textual's app hands each key it reads to the
widget focused then, but moves the focus for tab (shift+tab) only once that key has come
up from the focused widget to the app's bindings: the keys read after tab were already
queued on the widget tab leaves. In the measured-run dialog ``abc tab def`` typed
``abcdef`` in the path line; in the save dialog ``tab tab enter`` (to Save, to Cancel,
press) pressed enter in the file name, which saved.

``FocusKeyGate`` holds the keys (and pastes) the app reads after tab or shift+tab until
that key has gone all the way (the focused widget, each of its parents, the app), then
hands them on as the app would have: each reaches the widget focused by then. Only a
focus key holds the keys after it, for as long as the app takes to handle it.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Awaitable
from functools import partial
from typing import TYPE_CHECKING, Any, Callable

from textual import events

if TYPE_CHECKING:
    from textual.app import App
    from textual.dom import DOMNode
    from textual.timer import Timer

#: Keys whose binding moves the focus (every screen's tab and shift+tab).
FOCUS_KEYS = frozenset({"tab", "shift+tab"})

#: Longest the keys after a focus key are held [s]: a key the app has not handled by then
#: goes on (to the widget focused then), so that no key is held for good.
HOLD_MAX_S = 1.0


class FocusKeyGate:
    """Holds the keys an app reads after a focus key until the app has handled it.

    The app hands each event it is sent to ``take`` and passes the event on as Textual
    does only when ``take`` returns False.
    """

    def __init__(self, app: App[Any], pass_on: Callable[[events.Event], Awaitable[None]]) -> None:
        self.app = app
        """The app the keys are sent to."""
        self.pass_on = pass_on
        """Textual's own handling of a key the app reads (``App.on_event``: the priority
        bindings, then the focused widget)."""
        self.held: deque[events.Key | events.Paste] = deque()
        """Keys and pastes read while a focus key was handled, oldest first."""
        self.waiting = False
        """A focus key has been passed on and is not handled yet."""
        self._wait = 0
        """Which wait is the current one (a timeout of an older wait does nothing)."""
        self._timer: Timer | None = None

    async def take(self, event: events.Event) -> bool:
        """Pass on, or hold, a key or paste the terminal sent; False for any other event
        (and for a key coming up from a widget), which the app handles itself."""
        if not isinstance(event, (events.Key, events.Paste)) or event.is_forwarded:
            return False
        if self.waiting:
            self.held.append(event)
        else:
            await self._pass_on(event)
        return True

    async def _pass_on(self, event: events.Key | events.Paste) -> None:
        """Textual's handling; a focus key then holds the keys after it."""
        await self.pass_on(event)
        if isinstance(event, events.Key) and event.key in FOCUS_KEYS:
            self.waiting = True
            self._wait += 1
            self._timer = self.app.set_timer(
                HOLD_MAX_S, partial(self.app.call_later, self._release, self._wait)
            )
            focused: DOMNode = self.app.focused or self.app.screen
            await self._after(self._wait, list(focused.ancestors_with_self))

    async def _after(self, wait: int, nodes: list[DOMNode]) -> None:
        """Follow the focus key up ``nodes`` (the focused widget up to the app): queued on
        ``nodes[0]`` behind the key, this runs once that node has handled it and passed it
        on (to the next node, where it queues itself again). Past the last node, the app,
        whose bindings run last (tab's), release the keys held. A node that takes no more
        messages (closing) is skipped."""
        while nodes:
            node, nodes = nodes[0], nodes[1:]
            if node.call_later(self._after, wait, nodes):
                return
        await self._release(wait)

    async def _release(self, wait: int) -> None:
        """Pass on the keys held, in order, until the next focus key."""
        if wait != self._wait or not self.waiting:
            return
        self.waiting = False
        if self._timer is not None:
            self._timer.stop()
            self._timer = None
        while self.held and not self.waiting:
            await self._pass_on(self.held.popleft())
