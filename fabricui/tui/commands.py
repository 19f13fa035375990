"""Command palette providers: views, topologies and actions, titled ``category: Action``."""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from typing import TYPE_CHECKING, cast

from textual.command import DiscoveryHit, Hit, Hits, Provider

from fabricui.tui.data import REGIMES

if TYPE_CHECKING:
    from fabricui.tui.explorer import Explorer

Command = tuple[str, Callable[[], object], str]
"""(title, callback, help) of one palette command."""


class FabricCommands(Provider):
    """``view: Topology`` ... ``topology: dgx-h100-pod`` ... ``snapshot: Save current view``."""

    @property
    def fabric_app(self) -> Explorer:
        """The app, typed."""
        return cast("Explorer", self.app)

    def commands(self) -> list[Command]:
        """Every command, in the order the palette lists them."""
        app = self.fabric_app
        out: list[Command] = []
        for view, title in app.VIEW_TITLES.items():
            out.append((f"view: {title}", partial(app.switch_view, view), f"show the {view} view"))
        regimes = {topology: regime for regime, topology in REGIMES}
        catalog = app.catalog
        topologies = sorted(catalog.topologies.values(), key=lambda s: s.id) if catalog else []
        for spec in topologies:
            regime = regimes.get(spec.id)
            text = f"{spec.n_gpus} GPUs" + (f", a {regime}" if regime else "")
            out.append(
                (
                    f"topology: {spec.id}",
                    partial(app.load_topology, spec.id),
                    f"{text}: {spec.description}",
                )
            )
        out += [
            ("topology: Pick from a list", app.action_pick_topology, "every reference topology"),
            ("topology: Set node count", app.action_ask_nodes, "rescale the topology (--nodes N)"),
            (
                "topology: Set link bandwidths",
                app.action_ask_what_if,
                "what-if: NIC Gb/s and scale-up links per GPU",
            ),
            (
                "snapshot: Save current view",
                app.action_save_snapshot,
                "a Markdown report, SVG or text; you choose the file",
            ),
            ("help: Keys", app.action_help, "every key of every view"),
        ]
        return out

    async def discover(self) -> Hits:
        """Everything, before the user types."""
        for title, callback, text in self.commands():
            yield DiscoveryHit(title, callback, help=text)

    async def search(self, query: str) -> Hits:
        """Commands whose title matches ``query``."""
        matcher = self.matcher(query)
        for title, callback, text in self.commands():
            score = matcher.match(title)
            if score > 0:
                yield Hit(score, matcher.highlight(title), callback, help=text)
