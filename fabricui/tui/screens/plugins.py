"""The plugins view: what is loaded, what each plugin contributes, and what failed and why."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, ClassVar

from rich.table import Table
from rich.text import Text
from textual import on, work
from textual.app import ComposeResult
from textual.binding import BindingType
from textual.containers import VerticalScroll
from textual.message import Message
from textual.widgets import Static

from fabricui.tui.screens.base import ViewScreen
from fabricui.tui.screens.table_keys import SortedFilteredTable
from fabricui.tui.widgets.filter_bar import FilterBar, row_matches, table_bindings
from fabricui.tui.widgets.key_bar import KeyBar
from fabricui.tui.widgets.rendered_once import RenderedOnce
from fabricui.tui.widgets.title_bar import TitleBar

if TYPE_CHECKING:
    from fabricui.plugins import PluginFailure, PluginHost
    from fabricui.services.loaded import LoadedFabric

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


#: Columns of the plugin table.
COLUMNS = ("plugin", "version", "source", "status", "contributes")


def plugin_rows(plugins: list[dict[str, Any]]) -> list[tuple[str, ...]]:
    """One row of cells per plugin: name, version, source, status, contributions."""
    return [
        (
            info["name"],
            info["version"] or "-",
            info["source"],
            info["status"],
            contributions(info["contributes"]) or "-",
        )
        for info in plugins
    ]


def plugin_table(rows: list[tuple[str, ...]], sort_column: int = 0, reverse: bool = False) -> Table:
    """The rows as a table; the sorted column's header is marked with its direction."""
    table = Table(box=None, padding=(0, 1), pad_edge=False, expand=True)
    for i, name in enumerate(COLUMNS):
        mark = (" v" if reverse else " ^") if i == sort_column else ""
        table.add_column(name + mark, no_wrap=i < len(COLUMNS) - 1, ratio=1 if i == 4 else None)
    for row in rows:
        cells = list(row)
        status = cells[3]
        table.add_row(*cells[:3], Text(status, style=STATUS_STYLE.get(status, "")), cells[4])
    return table


class PluginsScreen(SortedFilteredTable, ViewScreen):
    """Every plugin found (built-in ones too), its contributions, and each failure's reason."""

    VIEW = "plugins"

    BINDINGS: ClassVar[list[BindingType]] = [
        *table_bindings("plugins", shown=True, header_clicks=False)
    ]
    """Filter and sort the table."""

    DEFAULT_CSS = """
    PluginsScreen #plugins-scroll { height: 1fr; padding: 0 1; }
    PluginsScreen #plugins-failures { margin-top: 1; }
    """

    _described_ahead = False
    """The host's hooks were called ahead of the first frame (``figures_ahead``): listing
    the plugins again is quick, done at once."""

    class PluginsListed(Message):
        """Every plugin described, and the failures so far."""

        def __init__(self, plugins: list[dict[str, Any]], failures: list[PluginFailure]) -> None:
            self.plugins = plugins
            """``PluginHost.describe()``: one dict per plugin."""
            self.failures = failures
            """``PluginHost.failures`` once every hook was called."""
            super().__init__()

    def compose(self) -> ComposeResult:
        """Title bar, the table and the failures, key bar."""
        yield TitleBar()
        yield FilterBar(id="plugins-filter")
        with VerticalScroll(id="plugins-scroll"):
            yield Static("loading plugins...", id="plugins-table")
            yield Static("", id="plugins-failures")
        yield KeyBar()

    def data_changed(self, data: LoadedFabric) -> None:
        """The plugin host loaded with the catalog: list it (at once when its hooks were
        called ahead, ``figures_ahead``)."""
        host = self.fabric_app.host
        if host is None:
            return
        if self._described_ahead:
            self.plugins_listed(self.PluginsListed(host.describe(), host.failures))
            return
        self._describe(host)

    def figures_ahead(self, data: LoadedFabric) -> None:
        """Every plugin's hooks called once (the host keeps what they gave: describing
        it again is quick)."""
        host = self.fabric_app.host
        if host is not None:
            host.describe()
            self._described_ahead = True

    @work(
        thread=True, exclusive=True, group="plugins", exit_on_error=False, description="plugin list"
    )
    def _describe(self, host: PluginHost) -> None:
        """Describe every plugin off the event loop: the first time, each plugin's hooks
        are called, each in a thread of its own with a time budget (about 0.2 s)."""
        plugins = host.describe()
        self.post_message(self.PluginsListed(plugins, host.failures))

    @on(PluginsListed)
    def plugins_listed(self, message: PluginsListed) -> None:
        """The table, then each failure with its reason."""
        plugins, failures = message.plugins, message.failures
        self._rows = plugin_rows(plugins)
        self._redraw()
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

    def _redraw(self) -> None:
        rows = [r for r in getattr(self, "_rows", []) if row_matches(r, self.filter_text)]
        rows.sort(key=lambda r: r[self.sort_column].lower(), reverse=self.reverse)
        table = self.query_one("#plugins-table", Static)
        table.update(RenderedOnce(plugin_table(rows, self.sort_column, self.reverse)))

    def sort_column_count(self) -> int:
        return len(COLUMNS)

    def resorted(self) -> None:
        self._redraw()

    def refiltered(self) -> None:
        self._redraw()
