"""``fabricui explore`` (and ``fabricui`` alone): the options that open the explorer, turned
into the launch request the TUI runs (``fabricui.cli`` hands it over)."""

from __future__ import annotations

import argparse
from typing import Any

from fabricui.commands.options import add_topology_options, topology_request
from fabricui.errors import ConfigError
from fabricui.services.requests import LaunchRequest
from fabricui.vocabulary import VIEWS


def add_parser(subparsers: Any) -> argparse.ArgumentParser:
    """Add the ``explore`` subcommand.

    Args:
        subparsers: The object ``ArgumentParser.add_subparsers()`` returned.
    """
    parser = subparsers.add_parser(
        "explore", help="open the interactive explorer (also what `fabricui` alone does)"
    )
    add_topology_options(parser)
    parser.add_argument("--src", help="source GPU shown first: n<node>.g<gpu> or a rank")
    parser.add_argument("--dst", help="destination GPU shown first")
    parser.add_argument(
        "--size", help="message size of the path panel: 8, 64K, 1G (binary), 1GB (default: 1G)"
    )
    parser.add_argument("--view", default="topology", help=f"view shown first: {', '.join(VIEWS)}")
    return parser


def launch_request(args: argparse.Namespace) -> LaunchRequest:
    """The launch request of the parsed options.

    Args:
        args: Parsed arguments; every attribute is optional (``fabricui`` alone passes the
            top-level namespace).

    Raises:
        ConfigError: Unknown view or a bad size.
    """
    view = getattr(args, "view", None) or "topology"
    if view not in VIEWS:
        raise ConfigError(f"unknown view {view!r} (one of {', '.join(VIEWS)})")
    size_bytes = None
    size_text = getattr(args, "size", None)
    if size_text:
        from fabricui.units import parse_size

        size_bytes = parse_size(size_text)
        if size_bytes < 1:
            raise ConfigError(f"--size must be at least 1 byte (got {size_text})")
    return LaunchRequest(
        topology=topology_request(args),
        view=view,
        src=getattr(args, "src", None),
        dst=getattr(args, "dst", None),
        message_size=size_bytes,
    )
