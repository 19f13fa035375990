"""The ``:`` command line: what the keys do, typed as words (``topology gb200-nvl72``,
``src luna-0016.g7``, ``model llama3-405b``), checked before it runs, with the command and
its argument completed as you type (right arrow takes the suggestion)."""

from __future__ import annotations

import contextlib
import dataclasses
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Callable, ClassVar, cast

from textual.binding import Binding, BindingType
from textual.suggester import Suggester
from textual.widgets import Input

from fabricui.errors import FabricError, unknown_id_message
from fabricui.services.layouts import LayoutChoice, parse_layout
from fabricui.services.requests import check_group
from fabricui.tui.glyphs import glyphs
from fabricui.tui.screens.base import ViewScreen
from fabricui.tui.screens.prompt import PromptModal
from fabricui.units import parse_message_size
from fabricui.vocabulary import GROUPS, OPS, VIEWS, op_name

if TYPE_CHECKING:
    from textual.app import App

    from fabricui.tui.explorer import Explorer


@dataclass(frozen=True)
class Command:
    """One command of the command line."""

    name: str
    """What is typed first."""
    argument: str
    """What follows (``ID``), or empty for none."""
    help: str
    """What it does."""
    view: str = ""
    """The view it acts on (shown first), or empty."""


#: Every command, in the order the help lists them.
COMMANDS = (
    Command("topology", "ID|FILE", "open a topology (t)", ""),
    Command("nodes", "N", "rescale the topology to N nodes (N)", ""),
    Command("view", "NAME", "show a view: topology, pyramid, collectives, strategies, plugins"),
    Command("find", "NAME", "jump to a host or GPU by name or part of one (/)", "topology"),
    Command("src", "GPU", "route from this GPU (s)", "topology"),
    Command("dst", "GPU", "route to this GPU (d)", "topology"),
    Command("size", "SIZE", "message size of the path: 64K, 1G (m)", "topology"),
    Command("op", "OP", "collective operation (o)", "collectives"),
    Command(
        "group",
        "GROUP",
        "group of GPUs: all, host, domain, per-node, or gpus:N, the first N (g)",
        "collectives",
    ),
    Command("sizes", "A:B", "size range, or one size (e)", "collectives"),
    Command("model", "ID", "model of the strategies view (m)", "strategies"),
    Command("layout", "LAYOUT", "layout such as 'tp8 pp2 fsdp' (l)", "strategies"),
    Command("search", "", "rank every layout (f)", "strategies"),
    Command("save", "", "save this view as a report, SVG or text (S)", ""),
    Command("back", "", "back to what was shown before (Backspace, Esc)", ""),
    Command("help", "", "every key (?)", ""),
    Command("quit", "", "leave fabricui (q)", ""),
)
BY_NAME = {command.name: command for command in COMMANDS}
#: Other words for commands.
ALIASES = {"t": "topology", "q": "quit", "go": "find", "goto": "find", "?": "help"}


def split(text: str) -> tuple[Command | None, str, str]:
    """(command, argument, the word typed) of a command line."""
    word, _, argument = text.strip().partition(" ")
    name = ALIASES.get(word.lower(), word.lower())
    return BY_NAME.get(name), argument.strip(), word


def _choices(app: Explorer, command: Command) -> list[str]:
    """What the argument of ``command`` may be, for completion."""
    catalog = app.catalog
    if command.name == "topology" and catalog is not None:
        return sorted(catalog.topologies)
    if command.name == "view":
        return list(VIEWS)
    if command.name == "model" and catalog is not None:
        return sorted(catalog.models)
    if command.name == "op":
        return list(OPS)
    if command.name == "group":
        return list(GROUPS)
    if command.name == "find" and app.data is not None:
        return [name for name in app.data.fabric.host_names if name]
    return []


def check(app: Explorer, text: str) -> str | None:
    """Why a command line cannot run (one line), or None."""
    command, argument, word = split(text)
    if not word:
        return "type a command (help lists them)"
    if command is None:
        return unknown_id_message("command", word, [c.name for c in COMMANDS])
    if command.argument and not argument:
        return f"{command.name} {command.argument}: {command.help}"
    if not command.argument and argument:
        return f"{command.name} takes nothing after it"
    validate = _VALIDATORS.get(command.name)
    try:
        return validate(app, argument) if validate is not None else None
    except FabricError as exc:
        return exc.message


def _check_topology(app: Explorer, argument: str) -> str | None:
    catalog = app.catalog
    if catalog is None or argument in catalog.topologies or Path(argument).expanduser().is_file():
        return None
    if catalog.spelled("topologies", argument) is not None:
        return None  # the id in other case or separators
    return unknown_id_message("topology", argument, catalog.topologies) + "; or a YAML file path"


def _check_choice(name: str) -> Callable[[Explorer, str], str | None]:
    def validate(app: Explorer, argument: str) -> str | None:
        command = BY_NAME[name]
        choices = _choices(app, command)
        if name == "op":
            return None if op_name(argument) else unknown_id_message("operation", argument, choices)
        if argument in choices or not choices:
            return None
        return unknown_id_message(name, argument, choices)

    return validate


def _check_group(app: Explorer, argument: str) -> str | None:
    """A named group, or ``gpus:N``: the first N GPUs of the fabric shown."""
    try:
        check_group(argument)
        if app.data is not None:
            app.data.group_ranks(argument)
    except FabricError as exc:
        return exc.message
    return None


def _check_model(app: Explorer, argument: str) -> str | None:
    """A model's id or its name as written (``Llama-3-70B``)."""
    catalog = app.catalog
    if catalog is None or catalog.spelled("models", argument) is not None:
        return None
    return unknown_id_message("model", argument, catalog.models)


def _check_gpu(finder: str) -> Callable[[Explorer, str], str | None]:
    def validate(app: Explorer, argument: str) -> str | None:
        if app.data is not None:
            getattr(app.data, finder)(argument)
        return None

    return validate


def _check_nodes(app: Explorer, argument: str) -> str | None:
    if not argument.isdigit() or int(argument) < 1:
        return f"a whole number of nodes from 1, not {argument!r}"
    if app.data is not None and app.catalog is not None:  # as N checks it
        from fabricui.services.session import check_request

        check_request(dataclasses.replace(app.data.request, nodes=int(argument)), app.catalog)
    return None


def _check_size(app: Explorer, argument: str) -> str | None:
    parse_message_size(argument, "size")
    return None


def _check_sizes(app: Explorer, argument: str) -> str | None:
    from fabricui.tui.screens.collectives import check_range

    return check_range(argument)


def _check_layout(app: Explorer, argument: str) -> str | None:
    """A layout the plan would refuse, as ``l`` refuses it (``tp64`` on 32 GPUs, ``ep8`` on
    a dense model), for the model the strategies view plans; its words alone while no
    fabric is loaded."""
    from fabricui.tui.screens.strategies import check_layout_text

    if app.data is None:
        return check_layout_text(argument)
    model_id, layout = layout_asked(app, argument)
    app.data.check_layout(model_id, layout)
    return None


def layout_asked(app: Explorer, argument: str) -> tuple[str, LayoutChoice]:
    """The model planned and the layout ``:layout ARGUMENT`` asks for now: its words on the
    layout they change (``planned_layout``).

    Raises:
        FabricError: Words that are not a layout.
    """
    from fabricui.tui.screens.strategies import planned_layout

    model_id, current = planned_layout(app)
    return model_id, parse_layout(argument, current)


_VALIDATORS: dict[str, Callable[[Explorer, str], str | None]] = {
    "topology": _check_topology,
    "nodes": _check_nodes,
    "view": _check_choice("view"),
    "find": _check_gpu("find_gpu"),
    "src": _check_gpu("parse_gpu"),
    "dst": _check_gpu("parse_gpu"),
    "size": _check_size,
    "op": _check_choice("op"),
    "group": _check_group,
    "sizes": _check_sizes,
    "model": _check_model,
    "layout": _check_layout,
}


def run_command(app: Explorer, text: str, layout: LayoutChoice | None = None) -> None:
    """Run a checked command line (``check`` returned None for it).

    Args:
        app: The explorer.
        text: The command line.
        layout: For ``layout``, the layout its check built (``CommandLineModal.checked_layout``):
            the one run, though what its words build on may have changed since (the
            strategies view's default layout computed in between). None: built now.
    """
    command, argument, _word = split(text)
    if command is None:
        return
    name = command.name
    if name == "back":
        app.action_back()
        return
    if name == "help":
        app.action_help()
        return
    textual_app = cast("App[None]", app)
    if name == "quit":
        textual_app.exit()
        return
    if name == "save":
        app.action_save_snapshot()
        return
    if name == "topology":
        app.load_topology(argument)
        return
    if name == "nodes" and app.data is not None:
        app.load_topology(dataclasses.replace(app.data.request, nodes=int(argument)))
        return
    if name == "view":
        app.switch_view(argument)
        return
    view = command.view
    app.switch_view(view)

    def act() -> None:
        screen = textual_app.screen
        if not isinstance(screen, ViewScreen) or view != screen.VIEW or app.data is None:
            return
        if name == "find":
            screen.jump_to(app.data.find_gpu(argument))  # type: ignore[attr-defined]
            return
        if name == "search":
            screen.action_search()  # type: ignore[attr-defined]
            return
        app.remember_visit()
        state = dict(screen.view_state())
        if name in ("src", "dst"):
            gpu = app.data.fabric.gpu_name(app.data.parse_gpu(argument))
            if name == "dst" and state.get("src") == gpu:  # as d on the source says
                textual_app.notify("source and destination are the same GPU", severity="warning")
                return
            if name == "src" and state.get("dst") == gpu:
                state.pop("dst")  # as s on the destination: the next d chooses another
            state[name] = gpu
        elif name == "size":
            state["message_size"] = str(parse_message_size(argument, "size"))
        elif name == "model":
            state[name] = app.data.model(argument).id
        elif name == "layout":  # as l: the words change the layout shown
            state[name] = (layout or layout_asked(app, argument)[1]).label()
        else:
            state[name] = argument
        screen.restore_state(state)
        app.update_titles()  # the header names what the view now shows

    textual_app.call_after_refresh(act)


class CommandSuggester(Suggester):
    """Completes the command word, then its argument (topology and model ids, views,
    operations, groups, host names)."""

    def __init__(self, app: Explorer) -> None:
        super().__init__(use_cache=False, case_sensitive=True)
        self.fabric_app = app
        """The app whose catalog and fabric hold the choices."""

    async def get_suggestion(self, value: str) -> str | None:
        """The first command or argument that starts with what is typed."""
        word, space, argument = value.partition(" ")
        if not space:
            names = [c.name for c in COMMANDS]
            return next((f"{n}" for n in names if n.startswith(word) and word), None)
        command = BY_NAME.get(ALIASES.get(word, word))
        if command is None or not argument:
            return None
        for choice in _choices(self.fabric_app, command):
            if choice.startswith(argument):
                return f"{word} {choice}"
        return None


class CommandLineModal(PromptModal):
    """The ``:`` prompt: one command, checked before it closes, completed as you type."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding(
            "tab",
            "complete",
            "Complete",
            priority=True,  # before Textual's focus change: the prompt has one field
            show=False,
            id="command.complete",
            tooltip="Take the completion shown (as the right arrow does)",
        ),
    ]
    """Tab takes the completion (escape and enter come from ``PromptModal``)."""

    def __init__(self, app: Explorer) -> None:
        names = f" {glyphs().dot} ".join(
            f"{c.name} {c.argument}".strip() for c in COMMANDS if c.name not in ("help", "quit")
        )
        super().__init__(":", "", names, self._check)
        self.fabric_app = app
        """The explorer the commands run in."""
        self.suggester = CommandSuggester(app)
        """Completion of commands and their arguments."""
        self.checked_layout: LayoutChoice | None = None
        """The layout a ``layout`` line accepted asks for, as its check built it: the run
        plans this one (what the words build on can change before the run)."""

    def _check(self, text: str) -> str | None:
        """``check``, keeping the layout a ``layout`` line it accepts asks for: built once,
        then checked, so the layout checked is the one run (the check runs off the event
        loop, while what the words build on may change: the strategies view's default
        layout computed meanwhile)."""
        self.checked_layout = None
        app = self.fabric_app
        data = app.data
        command, argument, _word = split(text)
        if command is None or command.name != "layout" or not argument or data is None:
            error = check(app, text)
            if error is None and command is not None and command.name == "layout":
                with contextlib.suppress(FabricError):  # a bad --layout: said when shown
                    self.checked_layout = layout_asked(app, argument)[1]
            return error
        try:  # as ``_check_layout``, on the layout built here
            model_id, layout = layout_asked(app, argument)
            data.check_layout(model_id, layout)
        except FabricError as exc:
            return exc.message
        self.checked_layout = layout
        return None

    def on_mount(self) -> None:
        """Complete as you type (the right arrow or tab takes the suggestion)."""
        self.query_one(Input).suggester = self.suggester

    def action_complete(self) -> None:
        """Complete the text typed before tab, once it is typed.

        Tab is a priority binding, run when the app reads the key: the letters read with it
        in one burst (``vie`` tab over a slow link) are still queued on the field. Queued
        behind them, the completion runs in turn, as when typed one key at a time."""
        field = self.query_one(Input)
        field.call_later(self._complete, field)

    async def _complete(self, field: Input) -> None:
        """Take the completion of the text as it is now, at the end of the text (as the
        right arrow takes the one shown): the one shown is computed in the background
        after each change, and may still be for the text before the last letters."""
        suggestion = await self.suggester.get_suggestion(field.value)
        if suggestion and suggestion != field.value:
            field.value = suggestion
        field.cursor_position = len(field.value)
