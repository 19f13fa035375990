"""Starting the explorer: check what the user asked before the screen is taken over, then
run the app until the user quits."""

from __future__ import annotations

import dataclasses
import os
import sys
from typing import TYPE_CHECKING

from fabricui.errors import ConfigError, one_line
from fabricui.services.layouts import LayoutChoice, parse_layout
from fabricui.services.requests import CatalogRequest, LaunchRequest, TopologyRequest, check_group
from fabricui.services.settings import load_state
from fabricui.tui.terminal import guarding
from fabricui.vocabulary import OPS, VIEWS

#: The driver textual-serve runs each explorer with (``TEXTUAL_DRIVER``).
WEB_DRIVER = "textual.drivers.web_driver:WebDriver"

if TYPE_CHECKING:
    from fabricui.hwdb.catalog import Catalog
    from fabricui.plugins import PluginHost


def check_launch(
    request: LaunchRequest, catalog: Catalog | None = None, host: PluginHost | None = None
) -> Catalog:
    """Check everything the user typed before the app starts; returns the catalog to use.

    Raises:
        FabricError: Unknown view, topology, GPU id, operation, group, model or layout,
            a measured run of another rank count than the group, or a ``--jobs`` file
            that is missing or not a job listing.
    """
    from fabricui.services.loaded import LoadedFabric

    if request.view not in VIEWS:
        raise ConfigError(f"unknown view {request.view!r} (one of {', '.join(VIEWS)})")
    data = LoadedFabric.load(request.topology_or_default, catalog, host)
    for gpu in (request.src, request.dst):
        if gpu is not None:
            data.parse_gpu(gpu)
    if (
        request.src is not None
        and request.dst is not None
        and data.parse_gpu(request.src) == data.parse_gpu(request.dst)
    ):
        raise ConfigError(f"source and destination are the same GPU ({request.src})")
    options = dict(request.options)
    if options.get("op") and options["op"] not in OPS:
        raise ConfigError(f"unknown operation {options['op']!r} (one of {', '.join(OPS)})")
    if options.get("group"):
        check_group(options["group"])
    if options.get("measured"):
        from fabricui.services.collective import measured_group, measured_run

        run = measured_run(options["measured"], options.get("op"), catalog=data.catalog)
        measured_group(data, options.get("group"), run)  # counts that differ: one line
    if options.get("sizes"):
        from fabricui.tui.screens.collectives import parse_range

        parse_range(options["sizes"])
    if options.get("model"):
        data.model(options["model"])
    if options.get("hosts"):
        from fabricui.services.jobs import job_of

        job_of(data.fabric, options["hosts"])  # unknown hosts: one line before the screen
    if options.get("jobs"):
        from fabricui.services.place import running_job_ranks

        running_job_ranks(data.fabric, options["jobs"])  # missing, or not a job listing
    if options.get("layout"):
        parse_layout(options["layout"], LayoutChoice())
    return data.catalog


def run_explorer(request: LaunchRequest, catalog_request: CatalogRequest | None = None) -> int:
    """Check the request, then run the explorer until the user quits; returns 0.
    Without a topology named (``request.topology`` None) the last session's is reopened.

    Options are checked before the screen is taken over, so that a typo is one line on
    stderr (exit status 2) rather than a modal. Without options nothing is loaded before
    the first paint: the explorer starts as fast as Textual does.

    Raises:
        FabricError: Unknown topology, bad node count, GPU id, size or view.
    """
    catalog_request = catalog_request or CatalogRequest()
    catalog = None
    if not request.is_default() or catalog_request != CatalogRequest():
        from fabricui.services.session import drain_load_warnings, load_catalog

        catalog = check_launch(request, load_catalog(catalog_request))
        for line in drain_load_warnings():  # said before the explorer takes the screen
            print(f"fabricui: warning: {one_line(line)}", file=sys.stderr)
    check_terminal()
    remembered = with_remembered(request)

    from fabricui.tui.app import make_app

    app = make_app(launch=remembered, catalog=catalog)
    app.interactive = True
    app.warm_up = True
    if remembered.topology != request.topology_or_default:
        app.fallback = request.topology_or_default  # if the remembered topology is gone
    with guarding(app) as guard:
        app.terminal_guard = guard
        app.run()
    return app.return_code or 0


def with_remembered(request: LaunchRequest) -> LaunchRequest:
    """Bare ``fabricui`` reopens the topology and message size of the last session (the
    built-in default topology the first time); anything asked for wins, the default
    topology named with ``-t`` too. The request returned names its topology."""
    state = load_state()
    topology, nodes, size = state.get("topology"), state.get("nodes"), state.get("message_size")
    opened = request.topology_or_default
    if request.topology is None and isinstance(topology, str):
        opened = TopologyRequest(topology, nodes if isinstance(nodes, int) else None)
    request = dataclasses.replace(request, topology=opened)
    if request.message_size is None and isinstance(size, int) and size > 0:
        request = dataclasses.replace(request, message_size=size)
    return request


def check_terminal() -> None:
    """Refuse to start the explorer where it cannot be used.

    Raises:
        ConfigError: Standard input or output is not a terminal (a pipe, a file, a
            closed stream): the screen would be escape codes nobody reads, or nothing
            would ever answer a key.
    """
    if os.environ.get("TEXTUAL_DRIVER") == WEB_DRIVER:
        return  # `fabricui serve`: Textual's web driver speaks to the browser over pipes
    for name, stream in (("output", sys.stdout), ("input", sys.stdin)):
        if stream is None or getattr(stream, "closed", False) or not stream.isatty():
            raise ConfigError(
                f"the explorer needs a terminal, and standard {name} is not one; for text use "
                "`fabricui path ...`, `fabricui collective ...` or `fabricui snapshot VIEW -o -`"
            )
