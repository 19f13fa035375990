"""Running the explorer off-screen: wait until every worker is done, then take what the
screen shows (SVG and plain text); and the fabric's diagram a report links. Used by
snapshots and by the explorer's own save, so neither imports the other."""

from __future__ import annotations

import asyncio
import contextlib
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from fabricui.errors import ConfigError
from fabricui.tui.textual_private import screen_text

if TYPE_CHECKING:
    from textual.app import App
    from textual.pilot import Pilot

    from fabricui.hwdb.catalog import Catalog
    from fabricui.plugins import PluginHost
    from fabricui.services.requests import TopologyRequest

#: Terminal size of a snapshot when none is given (columns, rows).
DEFAULT_SIZE = (120, 40)


@dataclass(frozen=True)
class Snapshot:
    """One view rendered off-screen."""

    view: str
    """The view id."""
    svg: str
    """The screen as an SVG document (empty when only the text was asked for)."""
    text: str
    """The screen as plain text (empty when only the SVG was asked for)."""
    heading: str = ""
    """What the title bar says of the view (``Topology · dgx-h100-pod``)."""
    size: tuple[int, int] = DEFAULT_SIZE
    """Terminal (columns, rows) it was rendered at."""


async def settle(pilot: Pilot[Any], rounds: int = 20) -> None:
    """Wait until the app has its first data (``first_load_pending()``, when it has one),
    no worker runs and every message they posted is handled.

    The first load starts after the first refresh: before it, no worker runs yet, and how
    soon that refresh comes depends on the event loop (a headless ``App.run`` on Python
    3.13 checks before it), so the wait does not rest on the workers alone.
    """
    from textual.worker import WorkerCancelled, WorkerFailed

    app = pilot.app
    pending = getattr(app, "first_load_pending", None)

    def busy() -> bool:
        return any(w.is_running for w in app.workers) or bool(callable(pending) and pending())

    for _ in range(rounds):
        # A failed worker is reported by the app itself; keep waiting for the others.
        with contextlib.suppress(WorkerFailed, WorkerCancelled):
            await app.workers.wait_for_complete()
        await pilot.pause()
        if not busy():
            await pilot.pause()
            if not busy():
                return


#: What a snapshot takes of the screen: its SVG, its plain text.
FORMATS = ("svg", "text")


def render_app(
    app: App[Any],
    view: str,
    terminal_size: tuple[int, int] = DEFAULT_SIZE,
    formats: tuple[str, ...] = FORMATS,
) -> Snapshot:
    """Run ``app`` off-screen until its workers are done and take its screen.

    Args:
        app: The explorer, not yet running.
        view: The view it shows (the SVG's title).
        terminal_size: Terminal (columns, rows).
        formats: What to take of the screen (``FORMATS``): a file of one format renders
            the screen once, not for the other too.

    Raises:
        ConfigError: A view computation failed (a half-drawn view is never returned).
    """
    return asyncio.run(_render(app, view, terminal_size, formats))


async def _render(
    app: Any, view: str, terminal_size: tuple[int, int], formats: tuple[str, ...]
) -> Snapshot:
    async with app.run_test(size=terminal_size) as pilot:
        await settle(pilot)
        svg = app.export_screenshot(title=f"fabricui {view}") if "svg" in formats else ""
        text = screen_text(app) if "text" in formats else ""
        heading = app.sub_title
        failures = list(getattr(app, "failures", ()))
    if failures:
        raise ConfigError(f"the {view} view could not be computed: {failures[0]}")
    return Snapshot(view, svg, text, heading, terminal_size)


def fabric_diagram(
    topology: TopologyRequest, catalog: Catalog | None = None, host: PluginHost | None = None
) -> str:
    """The diagram of a topology as SVG (``fabricui export``'s), the picture a report
    links: a drawing of the fabric, not a screen with cut cells and a key bar."""
    from fabricui.render.diagram import to_svg, topology_drawing
    from fabricui.services.session import load_fabric

    return to_svg(topology_drawing(load_fabric(topology, catalog, host)))
