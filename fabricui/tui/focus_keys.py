"""Keys typed after tab, or after a key opening or closing a dialog, in one burst go where
that key sent the focus.

A terminal hands over the keys typed faster than the screen answers in one read (typing
over a slow SSH link, ``tmux send-keys``). Textual's app hands each key it reads to the
widget focused then, but runs a key's binding only once that key has come up from the
focused widget to the app: the keys read after it were already queued on the widget
focused before it. Tab (shift+tab) moves the focus there: in the measured-run dialog
``abc tab def`` typed ``abcdef`` in the path line; in the save dialog ``tab tab enter`` (to
Save, to Cancel, press) pressed enter in the file name, which saved. A key opening a dialog
(``m``, ``S``, ``:``) or closing one (enter, escape) changes the screen there: ``m abc``
typed ``abc`` into the view, not the dialog ``m`` opened.

``FocusKeyGate`` holds the keys (and pastes) the app reads while a key that may move the
focus or change the screen (one bound on the screen shown, or any but a character) is
handled: until that key has gone all the way (the focused widget, each of its parents,
the app; then once more, behind what it set off there: an enter's submit closing its
dialog), and, when it changed the screen, until the new screen is mounted and has its
focus. Then it hands them on as the app would have: each reaches the widget focused by
then, as when typed one key at a time. A key read alone (typed at a human pace) goes on at
once; a key held goes on within ``HOLD_MAX_S``.
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

#: Keys whose binding moves the focus (every screen's tab and shift+tab): like every key,
#: they hold the keys read after them until handled.
FOCUS_KEYS = frozenset({"tab", "shift+tab"})

#: Longest the keys after a key are held [s]: a key the app has not handled by then (nor
#: the screen it opened mounted) goes on, to the widget focused then, so that no key is
#: held for good.
HOLD_MAX_S = 1.0

#: Times a key is followed up the widgets before the keys after it go on: the key itself,
#: then what its handling posted on the way (``Input.Submitted``, which closes a dialog).
ROUNDS = 2


class FocusKeyGate:
    """Holds the keys an app reads while it handles the key before them.

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
        """Keys and pastes read while a key was handled, oldest first."""
        self.waiting = False
        """A key has been passed on and is not handled yet."""
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
            self._time_out()
        else:
            await self._pass_on(event)
        return True

    def _time_out(self) -> None:
        """Release the keys held within ``HOLD_MAX_S`` of now (the timer is started only
        while keys are held: a key read alone holds nothing)."""
        if self._timer is None:
            self._timer = self.app.set_timer(
                HOLD_MAX_S, partial(self.app.call_later, self._release, self._wait, False)
            )

    async def _pass_on(self, event: events.Key | events.Paste) -> None:
        """Textual's handling; a key then holds the keys after it."""
        focused: DOMNode = self.app.focused or self.app.screen
        nodes = list(focused.ancestors_with_self)
        screen = self.app.screen
        holds = isinstance(event, events.Key) and self._may_change_focus(event)
        await self.pass_on(event)
        if holds:
            self.waiting = True
            self._wait += 1
            await self._after(self._wait, nodes, nodes, ROUNDS, screen)

    def _may_change_focus(self, event: events.Key) -> bool:
        """Whether ``event`` may move the focus or change the screen, so that the keys
        after it wait for it: a key bound on the screen shown (``m``, ``:``, enter, escape,
        tab), or any other than a character (``down`` from a picker's filter to its list).
        A letter typed in a field goes on at once, with the letters after it: holding each
        would cost every letter of a burst a round of the event loop."""
        if event.key in FOCUS_KEYS or not event.is_printable:
            return True
        bound = self.app.screen.active_bindings
        return any(key in bound for key in event.aliases)

    async def _after(
        self, wait: int, nodes: list[DOMNode], chain: list[DOMNode], rounds: int, screen: DOMNode
    ) -> None:
        """Follow the key up ``nodes`` (the widget focused when it was read up to the app):
        queued on ``nodes[0]`` behind the key, this runs once that node has handled it and
        passed it on (to the next node, where it queues itself again). Past the last node,
        the app, whose bindings run last (tab's, ``m``'s), go up ``chain`` again for the
        next of ``rounds``, then see whether the screen changed. A node that takes no more
        messages (closing) is skipped."""
        while nodes:
            node, nodes = nodes[0], nodes[1:]
            if node.call_later(self._after, wait, nodes, chain, rounds, screen):
                return
        if rounds > 1:
            await self._after(wait, chain, chain, rounds - 1, screen)
        else:
            await self._settled(wait, screen)

    async def _settled(self, wait: int, screen: DOMNode) -> None:
        """Release the keys held once the screen the key left shown (``screen``, unless it
        changed) has handled what was sent to it when shown (mounted, its widgets composed)
        and the app has given it the focus (``Widget.focus`` waits for the app's turn)."""
        current = self.app.screen
        changed = current is not screen and wait == self._wait
        # queued on the new screen behind its mounting, then on the app behind its focus
        if not changed or not current.call_later(self.app.call_later, self._settled, wait, current):
            await self._release(wait)

    async def _release(self, wait: int, hold: bool = True) -> None:
        """Pass on the keys held, in order, until one holds the keys after it again; all
        of them at once (Textual's way) when the wait ran out (``hold`` False): an app
        that slow would hold each key of a burst as long again."""
        if wait != self._wait or not self.waiting:
            return
        self.waiting = False
        if self._timer is not None:
            self._timer.stop()
            self._timer = None
        while self.held and not self.waiting:
            event = self.held.popleft()
            await (self._pass_on(event) if hold else self.pass_on(event))
        if self.held:  # behind the key just passed on
            self._time_out()
