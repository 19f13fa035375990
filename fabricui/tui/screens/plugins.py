"""The plugins view: what is loaded, what each plugin contributes, and what failed and why."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, ClassVar

from rich.table import Table
from rich.text import Text
from textual.app import ComposeResult
from textual.binding import BindingType
from textual.containers import VerticalScroll
from textual.widgets import Static

from fabricui.tui.screens.base import ViewScreen
from fabricui.tui.widgets.key_bar import KeyBar
from fabricui.tui.widgets.title_bar import TitleBar

if TYPE_CHECKING:
    from fabricui.tui.data import FabricData

#: Status colours.
STATUS_STYLE = {"ok": "green", "failed": "bold red", "blocked": "yellow"}

#: hwdb record kinds shown as a count (``NICs: 4``) so a row stays a few lines high; the
#: names are in ``fabricui plugins --all`` and ``fabricui hwdb list``.
COUNTED = {
    "nics": "NICs",
    "switches": "switches",
    "gpus": "GPUs",
    "models": "models",
    "topologies": "topologies",
}
#: Contributions left out of the table (a plugin's hwdb directory path).
HIDDEN = ("hwdb_paths",)


def contributions(contributes: dict[str, list[str]]) -> str:
    """``kind: a, b; NICs: 4`` for one plugin's contributions, sorted by kind."""
    parts = []
    for kind, keys in sorted(contributes.items()):
        if kind in HIDDEN:
            continue
        shown = str(len(keys)) if kind in COUNTED else ", ".join(keys)
        parts.append(f"{COUNTED.get(kind, kind)}: {shown}")
    return "; ".join(parts)


def plugin_table(plugins: list[dict[str, Any]]) -> Table:
    """One row per plugin: name, version, source, status and contributions."""
    table = Table(box=None, padding=(0, 1), pad_edge=False, expand=True)
    table.add_column("plugin", no_wrap=True)
    table.add_column("version", no_wrap=True)
    table.add_column("source", no_wrap=True)
    table.add_column("status", no_wrap=True)
    table.add_column("contributes", ratio=1)
    for info in plugins:
        contributes = contributions(info["contributes"])
        status = info["status"]
        table.add_row(
            info["name"],
            info["version"] or "-",
            info["source"],
            Text(status, style=STATUS_STYLE.get(status, "")),
            contributes or "-",
        )
    return table


class PluginsScreen(ViewScreen):
    """Every plugin found (built-in ones too), its contributions, and each failure's reason."""

    VIEW = "plugins"

    BINDINGS: ClassVar[list[BindingType]] = []
    """No keys of its own."""

    DEFAULT_CSS = """
    PluginsScreen #plugins-scroll { height: 1fr; padding: 0 1; }
    PluginsScreen #plugins-failures { margin-top: 1; }
    """

    def compose(self) -> ComposeResult:
        """Title bar, the table and the failures, key bar."""
        yield TitleBar()
        with VerticalScroll(id="plugins-scroll"):
            yield Static("loading plugins...", id="plugins-table")
            yield Static("", id="plugins-failures")
        yield KeyBar()

    def data_changed(self, data: FabricData) -> None:
        """The plugin host loaded with the catalog: list it."""
        host = self.fabric_app.host
        if host is None:
            return
        plugins = host.describe()
        self.query_one("#plugins-table", Static).update(plugin_table(plugins))
        failures = host.failures
        text = Text()
        if failures:
            text.append(f"{len(failures)} plugin problem(s):\n", style="bold red")
            for failure in failures:
                version = f" {failure.version}" if failure.version else ""
                dist = f" ({failure.dist}{version})" if failure.dist else ""
                text.append(f"  {failure.name}{dist}: ", style="bold")
                text.append(failure.error + "\n")
        else:
            text.append(f"{len(plugins)} plugins loaded, no failures.", style="green")
        self.query_one("#plugins-failures", Static).update(text)
