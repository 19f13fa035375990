"""Headless rendering of an explorer view to SVG, plain text or Markdown, for reports and CI.

``render_view`` runs the Textual app off-screen at a given terminal size, waits until every
worker has finished, and returns what the screen shows. Textual is imported only when a
view is rendered, so importing this module stays cheap.

Regenerate the README's screenshots with::

    fabricui snapshot --all -o screenshots/ --force
"""

from __future__ import annotations

import asyncio
import dataclasses
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from fabricui.errors import ConfigError
from fabricui.services.requests import LaunchRequest, SnapshotRequest

if TYPE_CHECKING:
    from fabricui.hwdb.catalog import Catalog
    from fabricui.plugins import PluginHost

#: Terminal size of a snapshot when none is given (columns, rows).
DEFAULT_SIZE = (120, 40)


@dataclass(frozen=True)
class Snapshot:
    """One view rendered off-screen."""

    view: str
    """The view id."""
    svg: str
    """The screen as an SVG document."""
    text: str
    """The screen as plain text."""
    heading: str = ""
    """What the title bar says of the view (``Topology · dgx-h100-pod``)."""
    size: tuple[int, int] = DEFAULT_SIZE
    """Terminal (columns, rows) it was rendered at."""

    def markdown(self) -> str:
        """A Markdown report: a heading, how it was rendered, the screen in a text block."""
        fence = "~~~~" if "```" in self.text else "```"
        columns, rows = self.size
        return (
            f"# fabricui: {self.heading or self.view}\n\n"
            f"The `{self.view}` view, rendered at {columns}x{rows} by `fabricui snapshot`.\n\n"
            f"{fence}text\n{self.text.rstrip()}\n{fence}\n"
        )


def render_view(
    request: LaunchRequest,
    catalog: Catalog | None = None,
    host: PluginHost | None = None,
    terminal_size: tuple[int, int] = DEFAULT_SIZE,
) -> Snapshot:
    """Render one view off-screen.

    Args:
        request: What to render (the view, its topology and choices).
        catalog: A catalog to use (default: the built-in database with plugins).
        host: A plugin host to use (default: the process-wide one).
        terminal_size: Terminal (columns, rows).

    Returns:
        The SVG and the plain text of the screen.

    Raises:
        FabricError: Bad input (checked before the app starts).
    """
    from fabricui.tui.launch import check_launch

    catalog = check_launch(request, catalog, host)
    return asyncio.run(_render(request, catalog, host, terminal_size))


async def _render(
    request: LaunchRequest,
    catalog: Catalog,
    host: PluginHost | None,
    terminal_size: tuple[int, int],
) -> Snapshot:
    from fabricui.tui.app import make_app, screen_text, settle

    app = make_app(catalog=catalog, host=host, launch=request)
    async with app.run_test(size=terminal_size) as pilot:
        await settle(pilot)
        svg = app.export_screenshot(title=f"fabricui {request.view}")
        text = screen_text(app)
        heading = app.sub_title
    return Snapshot(request.view, svg, text, heading, terminal_size)


def write_snapshot(snapshot: Snapshot, path: Path, force: bool = False) -> Path:
    """Write the SVG (``.svg``), a Markdown report (``.md``) or the plain text (any other
    suffix, e.g. ``.txt``) to ``path``, atomically.

    Raises:
        ConfigError: The file exists and ``force`` is False, or it cannot be written.
    """
    from fabricui.files import write_text

    suffix = path.suffix.lower()
    if suffix == ".svg":
        content = snapshot.svg
    elif suffix == ".md":
        content = snapshot.markdown()
    else:
        content = snapshot.text
    write_text(path, content, force=force)
    return path


def run_snapshot(request: SnapshotRequest, catalog: Catalog | None = None) -> list[Path]:
    """Render every target, then write them all (a view that fails leaves no files behind).

    Args:
        request: The views, files and state to render.
        catalog: A catalog to use (default: the built-in database with plugins).

    Returns:
        The files written, in order.

    Raises:
        FabricError: Bad input, or a file that cannot be written.
    """
    rendered = [
        (
            render_view(
                dataclasses.replace(request.launch, view=view),
                catalog,
                terminal_size=request.terminal_size,
            ),
            path,
        )
        for view, path in request.targets
    ]
    if request.directory is not None:
        try:
            request.directory.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise ConfigError(
                f"{request.directory}: cannot create the directory ({exc.strerror})"
            ) from None
    return [write_snapshot(snapshot, path, force=request.force) for snapshot, path in rendered]
