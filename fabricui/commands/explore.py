"""``fabricui explore`` (and ``fabricui`` alone): the options that open the explorer, turned
into the launch request the TUI runs (``fabricui.cli`` hands it over)."""

from __future__ import annotations

import argparse
from typing import Any

from fabricui.commands.options import add_topology_options, completes, topology_request
from fabricui.errors import ConfigError
from fabricui.services.requests import LaunchRequest, TopologyRequest
from fabricui.units import parse_message_size
from fabricui.vocabulary import VIEWS


def add_parser(subparsers: Any) -> argparse.ArgumentParser:
    """Add the ``explore`` subcommand.

    Args:
        subparsers: The object ``ArgumentParser.add_subparsers()`` returned.
    """
    parser = subparsers.add_parser(
        "explore", help="open the interactive explorer (also what `fabricui` alone does)"
    )
    add_launch_options(parser)
    return parser


def add_launch_options(parser: argparse.ArgumentParser, top_level: bool = False) -> None:
    """The explorer's options: topology, what-if, ``--src``, ``--dst``, ``--message-size``
    (alias ``--size``) and ``--view``; also accepted before any command (``fabricui -t X``).

    Args:
        parser: The ``explore`` parser, or the top-level one (``top_level=True``).
        top_level: Declare the defaults (None) that ``explore``'s copies keep.
    """
    unset = None if top_level else argparse.SUPPRESS
    add_topology_options(parser, top_level)
    parser.add_argument(
        "--src", default=unset, help="source GPU shown first: n<node>.g<gpu> or a rank"
    )
    parser.add_argument("--dst", default=unset, help="destination GPU shown first")
    size_flags = ["--message-size"] if top_level else ["--message-size", "--size"]
    parser.add_argument(
        *size_flags,
        dest="message_size",
        default=unset,
        metavar="SIZE",
        help="message size of the path panel: 8, 64K, 1G (binary), 1GB (default: 1G)",
    )
    view = parser.add_argument(
        "--view", default=unset, help=f"view shown first: {', '.join(VIEWS)} (default: topology)"
    )
    completes(view, VIEWS)
    parser.add_argument(
        "--hosts",
        default=unset,
        metavar="HOSTLIST",
        help="a job's hosts on an imported cluster (Slurm hostlist; default "
        "$SLURM_JOB_NODELIST there): highlighted on the map, the path between its first and "
        "last GPU",
    )
    parser.add_argument(
        "--jobs",
        default=unset,
        metavar="FILE",
        help="running jobs (`squeue`, `scontrol show job`, `sacct` with NodeList) on an "
        "imported cluster: their GPUs are underlined on the map",
    )
    parser.add_argument(
        "--ascii",
        action="store_true",
        default=unset,
        help="draw with plain ASCII (default: when the locale is not UTF-8)",
    )


def launch_request(args: argparse.Namespace) -> LaunchRequest:
    """The launch request of the parsed options; its topology is None when they neither
    name one nor change it (``-t``, ``--nodes``, a what-if, ``--health``): then the
    explorer reopens the last session's.

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
    size_text = getattr(args, "message_size", None)
    if size_text:
        size_bytes = parse_message_size(size_text, "--message-size")
    topology: TopologyRequest | None = topology_request(args)
    if topology == TopologyRequest() and not getattr(args, "topology", None):
        topology = None  # nothing named (`-t dgx-h100-pod`, the default's id, is named)
    return LaunchRequest(
        topology=topology,
        view=view,
        src=getattr(args, "src", None),
        dst=getattr(args, "dst", None),
        message_size=size_bytes,
        options=tuple(
            (key, getattr(args, key)) for key in ("hosts", "jobs") if getattr(args, key, None)
        ),
        ascii=True if getattr(args, "ascii", None) else None,
    )
