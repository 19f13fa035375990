"""What the explorer's screens, widgets and palette ask of the app, as an interface: they
depend on this protocol, ``FabricApp`` implements it, and nothing imports the app module
back."""

from __future__ import annotations

from typing import TYPE_CHECKING, ClassVar, Protocol

if TYPE_CHECKING:
    from textual.worker import Worker

    from fabricui.hwdb.catalog import Catalog
    from fabricui.plugins import PluginHost
    from fabricui.services.loaded import LoadedFabric
    from fabricui.services.requests import TopologyRequest


class Explorer(Protocol):
    """The app as its views see it."""

    VIEW_TITLES: ClassVar[dict[str, str]]
    """Human name of each view."""
    data: LoadedFabric | None
    """The loaded fabric (None until the first load finishes)."""
    catalog: Catalog | None
    """The hardware database (None until loaded)."""
    host: PluginHost | None
    """The plugin host."""

    def update_titles(self) -> None:
        """Redraw the title bar (view, topology, the view's own state)."""

    def worker_state_changed(self, event: Worker.StateChanged) -> None:
        """Report a view's worker that failed, and plugins it found broken."""

    def load_topology(self, request: TopologyRequest | str, remember: bool = True) -> None:
        """Load another topology (in a worker); ``remember`` keeps the place left."""

    def switch_view(self, view: str) -> None:
        """Show a view by id."""

    def take_option(self, name: str) -> str | None:
        """A view option given at start, used once."""

    def peek_option(self, name: str) -> str | None:
        """A view option given at start that no view has taken yet (left for it)."""

    def take_initial_pair(self) -> tuple[str | None, str | None] | None:
        """The command line's ``--src``/``--dst``, once."""

    def take_initial_size(self) -> int | None:
        """The command line's message size, once."""

    def action_pick_topology(self) -> None:
        """Pick a reference topology from a list."""

    def action_ask_nodes(self) -> None:
        """Ask for a node count."""

    def action_ask_what_if(self) -> None:
        """Ask for what-if link figures."""

    def action_save_snapshot(self) -> None:
        """Save the current view."""

    def action_help(self) -> None:
        """Show every key."""

    def action_command_line(self) -> None:
        """Ask for a command (``:``) and run it."""

    def remember(self, **values: object) -> None:
        """Keep values (topology, nodes, message_size, theme) for the next session."""

    def remember_visit(self) -> None:
        """Keep the place shown now in the history, before a selection changes."""

    def action_back(self) -> None:
        """Go back to the place shown before."""
