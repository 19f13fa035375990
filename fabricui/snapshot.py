"""Headless rendering of an explorer view to SVG, plain text or Markdown, for reports and CI.

``render_view`` runs the Textual app off-screen at a given terminal size, waits until every
worker has finished, and returns what the screen shows. Textual is imported only when a
view is rendered, so importing this module stays cheap.

Regenerate the README's screenshots with::

    python -m fabricui.snapshot --all -o screenshots/ --force
"""

from __future__ import annotations

import asyncio
import sys
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from fabricui.errors import ConfigError
from fabricui.vocabulary import DEFAULT_TOPOLOGY

if TYPE_CHECKING:
    from fabricui.hwdb.catalog import Catalog
    from fabricui.plugins import PluginHost

#: Views in key order.
VIEWS = ("topology", "pyramid", "collectives", "strategies", "plugins")
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


@dataclass
class ViewRequest:
    """What to render: a view, its topology, its choices and the terminal size."""

    view: str
    """View id (``VIEWS``)."""
    topology: str = DEFAULT_TOPOLOGY
    """Topology id or YAML path."""
    nodes: int | None = None
    """``--nodes`` override."""
    src: str | None = None
    """Source GPU of the topology view."""
    dst: str | None = None
    """Destination GPU of the topology view."""
    message_size: int | None = None
    """Message size of the topology view's transfer time [bytes]."""
    options: dict[str, str] = field(default_factory=dict)
    """View options (``op``, ``group``, ``sizes``, ``model``, ``layout``, ``search``)."""
    size: tuple[int, int] = DEFAULT_SIZE
    """Terminal (columns, rows)."""


def parse_terminal_size(text: str) -> tuple[int, int]:
    """``120x40`` -> (120, 40).

    Raises:
        ConfigError: Not ``COLSxROWS`` with at least 40x10.
    """
    cols, sep, rows = text.lower().partition("x")
    if not sep or not cols.isdigit() or not rows.isdigit():
        raise ConfigError(f"invalid --size {text!r}: use COLUMNSxROWS such as 120x40")
    size = (int(cols), int(rows))
    if size[0] < 40 or size[1] < 10 or size[0] > 1000 or size[1] > 500:
        raise ConfigError(f"--size {text} is out of range (40x10 .. 1000x500)")
    return size


def check_request(
    request: ViewRequest, catalog: Catalog | None = None, host: PluginHost | None = None
) -> Catalog:
    """Check everything the user typed before the app starts; returns the catalog to use.

    Raises:
        FabricError: Unknown view, topology, GPU id, operation, group, model or layout.
    """
    from fabricui.tui.data import GROUPS, OPS, FabricData

    if request.view not in VIEWS:
        raise ConfigError(f"unknown view {request.view!r} (one of {', '.join(VIEWS)})")
    data = FabricData.load(request.topology, request.nodes, catalog, host)
    for gpu in (request.src, request.dst):
        if gpu is not None:
            data.parse_gpu(gpu)
    if (
        request.src is not None
        and request.dst is not None
        and data.parse_gpu(request.src) == data.parse_gpu(request.dst)
    ):
        raise ConfigError(f"source and destination are the same GPU ({request.src})")
    options = request.options
    if options.get("op") and options["op"] not in OPS:
        raise ConfigError(f"unknown operation {options['op']!r} (one of {', '.join(OPS)})")
    if options.get("group") and options["group"] not in GROUPS:
        raise ConfigError(f"unknown group {options['group']!r} (one of {', '.join(GROUPS)})")
    if options.get("sizes"):
        from fabricui.tui.screens.collectives import parse_range

        parse_range(options["sizes"])
    if options.get("model"):
        data.model(options["model"])
    if options.get("layout"):
        from fabricui.tui.data import LayoutChoice
        from fabricui.tui.screens.strategies import parse_layout

        parse_layout(options["layout"], LayoutChoice())
    return data.catalog


def render_view(
    request: ViewRequest, catalog: Catalog | None = None, host: PluginHost | None = None
) -> Snapshot:
    """Render one view off-screen.

    Args:
        request: What to render.
        catalog: A catalog to use (default: the built-in database with plugins).
        host: A plugin host to use (default: the process-wide one).

    Returns:
        The SVG and the plain text of the screen.

    Raises:
        FabricError: Bad input (checked before the app starts).
    """
    catalog = check_request(request, catalog, host)
    return asyncio.run(_render(request, catalog, host))


async def _render(request: ViewRequest, catalog: Catalog, host: PluginHost | None) -> Snapshot:
    from fabricui.tui.app import make_app, screen_text, settle

    app = make_app(
        topology=request.topology,
        nodes=request.nodes,
        src=request.src,
        dst=request.dst,
        view=request.view,
        catalog=catalog,
        host=host,
        size_bytes=request.message_size,
        options=request.options,
    )
    async with app.run_test(size=request.size) as pilot:
        await settle(pilot)
        svg = app.export_screenshot(title=f"fabricui {request.view}")
        text = screen_text(app)
        heading = app.sub_title
    return Snapshot(request.view, svg, text, heading, request.size)


def write_snapshot(snapshot: Snapshot, path: Path, force: bool = False) -> Path:
    """Write the SVG (``.svg``), a Markdown report (``.md``) or the plain text (any other
    suffix, e.g. ``.txt``) to ``path``, atomically.

    Raises:
        ConfigError: The file exists and ``force`` is False, or it cannot be written.
    """
    from fabricui.atomic_write import write_text

    suffix = path.suffix.lower()
    if suffix == ".svg":
        content = snapshot.svg
    elif suffix == ".md":
        content = snapshot.markdown()
    else:
        content = snapshot.text
    write_text(path, content, force=force)
    return path


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m fabricui.snapshot``: the same options as ``fabricui snapshot``."""
    import argparse

    from fabricui.commands import snapshot as command
    from fabricui.errors import FabricError

    parser = argparse.ArgumentParser(
        prog="python -m fabricui.snapshot", description=command.DESCRIPTION
    )
    command.add_arguments(parser)
    args = parser.parse_args(argv)
    try:
        return command.run(args)
    except FabricError as exc:
        print(f"fabricui: error: {exc.message}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
