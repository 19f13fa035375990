"""The key bar: the active screen's key hints drawn as one line of text.

Why not Textual's ``Footer``: it mounts a widget per key and recomposes them whenever the
bindings change (every focus move), which was the largest part of the explorer's start-up.
One widget that renders one line keeps start-up close to an empty Textual app's; clicks and
hover still work, and on a narrow terminal the hints that do not fit are dropped from the
middle so Save, Help and Quit stay visible.

Every screen with keys has its own bar, dialogs too: a dialog's bar covers the view's, so
the keys shown while a dialog is open are the dialog's. Keys a dialog's widget handles
itself (enter in a field, tab between fields) are not shown bindings; a dialog names them
in a ``key_hints()`` method that returns them as bindings (``WidgetKeys``).
"""

from __future__ import annotations

from dataclasses import dataclass
from itertools import groupby
from typing import TYPE_CHECKING, ClassVar, Protocol, runtime_checkable

from rich.text import Text
from textual.reactive import reactive
from textual.widget import Widget

if TYPE_CHECKING:
    from collections.abc import Callable

    from textual import events
    from textual.binding import Binding
    from textual.screen import Screen

#: Actions whose hints are kept when the line is too narrow for every hint.
KEEP_ACTIONS = frozenset({"save_snapshot", "help", "quit"})


@runtime_checkable
class WidgetKeys(Protocol):
    """A screen (a dialog) whose widgets handle keys the bar should show: enter in its
    name field saves, tab goes to the next field. Textual's widgets bind those keys without
    showing them, and what enter does depends on the dialog."""

    def key_hints(self) -> list[Binding]:
        """The keys the focused widget handles, as bindings to show (key and
        description; the action is not run: the key press is)."""
        ...


@dataclass(frozen=True)
class Hint:
    """One piece of the bar: a key (or a group's keys) and what it does."""

    keys: tuple[tuple[str, str], ...]
    """(as shown, key a click presses) per key: ``(("q", "q"),)``, ``(("+", "plus"), ...)``."""
    description: str
    """What they do."""
    enabled: bool
    """False when the action cannot run now (drawn dim)."""
    keep: bool
    """Kept when the bar is too narrow."""

    @property
    def width(self) -> int:
        """Columns taken: `` keys `` then ``description `` (no description: keys only)."""
        shown = sum(len(display) + 1 for display, _key in self.keys) + 1
        return shown + (len(self.description) + 1 if self.description else 0)


def _first_key(binding: Binding) -> str:
    return binding.key.split(",")[0].strip()


def hints_for(screen: Screen, key_display: Callable[[Binding], str]) -> list[Hint]:
    """The shown bindings of ``screen``, one hint per action, grouped bindings combined;
    first the keys its focused widget handles, when the screen names them (``WidgetKeys``).

    ``key_display`` is the app's ``get_key_display`` (so ``question_mark`` reads ``?``).
    """
    by_action: dict[str, tuple[Binding, bool]] = {}
    for _node, binding, enabled, _tooltip in screen.active_bindings.values():
        if binding.show and binding.action not in by_action:
            by_action[binding.action] = (binding, enabled)
    hints: list[Hint] = []
    if isinstance(screen, WidgetKeys):
        hints += [
            Hint(((key_display(b), _first_key(b)),), b.description, enabled=True, keep=True)
            for b in screen.key_hints()
        ]
    for group, items in groupby(by_action.values(), key=lambda item: item[0].group):
        run = list(items)
        if group is not None and len(run) > 1:
            keys = tuple((key_display(b), _first_key(b)) for b, _ in run)
            enabled = any(e for _, e in run)
            keep = any(b.action in KEEP_ACTIONS for b, _ in run)
            hints.append(Hint(keys, group.description, enabled, keep))
        else:
            hints.extend(
                Hint(((key_display(b), _first_key(b)),), b.description, e, b.action in KEEP_ACTIONS)
                for b, e in run
            )
    palette = screen.active_bindings.get(screen.app.COMMAND_PALETTE_BINDING)
    if screen.app.ENABLE_COMMAND_PALETTE and palette is not None:
        _node, binding, enabled, _tooltip = palette
        keys = ((key_display(binding), _first_key(binding)),)
        hints.append(Hint(keys, "palette", enabled, keep=False))
    return hints


def fit(hints: list[Hint], width: int) -> list[Hint]:
    """Drop hints (last first, never a kept one) until the rest fit in ``width`` columns."""
    shown = list(hints)
    while sum(h.width for h in shown) > width:
        droppable = [i for i, h in enumerate(shown) if not h.keep]
        if not droppable:
            break
        del shown[droppable[-1]]
    return shown


class KeyBar(Widget):
    """One line of key hints for the active screen; click a hint to press its key."""

    COMPONENT_CLASSES: ClassVar[set[str]] = {
        "key-bar--key",
        "key-bar--description",
        "key-bar--disabled",
        "key-bar--hover",
    }

    DEFAULT_CSS = """
    KeyBar {
        dock: bottom;
        height: 1;
        background: $footer-background;
        color: $footer-foreground;
    }
    KeyBar > .key-bar--key {
        color: $footer-key-foreground;
        background: $footer-key-background;
        text-style: bold;
    }
    KeyBar > .key-bar--description {
        color: $footer-description-foreground;
        background: $footer-description-background;
    }
    KeyBar > .key-bar--disabled { text-opacity: 50%; color: $text-disabled; }
    KeyBar > .key-bar--hover { background: $block-hover-background; }
    """

    hover: reactive[int] = reactive(-1)
    """Index of the hint under the mouse, or -1."""

    def __init__(self, *, id: str | None = None) -> None:  # noqa: A002
        super().__init__(id=id)
        self._spans: list[tuple[int, int, int, str]] = []
        """(first column, end column, hint index, key) of each clickable piece."""

    def on_mount(self) -> None:
        """Redraw when the screen's bindings change (focus moved, a check_action flipped)
        and when a screen opens over it or closes."""
        self.screen.bindings_updated_signal.subscribe(self, self._bindings_changed)
        self.app.screen_change_signal.subscribe(self, self._screen_changed)

    def on_unmount(self) -> None:
        """Stop listening to a screen that is going away."""
        self.screen.bindings_updated_signal.unsubscribe(self)
        self.app.screen_change_signal.unsubscribe(self)

    def _bindings_changed(self, screen: Screen) -> None:
        if screen is self.shown_screen:
            self.refresh()

    def _screen_changed(self, screen: Screen) -> None:
        """A screen opened or closed: follow the keys of one open over this bar's."""
        if screen is not self.screen and self.screen in self.app.screen_stack:
            signal = screen.bindings_updated_signal
            signal.unsubscribe(self)  # once per screen, however often it comes back on top
            signal.subscribe(self, self._bindings_changed)
        self.refresh()

    @property
    def shown_screen(self) -> Screen:
        """The screen whose keys the bar shows: its own, or the one open over it. A dialog
        draws a key bar of its own over this one; a screen without one (Textual's command
        palette) has its keys shown here: the view's do nothing while it is open."""
        own, top = self.screen, self.app.screen
        return top if top is not own and own in self.app.screen_stack else own

    def hints(self) -> list[Hint]:
        """The hints drawn at the current width (tests read these)."""
        return fit(hints_for(self.shown_screen, self.app.get_key_display), self.size.width)

    def render(self) -> Text:
        """The hints, left to right, remembering where each one is for clicks."""
        key_style = self.get_component_rich_style("key-bar--key", partial=True)
        desc_style = self.get_component_rich_style("key-bar--description", partial=True)
        disabled = self.get_component_rich_style("key-bar--disabled", partial=True)
        hover = self.get_component_rich_style("key-bar--hover", partial=True)
        text = Text(no_wrap=True, overflow="crop", end="")
        self._spans = []
        for index, hint in enumerate(self.hints()):
            keys, description = key_style, desc_style
            if not hint.enabled:
                keys, description = keys + disabled, description + disabled
            if index == self.hover:
                keys, description = keys + hover, description + hover
            text.append(" ", keys)
            for display, key in hint.keys:
                start = text.cell_len
                text.append(f"{display} ", keys)
                self._spans.append((start, text.cell_len, index, key))
            if hint.description:
                start = text.cell_len
                text.append(f"{hint.description} ", description)
                self._spans.append((start, text.cell_len, index, hint.keys[0][1]))
        return text

    def _span_at(self, x: int) -> tuple[int, str] | None:
        """(hint index, key) of the hint drawn at column ``x``, if any."""
        for start, end, index, key in self._spans:
            if start - 1 <= x < end:
                return index, key
        return None

    def on_mouse_move(self, event: events.MouseMove) -> None:
        """Highlight the hint under the mouse."""
        span = self._span_at(event.x)
        self.hover = span[0] if span else -1

    def on_leave(self) -> None:
        """No hint is under the mouse any more."""
        self.hover = -1

    def on_click(self, event: events.Click) -> None:
        """Press the clicked hint's key."""
        span = self._span_at(event.x)
        if span is not None:
            event.stop()
            self.app.simulate_key(span[1])
