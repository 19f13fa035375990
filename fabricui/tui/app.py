"""The explorer app: five views as modes, a topology loaded in a worker, snapshots, help."""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import sys
from importlib import import_module
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, ClassVar

from textual import events, on, work
from textual.app import App, ScreenStackError
from textual.binding import Binding, BindingType
from textual.command import CommandPalette, SearchIcon
from textual.message import Message
from textual.scrollbar import ScrollBar, ScrollBarRender
from textual.worker import Worker, WorkerState

from fabricui.errors import FabricError, unknown_id_message
from fabricui.files import write_text
from fabricui.render.markdown import render_markdown
from fabricui.services.compare import compare
from fabricui.services.requests import LaunchRequest, SnapshotTarget, TopologyRequest, WhatIf
from fabricui.services.settings import load_settings, load_state, save_state
from fabricui.tui.commands import FabricCommands
from fabricui.tui.data import REGIMES
from fabricui.tui.focus_keys import FocusKeyGate
from fabricui.tui.glyphs import glyphs, locale_is_utf8, use_ascii
from fabricui.tui.history import History
from fabricui.tui.offscreen import fabric_diagram, render_app
from fabricui.tui.offscreen import settle as settle
from fabricui.tui.screens.base import ViewScreen
from fabricui.tui.terminal import terminal_stream
from fabricui.tui.textual_private import build_mode, driver_drawing_on, reuse_parsed_css
from fabricui.tui.textual_private import screen_text as screen_text
from fabricui.vocabulary import DEFAULT_TOPOLOGY as DEFAULT_TOPOLOGY
from fabricui.vocabulary import VIEW_TITLES, VIEWS

if TYPE_CHECKING:
    from textual.driver import Driver

    from fabricui.hwdb.catalog import Catalog
    from fabricui.plugins import PluginHost
    from fabricui.services.loaded import LoadedFabric
    from fabricui.tui.offscreen import Snapshot
    from fabricui.tui.screens.help import Section
    from fabricui.tui.terminal import TerminalGuard

#: Each view: id (key order 1-5) -> (module under fabricui.tui.screens, screen class).
VIEW_SCREENS = {view: (view, f"{view.capitalize()}Screen") for view in VIEWS}

_VIEW = Binding.Group("views", compact=True)

#: How often the warm-up looks again while something else runs [s].
WARM_UP_WAIT_S = 0.3
#: Pause between two views built ahead, so that keys and the first one's widgets are
#: handled in between [s].
WARM_UP_STEP_S = 0.05
#: Largest fabric whose views' figures are computed ahead [GPUs]. Pricing holds the
#: fabric's router, so a path asked meanwhile waits for it: about 0.05 s at 1,024 GPUs,
#: 0.25 s at 8,192, 0.9 s at 32,768 (an all-reduce sweep of 32 sizes). Larger fabrics'
#: views compute their figures once shown, as they would without a warm-up.
FIGURES_AHEAD_MAX_GPUS = 8192


def screen_class(view: str) -> type[ViewScreen]:
    """The screen class of a view, imported on first use: start-up pays for the first only."""
    module, name = VIEW_SCREENS[view]
    return getattr(import_module(f"fabricui.tui.screens.{module}"), name)


def _screen_factory(view: str) -> Callable[[], ViewScreen]:
    return lambda: screen_class(view)()


def _tagged(tag: str | None, description: str) -> str:
    """A topology's description, after its regime's tag when it has one (a column of its
    own would be empty on most rows and take the description's width)."""
    return f"[{tag}] {description}" if tag else description


def _ascii_scrollbars(on: bool) -> None:
    """Scrollbars drawn with ASCII (Textual draws them with block characters), or not."""

    class AsciiScrollBarRender(ScrollBarRender):
        # Not "#": the heat map's full link is "#" (the path's devices "o").
        VERTICAL_BARS: ClassVar[list[str]] = ["H"] * 7 + [" "]
        HORIZONTAL_BARS: ClassVar[list[str]] = ["="] * 7 + [" "]

    ScrollBar.renderer = AsciiScrollBarRender if on else ScrollBarRender


class AsciiPalette(CommandPalette):
    """Textual's command palette in ASCII (``--ascii``): ``>`` for its magnifier emoji,
    ``...`` for the ellipsis of its placeholder; app.tcss draws its rules."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(placeholder="Search for commands...", **kwargs)

    def on_mount(self) -> None:
        """The icon, once composed."""
        self.query_one(SearchIcon).icon = ">"


def binding_ids(app: FabricApp) -> set[str]:
    """Every binding id a keymap may remap: the app's, each view's, the map's, the modals'."""
    from fabricui.tui.screens.prompt import PromptModal
    from fabricui.tui.widgets.topology_map import TopologyMap

    bindings = [*app.BINDINGS, *TopologyMap.BINDINGS, *PromptModal.BINDINGS]
    for view in VIEWS:
        bindings += screen_class(view).BINDINGS
    return {b.id for b in bindings if isinstance(b, Binding) and b.id}


class FabricApp(App[None]):
    """The fabricui explorer.

    Five views (``VIEWS``), each a mode with its own screen; a topology is resolved and
    built in a worker after the first paint, then each view asks the engine for its
    figures in workers of its own, so the event loop never waits for numpy.
    """

    TITLE = "fabricui"
    CSS_PATH = "app.tcss"
    COMMANDS = App.COMMANDS | {FabricCommands}
    ENABLE_COMMAND_PALETTE = True

    MODES: ClassVar[dict[str, Callable[[], ViewScreen]]] = {  # type: ignore[assignment]
        view: _screen_factory(view) for view in VIEWS
    }
    """One screen per view, built (and its module imported) when first shown."""

    VIEW_TITLES: ClassVar[dict[str, str]] = VIEW_TITLES
    """Human name of each view."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding(
            "1",
            "switch_view('topology')",
            "Topology",
            id="view.topology",
            tooltip="Fabric map: s/d route a path",
            group=_VIEW,
        ),
        Binding(
            "2",
            "switch_view('pyramid')",
            "Pyramid",
            id="view.pyramid",
            tooltip="Bandwidth pyramid",
            group=_VIEW,
        ),
        Binding(
            "3",
            "switch_view('collectives')",
            "Collectives",
            id="view.collectives",
            tooltip="Collectives per size",
            group=_VIEW,
        ),
        Binding(
            "4",
            "switch_view('strategies')",
            "Strategies",
            id="view.strategies",
            tooltip="Which parallelism survives",
            group=_VIEW,
        ),
        Binding(
            "5",
            "switch_view('plugins')",
            "Plugins",
            id="view.plugins",
            tooltip="Loaded plugins",
            group=_VIEW,
        ),
        Binding(
            "t",
            "pick_topology",
            "Topology",
            id="topology.pick",
            tooltip="Switch to another reference topology",
        ),
        Binding(
            "N",
            "ask_nodes",
            "Nodes",
            show=False,
            id="topology.nodes",
            tooltip="Rescale the topology to N nodes",
        ),
        Binding(
            "w",
            "ask_what_if",
            "What-if",
            show=False,
            id="topology.what_if",
            tooltip="Set NIC Gb/s and scale-up links per GPU",
        ),
        Binding(
            "S,ctrl+s",
            "save_snapshot",
            "Save",
            id="snapshot.save",
            tooltip="Save this view as a Markdown report, SVG or text (you choose where)",
            key_display="S",
        ),
        Binding(
            "c",
            "compare",
            "Compare",
            id="app.compare",
            tooltip="Compare with the fabric as built (--health), the previous or another one",
        ),
        Binding(
            "y",
            "copy",
            "Copy",
            id="app.copy",
            tooltip="Copy the path, an equivalent command or JSON (OSC 52)",
        ),
        Binding(
            "question_mark",
            "help",
            "Help",
            id="app.help",
            tooltip="Every key of every view",
            key_display="?",
        ),
        Binding("q", "quit", "Quit", id="app.quit", tooltip="Leave fabricui"),
        Binding(
            "backspace,escape",
            "back",
            "Back",
            show=False,
            id="app.back",
            tooltip="Back to the view, topology or selection shown before",
            key_display="esc/bksp",
        ),
        Binding(
            "colon",
            "command_line",
            "Command",
            show=False,
            id="app.command",
            tooltip="Type a command: topology ID, view NAME, src GPU, model ID, find NAME ...",
            key_display=":",
        ),
        Binding("j", "press('down')", "Down", show=False, id="app.down", tooltip="As down arrow"),
        Binding("k", "press('up')", "Up", show=False, id="app.up", tooltip="As up arrow"),
    ]
    """Keys that work in every view."""

    class FabricLoaded(Message):
        """A topology is resolved and built."""

        def __init__(self, data: LoadedFabric) -> None:
            self.data = data
            """The loaded fabric and its catalog."""
            super().__init__()

    def __init__(
        self,
        launch: LaunchRequest | None = None,
        catalog: Catalog | None = None,
        host: PluginHost | None = None,
        ascii_only: bool | None = None,
    ) -> None:
        launch = launch or LaunchRequest()

        if ascii_only is None:
            ascii_only = launch.ascii if launch.ascii is not None else not locale_is_utf8()
        self.ascii_only = ascii_only
        """Draw with plain ASCII (``--ascii``, or a locale that is not UTF-8)."""
        use_ascii(self.ascii_only)
        self.view = launch.view if launch.view in VIEWS else "topology"
        """The view shown first."""
        # Start in the first view's mode: switching from Textual's default screen on mount
        # would parse every stylesheet a second time before the first frame.
        self.DEFAULT_MODE = self.view  # type: ignore[misc]
        super().__init__()
        reuse_parsed_css(self)  # each view shown first parses only its own CSS
        self.request = launch.topology_or_default
        """The topology asked for (id or YAML path, nodes, what-if): the one loading or
        shown."""
        self.catalog = catalog
        """The hardware database (loaded in the first worker when not given)."""
        self.host = host
        """The plugin host (the process-wide one when not given)."""
        self.data: LoadedFabric | None = None
        """The loaded fabric (None until the first load finishes)."""
        self.title_args = ""
        """The topology arguments in the sub-title (``h100-ib-cluster --nodes 2``): what the
        title bar shortens first when the line is too narrow, so that the view's name and
        the markers after them (``(as it is)``) stay whole."""
        self._initial_pair = (launch.src, launch.dst) if (launch.src or launch.dst) else None
        self._initial_size = launch.message_size
        self._options = dict(launch.options)
        self._cache: dict[TopologyRequest, LoadedFabric] = {}
        self._plugin_failures_shown: set[tuple[str, str]] = set()
        self._calibration_warnings_shown: set[str] = set()
        self._settings_problem = self._apply_user_keymap()
        self.failures: list[str] = []
        """Why each view computation that failed did (snapshots refuse a half-drawn view)."""
        self.interactive = False
        """A real session (the CLI sets it): the theme, topology and message size are
        remembered for the next run. Tests and snapshots run without."""
        self.terminal_guard: TerminalGuard | None = None
        """Restores the terminal on a signal (the CLI sets it before the app starts); told
        once the app is mounted, so that a signal then exits like ``q``."""
        self._remembered: dict[str, object] = {}
        self.previous: LoadedFabric | None = None
        """The fabric shown before the current one (what ``c`` compares with first)."""
        self.fallback: TopologyRequest | None = None
        """What to load instead when the first load fails (a remembered topology that is
        gone reopens the default one)."""
        self.history = History()
        """The views, topologies and selections visited (Esc and Backspace go back)."""
        self.warm_up = False
        """Build the views not shown yet while the explorer is idle, once the first fabric
        is drawn, so that the first switch to each is as quick as coming back to it (the
        CLI sets it; a snapshot or a test shows the views it asks for)."""
        self._warm_up_started = False
        self._figured_ahead: set[str] = set()
        """Views whose figures the warm-up computed (or began to) ahead of their first frame."""
        self._focus_keys = FocusKeyGate(self, super().on_event)
        """Holds the keys read after a key until it is handled: the focus moved by tab, the
        dialog opened or closed mounted and focused (``focus_keys``)."""

    async def on_event(self, event: events.Event) -> None:
        """Textual's, but the keys read after a key in one burst wait for it to be handled
        (the focus moved by tab, a dialog opened or closed), then go to the widget focused
        by then (``focus_keys``)."""
        if not await self._focus_keys.take(event):
            await super().on_event(event)

    # --- start-up --------------------------------------------------------------------------

    def get_driver_class(self) -> type[Driver]:
        """Textual's driver, drawing on standard output when standard error is not the
        terminal (``fabricui 2>e.log`` draws on the screen, not into the log)."""
        driver_class = super().get_driver_class()

        stream = terminal_stream()
        if stream is None or stream is sys.__stderr__ or driver_class.__name__ != "LinuxDriver":
            return driver_class

        return driver_drawing_on(stream)

    def action_command_palette(self) -> None:
        """Textual's command palette; with ``--ascii``, its icon and placeholder in ASCII
        (a magnifier emoji and an ellipsis are what a vt100 cannot draw)."""
        if not self.ascii_only:
            super().action_command_palette()
            return
        if self.use_command_palette and not isinstance(self.screen, CommandPalette):
            self.push_screen(AsciiPalette(id="--command-palette"))

    def get_key_display(self, binding: Binding) -> str:
        """A key as the key bars show it; with ``--ascii`` a key Textual shows with a
        Unicode symbol (enter's return arrow, the arrows) by its name."""
        shown = super().get_key_display(binding)
        if self.ascii_only and not shown.isascii():
            return binding.key.split(",")[0].strip()
        return shown

    def on_mount(self) -> None:
        """Load the fabric once the first view has painted (a loading thread started
        earlier would compete with the first frame for the interpreter)."""
        self.update_titles()
        if self.ascii_only:
            self.add_class("-ascii")
        _ascii_scrollbars(self.ascii_only)
        if self.terminal_guard is not None:
            self.terminal_guard.ready(asyncio.get_running_loop())
        if self.interactive:
            self._restore_theme()
        if self._settings_problem:
            self.notify(self._settings_problem, title="settings", severity="warning", timeout=10)
        self.call_after_refresh(self.load_topology, self.request)

    def clear_selection(self) -> None:
        """Textual's, once a screen is up. The first view's filter bar (an ``Input``) clears
        the selection as it mounts, which on Python 3.13 is before the screen stack holds
        that view: Textual then raises ``ScreenStackError`` where it means "no screen"."""
        with contextlib.suppress(ScreenStackError):
            super().clear_selection()

    def start_with(self, data: LoadedFabric) -> None:
        """Draw ``data``, a fabric loaded already for the topology asked for, without
        loading it again (a view saved off-screen: the figures the explorer computed on it
        are not computed twice)."""
        self._cache[data.request] = data

    def first_load_pending(self) -> bool:
        """Whether the first fabric is still to come: asked for after the first refresh, so
        for a moment neither loaded nor with a worker running (``offscreen.settle`` waits)."""
        return self.data is None and not self.failures

    def _restore_theme(self) -> None:
        """Start with the settings file's theme, else the one used last; remember changes."""
        with contextlib.suppress(Exception):  # a bad settings file was reported already
            self._remembered = load_state()
            wanted = load_settings().theme or self._remembered.get("theme")
            if isinstance(wanted, str) and wanted in self.available_themes:
                self.theme = wanted
        self.watch(self, "theme", lambda theme: self.remember(theme=theme), init=False)

    def remember(self, **values: object) -> None:
        """Keep ``values`` (topology, nodes, message_size, theme) for the next session."""
        if not self.interactive:
            return

        self._remembered.update(values)
        save_state(self._remembered)

    def _apply_user_keymap(self) -> str | None:
        """Remap keys from the settings file's ``keymap`` (binding id -> keys); returns a
        problem to show once the screen is up (a bad file never stops the explorer)."""
        try:
            settings = load_settings()
        except FabricError as exc:
            return exc.message
        if not settings.keymap:
            return None
        known = binding_ids(self)
        unknown = [b for b in settings.keymap if b not in known]
        self.set_keymap({b: keys for b, keys in settings.keymap.items() if b in known})
        if unknown:
            return f"{settings.origin}: keymap: " + unknown_id_message(
                "binding id", unknown[0], known
            )
        return None

    def take_initial_pair(self) -> tuple[str | None, str | None] | None:
        """The command line's ``--src``/``--dst``, once (the first fabric only)."""
        pair, self._initial_pair = self._initial_pair, None
        return pair

    def take_option(self, name: str) -> str | None:
        """A view option given at start (``op``, ``sizes``, ``model`` ...), used once."""
        return self._options.pop(name, None)

    def peek_option(self, name: str) -> str | None:
        """A view option given at start that no view has taken yet, left for it (what a
        command line checks against before the view is shown)."""
        return self._options.get(name)

    def take_initial_size(self) -> int | None:
        """The command line's message size, once."""
        size, self._initial_size = self._initial_size, None
        return size

    @property
    def topology(self) -> str:
        """The topology asked for last (id or YAML path)."""
        return self.request.topology

    def load_topology(self, request: TopologyRequest | str, remember: bool = True) -> None:
        """Resolve and build a topology in a worker (cached per request).

        Args:
            request: The topology, node count and what-if (a bare id: that topology).
            remember: Keep the place being left in the history (a user's switch, which
                Backspace undoes); False when going back or reopening.
        """
        if isinstance(request, str):
            request = TopologyRequest(request)
        shown = self.data
        if remember and shown is not None and shown.request != request:
            self.remember_visit()
            self.notify(
                f"opening {request.topology}; backspace goes back to {shown.label}",
                title="topology",
                timeout=4,
            )
        self.request = request
        cached = self._cache.get(request)
        if cached is not None:
            self.post_message(self.FabricLoaded(cached))
            return
        self._load(request)

    @work(
        thread=True, exclusive=True, group="load", exit_on_error=False, description="load topology"
    )
    def _load(self, request: TopologyRequest) -> None:
        """Load a topology off the event loop.

        Importing ``services.loaded`` imports every package whose ``__init__`` imports its
        own modules (``test_import_hygiene`` checks it). The views' workers run on a loaded
        fabric, so what they import first is a module of a loaded package, in an import
        graph without cycles (import-linter's contract): Python's per-module import locks
        make that safe from several threads at once.
        """
        from fabricui.services.loaded import LoadedFabric

        if self.host is None:
            from fabricui.plugins import get_host

            self.host = get_host()
        if self.catalog is None:
            from fabricui.services.session import load_catalog

            self.catalog = load_catalog(host=self.host)
        data = LoadedFabric.load(request, self.catalog, self.host)
        self.post_message(self.FabricLoaded(data))

    @on(FabricLoaded)
    def fabric_loaded(self, message: FabricLoaded) -> None:
        """Make the new fabric current and let the visible view redraw."""
        data = message.data
        self._cache[data.request] = data
        if self.data is not None and self.data.request != data.request:
            self.previous = self.data
        self.data = data
        self.request = data.request
        if data.what_if is None:
            self.remember(topology=data.topology, nodes=data.nodes)
        for screen in self.screen_stack:
            if isinstance(screen, ViewScreen):
                screen.sync()
        self.update_titles()
        self._warn_plugin_failures()
        self._warn_calibration(data)
        if self.warm_up and not self._warm_up_started:
            self._warm_up_started = True
            self.set_timer(WARM_UP_WAIT_S, self._warm_up_step)

    def _warn_plugin_failures(self) -> None:
        """Notify plugins that failed since the last notice: at load, or later when the
        engine called one that raised, hung or returned garbage."""
        if self.host is None:
            return
        failures = [
            f for f in self.host.failures if (f.name, f.error) not in self._plugin_failures_shown
        ]
        self._plugin_failures_shown.update((f.name, f.error) for f in failures)
        if failures:
            names = ", ".join(dict.fromkeys(f.name for f in failures))
            self.notify(
                f"plugin(s) skipped: {names}. See the plugins view (5).",
                title="plugins",
                severity="warning",
            )

    def _warn_calibration(self, data: LoadedFabric) -> None:
        """Say once per fabric what the command line says on stderr when the
        ``--calibration`` overlay was fitted on another topology than the one shown, or
        calibrates links it does not use (its figures still apply)."""
        warning = data.calibration_warning
        if warning is None or warning in self._calibration_warnings_shown:
            return
        self._calibration_warnings_shown.add(warning)
        self.notify(warning, title="calibration", severity="warning", timeout=10)

    @on(Worker.StateChanged)
    def worker_state_changed(self, event: Worker.StateChanged) -> None:
        """Turn a failed worker into a message: an error modal for loads, else a notification;
        after any worker, tell about plugins it found broken."""
        worker = event.worker
        if event.state in (WorkerState.SUCCESS, WorkerState.ERROR):
            self._warn_plugin_failures()
        if worker.group == "warm-up" and event.state == WorkerState.SUCCESS:
            self._warm_up_step()
        if event.state != WorkerState.ERROR:
            return

        error = worker.error
        if isinstance(error, FabricError):
            text = error.message
        else:
            self.log.error(f"{worker.description} failed: {error!r}")
            text = f"{type(error).__name__}: {error}"
        self.failures.append(text)
        if worker.group == "load" and self.fallback is not None and self.data is None:
            fallback, self.fallback = self.fallback, None
            self.notify(f"could not reopen {self.topology} ({text}); opened {fallback.topology}")
            self.load_topology(fallback)
        elif worker.group == "load":
            from fabricui.tui.screens.error import ErrorModal

            self.push_screen(ErrorModal(f"Cannot load {self.topology}", text))
        else:
            self.notify(text, title=f"{worker.description} failed", severity="error", timeout=8)

    # --- views built ahead -----------------------------------------------------------------

    def _warm_up_step(self) -> None:
        """Build one view not shown yet, when nothing else runs (the view shown computing,
        a load, a save): its module imported in a worker first, then its screen built and
        mounted, hidden, as the first switch to it would (``warm_up``).

        A view shown for the first time otherwise takes up to about 0.75 s: its module,
        Textual's stylesheet refreshed, its widgets mounted and styled. Built ahead, it draws
        nothing until shown (``ViewScreen.sync``); once every view is built, the figures each
        asks first are computed, one view a step (``ViewScreen.figures_ahead``), and the
        fabric keeps them: shown, the view draws them in its first frames, where it said
        "computing..." for 0.05-0.5 s."""
        if any(worker.is_running for worker in self.workers):
            self.set_timer(WARM_UP_WAIT_S, self._warm_up_step)
            return
        pending = [view for view in VIEWS if not self.has_screen(view)]
        if not pending:
            self._figures_ahead_step()
            return
        modules = [f"fabricui.tui.screens.{VIEW_SCREENS[view][0]}" for view in pending]
        if not all(module in sys.modules for module in modules):
            self._import_views(pending)  # its end takes the next step
            return
        build_mode(self, pending[0])
        self.set_timer(WARM_UP_STEP_S, self._warm_up_step)

    def _figures_ahead_step(self) -> None:
        """Compute the figures of one view built ahead that has not drawn the fabric shown
        (in a worker, whose end takes the next step); none on a fabric of more than
        ``FIGURES_AHEAD_MAX_GPUS``."""
        data = self.data
        if data is None or data.fabric.n_gpus > FIGURES_AHEAD_MAX_GPUS:
            return
        for view in VIEWS:
            if view in self._figured_ahead:
                continue
            self._figured_ahead.add(view)
            screen = self.get_screen_stack(view)[0]
            if isinstance(screen, ViewScreen) and screen.data is None:
                self._figures_ahead(screen, data)
                return

    @work(thread=True, group="warm-up", exit_on_error=False, description="figures ahead")
    def _figures_ahead(self, screen: ViewScreen, data: LoadedFabric) -> None:
        """``screen.figures_ahead(data)``; a failure is the view's to say once shown."""
        try:
            screen.figures_ahead(data)
        except FabricError:
            pass
        except Exception as exc:  # the view's own worker meets it again and reports it
            self.log.error(f"figures ahead of the {screen.VIEW} view: {exc!r}")

    @work(thread=True, group="warm-up", exit_on_error=False, description="import views")
    def _import_views(self, views: list[str]) -> None:
        """Import the views' modules off the event loop (Python's per-module import locks
        make a switch to a view being imported wait for it, not import it twice)."""
        for view in views:
            screen_class(view)

    def has_screen(self, view: str) -> bool:
        """Whether the view's screen is built (shown once, or built ahead)."""
        try:
            return bool(self.get_screen_stack(view))
        except KeyError:
            return False

    # --- titles ----------------------------------------------------------------------------

    def update_titles(self) -> None:
        """Header: app name, view, topology and the view's own state."""
        screen = self.screen if isinstance(self.screen, ViewScreen) else None
        view = self.current_mode
        parts = [self.VIEW_TITLES.get(view, view)]
        self.title_args = ""
        if self.data is not None:
            parts.append(self.data.label)
            self.title_args = TopologyRequest(self.data.spec.id, self.data.nodes).label()
        if screen is not None and screen.status_text():
            parts.append(screen.status_text())
        self.sub_title = f" {glyphs().dot} ".join(parts)

    # --- actions ---------------------------------------------------------------------------

    def action_switch_view(self, view: str) -> None:
        """Show a view (1-5)."""
        self.switch_view(view)

    def switch_view(self, view: str) -> None:
        """Show a view by id (the one left is kept in the history)."""
        if view not in VIEWS:
            self.notify(f"unknown view {view!r} (one of {', '.join(VIEWS)})", severity="error")
            return
        if view != self.current_mode:
            self.remember_visit()
        self._show_mode(view)
        self.update_titles()

    def _show_mode(self, view: str) -> None:
        """Switch to ``view``; a view built ahead draws the fabric first, still hidden, so
        that its first frame has the figures computed ahead (``figures_ahead``), not
        "computing..." for a frame."""
        if view != self.current_mode and self.has_screen(view):
            screen = self.get_screen_stack(view)[0]
            if isinstance(screen, ViewScreen):
                screen.sync()
        self.switch_mode(view)

    # --- history ---------------------------------------------------------------------------

    def remember_visit(self) -> None:
        """Keep the place shown now (view, topology, the view's selections) in the history,
        before a view, topology or selection changes."""
        if self.data is not None:
            self.history.push(self.current_launch())

    def action_back(self) -> None:  # type: ignore[override]  # Textual runs either kind
        """Go back to the place shown before (Esc and Backspace); replaces Textual's
        ``App.action_back`` (a coroutine), which Textual awaits or calls alike."""
        place = self.history.pop()
        if place is None:
            self.notify("nothing to go back to", timeout=2)
            return
        self.restore(place)

    def restore(self, place: LaunchRequest) -> None:
        """Show ``place`` again: its topology (reloaded when another one is shown), its
        view and the view's selections."""
        state = dict(place.options)
        if place.src:
            state["src"] = place.src
        if place.dst:
            state["dst"] = place.dst
        if place.message_size:
            state["message_size"] = str(place.message_size)
        topology = place.topology_or_default
        if topology != self.request:
            # The views take these when the fabric arrives, as from the command line.
            self._initial_pair = (place.src, place.dst) if (place.src or place.dst) else None
            self._initial_size = place.message_size
            self._options = dict(place.options)
            self.load_topology(topology, remember=False)
            self.switch_mode(place.view)
        else:
            self._show_mode(place.view)
            screen = self.screen
            if isinstance(screen, ViewScreen):
                screen.restore_state(state)
        self.update_titles()

    def action_press(self, key: str) -> None:
        """Act as if ``key`` was pressed (``j`` and ``k`` are down and up arrows)."""
        self.simulate_key(key)

    def action_command_line(self) -> None:
        """Ask for a command (``:``) and run it."""
        from fabricui.tui.command_line import CommandLineModal, run_command

        modal = CommandLineModal(self)

        def done(text: str | None) -> None:
            if text:
                run_command(self, text, modal.checked_layout)

        self.push_screen(modal, done)

    def action_pick_topology(self) -> None:
        """Pick a reference topology from a list."""
        if self.catalog is None:
            self.notify("the hardware database is still loading", severity="warning")
            return
        regimes = {topology: regime for regime, topology in REGIMES}
        choices = [
            (
                spec.id,
                (spec.id, f"{spec.n_gpus} GPUs", _tagged(regimes.get(spec.id), spec.description)),
            )
            for spec in sorted(self.catalog.topologies.values(), key=lambda s: (s.n_gpus, s.id))
        ]

        current = self.data.spec.id if self.data else None

        def done(topology: str | None) -> None:
            if topology and topology != current:  # the one on screen: nothing to open
                self.load_topology(topology)

        from fabricui.tui.screens.picker import PickerModal

        self.push_screen(
            PickerModal("Topology (four typical regimes are tagged)", choices, current), done
        )

    def action_ask_nodes(self) -> None:
        """Ask for a node count and rebuild the topology with it."""
        data, catalog = self.data, self.catalog
        if data is None or catalog is None:
            return

        def check(text: str) -> str | None:
            from fabricui.services.session import check_request

            if not text.isdigit():
                return f"a whole number of nodes from 1, not {text!r}"
            try:  # as loading would refuse it: too many GPUs, a count the builder refuses
                check_request(dataclasses.replace(data.request, nodes=int(text)), catalog)
            except FabricError as exc:
                return exc.message
            return None

        def done(text: str | None) -> None:
            if text:
                self.load_topology(dataclasses.replace(data.request, nodes=int(text)))

        from fabricui.tui.screens.prompt import PromptModal

        per_node = data.fabric.gpus_per_node
        example = max(1, 1024 // per_node)
        hint = f"e.g. {example} for {example * per_node:,} GPUs ({per_node} per node)"
        self.push_screen(
            PromptModal(f"Nodes of {data.spec.id}", str(data.fabric.nodes), hint, check), done
        )

    def action_ask_what_if(self) -> None:
        """Ask for NIC Gb/s and scale-up links per GPU; rebuild the fabric with them."""
        data = self.data
        if data is None:
            return

        def parse(text: str) -> WhatIf | None:
            values: dict[str, float] = {}
            for word in text.lower().replace(",", " ").split():
                key, _, value = word.partition("=")
                if key not in ("nic", "links") or not value:
                    raise ValueError(f"use nic=GBPS and/or links=N (got {word!r})")
                if key == "links" and not value.isdigit():  # never 2 for 2.5, unsaid
                    raise ValueError(f"links=N takes a whole number of links (got {word!r})")
                try:
                    values[key] = float(value)
                except ValueError:
                    raise ValueError(f"nic=GBPS takes a number of Gb/s (got {word!r})") from None
            if not values:
                return None
            links = values.get("links")
            return WhatIf(values.get("nic"), int(links) if links is not None else None)

        def check(text: str) -> str | None:
            from fabricui.services.session import check_request

            try:  # as loading would refuse it: the builder's limits too (links the GPU lacks)
                check_request(dataclasses.replace(data.request, what_if=parse(text)), data.catalog)
            except (ValueError, FabricError) as exc:
                return getattr(exc, "message", str(exc))
            return None

        def done(text: str | None) -> None:
            if text is not None:
                self.load_topology(dataclasses.replace(data.request, what_if=parse(text)))

        net = data.spec.net
        current = f"nic={net.gbps:g}" if net is not None and net.gbps else ""
        from fabricui.tui.screens.prompt import PromptModal

        self.push_screen(
            PromptModal(
                "What-if links (empty resets)",
                current,
                "nic=GBPS per NIC port, links=N scale-up links per GPU (NVSwitch) or pair (mesh)",
                check,
            ),
            done,
        )

    def current_launch(self) -> LaunchRequest:
        """The explorer's current state as a launch request: topology, view and the
        view's choices (what a report, a snapshot or a copied command shows again)."""
        screen = self.screen if isinstance(self.screen, ViewScreen) else None
        state = dict(screen.view_state()) if screen is not None else {}
        size = state.pop("message_size", None)
        return LaunchRequest(
            topology=self.request,
            view=self.current_mode,
            src=state.pop("src", None),
            dst=state.pop("dst", None),
            message_size=int(size) if size else None,
            options=tuple(state.items()),
        )

    def action_save_snapshot(self) -> None:
        """Ask for a format and a file, then save the whole view (not only what fits)."""
        from fabricui.tui.screens.save import SaveModal

        if self.data is None and any(w.group == "load" and w.is_running for w in self.workers):
            # The save worker would import the services while the loading worker does; a
            # worker that starts once a fabric is loaded finds them imported.
            self.notify("the topology is still loading: save once it is drawn", title="save")
            return
        launch = self.current_launch()

        def done(choice: tuple[str, Path, bool] | None) -> None:
            if choice is not None:
                self.notify(f"saving {choice[1].name}...", title="save", timeout=2)
                self._save(launch, *choice)

        self.push_screen(SaveModal(launch.view, Path.cwd()), done)

    @work(thread=True, group="save", exit_on_error=False, description="save")
    def _save(self, launch: LaunchRequest, fmt: str, path: Path, overwrite: bool = False) -> None:
        """Render off-screen at a size that holds the whole view, then write atomically
        (over an existing file only when the user said so: ``overwrite``)."""

        def render_view(
            launch: LaunchRequest,
            catalog: Catalog | None,
            host: PluginHost | None,
            size: tuple[int, int],
        ) -> Snapshot:
            app = make_app(catalog=catalog, host=host, launch=launch, ascii_only=self.ascii_only)
            if loaded is not None:  # drawn with the figures this explorer computed on it
                app.start_with(loaded)
            return render_app(app, launch.view, size, ("svg",) if fmt == "svg" else ("text",))

        width, height = self.size
        whole = (max(width, 160), max(height, 60))
        writes = []
        loaded = self._cache.get(launch.topology_or_default)
        if fmt == "md":
            from fabricui.services.reports import build_report

            image = SnapshotTarget(launch.view, "md", path).image_path
            report = build_report(
                launch, self.catalog, self.host, image.name if image else None, loaded
            )
            if image is not None:
                writes.append(
                    (image, fabric_diagram(launch.topology_or_default, self.catalog, self.host))
                )
            writes.append((path, render_markdown(report)))
        else:
            snapshot = render_view(launch, self.catalog, self.host, whole)
            writes.append((path, snapshot.svg if fmt == "svg" else snapshot.text))
        for target, content in writes:
            write_text(target, content, force=overwrite)
        names = " and ".join(str(target) for target, _ in reversed(writes))
        self.call_from_thread(self.notify, f"saved {names}", title="save")
        if self.is_web:  # `fabricui serve`: the file is on the server; the browser gets it too
            self.call_from_thread(self.deliver_saved, [target for target, _ in writes])

    def deliver_saved(self, paths: list[Path]) -> None:
        """Send saved files to the browser as downloads (in a browser session only: in a
        terminal the file is already where the user chose)."""
        for path in paths:
            self.deliver_text(path, save_filename=path.name)

    def action_compare(self) -> None:
        """Compare the current fabric with itself as built (with ``--health``), the previous
        one (before a what-if) or another topology: path, all-reduce and pyramid figures
        side by side."""
        data, catalog = self.data, self.catalog
        if data is None or catalog is None:
            return
        choices: list[tuple[str, str | tuple[str, ...]]] = []
        if data.request.health:  # what the conditions --health read cost
            built = dataclasses.replace(data.request, health=()).label()
            choices.append(("@built", f"the same fabric as built: {built}, without --health"))
        if self.previous is not None:
            choices.append(("@previous", f"the previous fabric: {self.previous.label}"))
        choices += [
            (spec.id, (spec.id, f"{spec.n_gpus} GPUs", spec.description))
            for spec in sorted(catalog.topologies.values(), key=lambda s: (s.n_gpus, s.id))
            if spec.id != data.spec.id
        ]

        def done(choice: str | None) -> None:
            if choice:
                self._compare(data, choice, self.current_launch())

        from fabricui.tui.screens.picker import PickerModal

        self.push_screen(PickerModal(f"Compare {data.label} with", choices), done)

    @work(thread=True, group="compare", exclusive=True, exit_on_error=False, description="compare")
    def _compare(self, current: LoadedFabric, choice: str, launch: LaunchRequest) -> None:
        from fabricui.services.loaded import LoadedFabric
        from fabricui.tui.screens.compare import CompareModal

        if choice == "@previous" and self.previous is not None:
            before = self.previous
        elif choice == "@built":
            request = dataclasses.replace(current.request, health=())
            before = self._cache.get(request) or LoadedFabric.load(request, self.catalog, self.host)
        else:
            before = LoadedFabric.load(TopologyRequest(choice), self.catalog, self.host)
        figures = compare(before, current, launch.src, launch.dst)
        # The modal is made on the app's thread: on Python 3.9 a screen's asyncio objects
        # bind to the current event loop when made, and a worker thread has none.

        def show() -> None:
            self.push_screen(CompareModal(figures, before.label, current.label))

        self.call_from_thread(show)

    def action_copy(self) -> None:
        """Copy the path, an equivalent command or JSON to the clipboard (OSC 52)."""
        from fabricui.services.reports import reproduce_command

        screen = self.screen if isinstance(self.screen, ViewScreen) else None
        launch = self.current_launch()
        items = list(screen.copy_items()) if screen is not None else []
        items.append(
            (
                "command: fabricui snapshot ... (this view's report)",
                reproduce_command(launch, launch.view),
            )
        )
        texts = dict(items)

        def done(label: str | None) -> None:
            if label is not None:
                self.copy_to_clipboard(texts[label])
                self.notify(
                    f"copied {label.split(':')[0]} ({len(texts[label])} characters) with OSC 52; "
                    "a terminal without OSC 52 ignores it: press S to save instead",
                    title="copy",
                )

        from fabricui.tui.screens.picker import PickerModal

        self.push_screen(PickerModal("Copy to the clipboard", [(k, k) for k in texts]), done)

    def help_sections(self) -> list[Section]:
        """Every binding of the app, the views and the map, by area."""
        from fabricui.tui.widgets.topology_map import TopologyMap

        palette = Binding(
            "ctrl+p",
            "command_palette",
            "Palette",
            tooltip="Search every command (views, topologies, actions)",
        )
        return [
            ("everywhere", [*self.BINDINGS, palette]),
            ("topology view", [*screen_class("topology").BINDINGS, *TopologyMap.BINDINGS]),
            ("collectives view", screen_class("collectives").BINDINGS),
            ("strategies view", screen_class("strategies").BINDINGS),
        ]

    def action_help(self) -> None:
        """Show every key."""
        from fabricui.tui.screens.help import HelpModal

        if not isinstance(self.screen, HelpModal):
            self.push_screen(HelpModal(self.help_sections()))


def make_app(
    topology: str = DEFAULT_TOPOLOGY,
    nodes: int | None = None,
    src: str | None = None,
    dst: str | None = None,
    view: str = "topology",
    catalog: Catalog | None = None,
    host: PluginHost | None = None,
    size_bytes: int | None = None,
    options: dict[str, str] | None = None,
    launch: LaunchRequest | None = None,
    ascii_only: bool | None = None,
) -> FabricApp:
    """Build the explorer (the CLI, snapshots and tests all start here).

    Args:
        topology: Built-in topology id or a topology YAML path.
        nodes: Optional node count.
        src: Source GPU id shown first (``n0.g0`` or a rank).
        dst: Destination GPU id shown first.
        view: View shown first (``VIEWS``).
        catalog: A catalog to use instead of loading the built-in database and plugins.
        host: A plugin host to use instead of the process-wide one.
        size_bytes: Message size of the path panel [bytes].
        options: View options taken when each view first draws: ``op``, ``group``,
            ``sizes`` (collectives), ``model``, ``layout``, ``search`` (strategies).
        launch: All of the above as one request (``explore`` and ``snapshot`` build it);
            when given, the separate arguments are ignored.
        ascii_only: Draw with plain ASCII (default: when the locale is not UTF-8).

    Returns:
        The app, not yet running.
    """
    if launch is None:
        launch = LaunchRequest(
            TopologyRequest(topology, nodes),
            view,
            src,
            dst,
            size_bytes,
            tuple((options or {}).items()),
        )
    return FabricApp(launch, catalog, host, ascii_only)
