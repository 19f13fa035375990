"""Headless rendering of an explorer view to SVG, plain text or Markdown, for reports and CI.

``render_view`` runs the Textual app off-screen at a given terminal size, waits until every
worker has finished, and returns what the screen shows. Textual is imported only when a
view is rendered, so importing this module stays cheap.

Regenerate the README's screenshots with::

    fabricui snapshot --all -o screenshots/ --force
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import TYPE_CHECKING

from fabricui.errors import ConfigError
from fabricui.files import write_text
from fabricui.render.markdown import render_markdown
from fabricui.services.command_requests import SnapshotRequest
from fabricui.services.requests import LaunchRequest
from fabricui.tui.launch import check_launch
from fabricui.tui.offscreen import DEFAULT_SIZE, FORMATS, Snapshot, fabric_diagram, render_app

if TYPE_CHECKING:
    from fabricui.hwdb.catalog import Catalog
    from fabricui.plugins import PluginHost


def render_view(
    request: LaunchRequest,
    catalog: Catalog | None = None,
    host: PluginHost | None = None,
    terminal_size: tuple[int, int] = DEFAULT_SIZE,
    formats: tuple[str, ...] = FORMATS,
) -> Snapshot:
    """Render one view off-screen.

    Args:
        request: What to render (the view, its topology and choices).
        catalog: A catalog to use (default: the built-in database with plugins).
        host: A plugin host to use (default: the process-wide one).
        terminal_size: Terminal (columns, rows).
        formats: What to take of the screen (``offscreen.FORMATS``: SVG, text).

    Returns:
        The SVG and the plain text of the screen.

    Raises:
        FabricError: Bad input (checked before the app starts).
    """
    from fabricui.tui.app import make_app

    catalog = check_launch(request, catalog, host)
    app = make_app(catalog=catalog, host=host, launch=request)
    return render_app(app, request.view, terminal_size, formats)


def run_snapshot(
    request: SnapshotRequest, catalog: Catalog | None = None, host: PluginHost | None = None
) -> tuple[list[Path], str]:
    """Render every target, then write them all (a view that fails leaves no files behind).

    A Markdown target is a report built from the service layer (``services.reports``),
    with the fabric's diagram written beside it and linked; SVG and text targets are the
    screen.

    Args:
        request: The views, formats, files and state to render.
        catalog: A catalog to use (default: the built-in database with plugins).
        host: A plugin host to use (default: the process-wide one).

    Returns:
        (the files written, in order; the text for standard output, if a target is ``-``).

    Raises:
        FabricError: Bad input, a view that could not be computed (nothing is written), or
            a file that cannot be written.
    """
    from fabricui.services.reports import build_report

    if catalog is None:
        from fabricui.services.session import load_catalog

        catalog = load_catalog(host=host)
    writes: list[tuple[Path, str]] = []
    stdout: list[str] = []
    for target in request.targets:
        launch = dataclasses.replace(request.launch, view=target.view)
        if target.format == "md":
            options = dict(launch.options)
            if any(options.get(key) for key in ("measured", "hosts", "jobs")):
                # a run of another rank count, unknown hosts, no job listing: one line
                check_launch(launch, catalog, host)
            image = target.image_path
            report = build_report(launch, catalog, host, image.name if image else None)
            content = render_markdown(report)
            if image is not None:
                writes.append((image, fabric_diagram(launch.topology_or_default, catalog, host)))
        else:
            svg = target.format == "svg"
            formats = ("svg",) if svg else ("text",)
            snapshot = render_view(launch, catalog, host, request.terminal_size, formats)
            content = snapshot.svg if svg else snapshot.text
        if target.path is None:
            stdout.append(content)
        else:
            writes.append((target.path, content))
    if request.directory is not None:
        try:
            request.directory.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise ConfigError(
                f"{request.directory}: cannot create the directory ({exc.strerror})"
            ) from None
    for path, content in writes:
        write_text(path, content, force=request.force)
    return [path for path, _ in writes], "".join(stdout)
