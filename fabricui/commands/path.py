"""``fabricui path``: the route between two GPUs, hop by hop, with its bottleneck."""

from __future__ import annotations

import argparse
from typing import Any

from fabricui.commands.options import (
    add_hosts_option,
    add_json_option,
    add_topology_options,
    catalog,
    take_free_words,
    topology_request,
)
from fabricui.errors import ConfigError
from fabricui.render.output import print_json
from fabricui.services.command_requests import PathRequest
from fabricui.units import is_unit_word, parse_message_size


def add_parser(subparsers: Any) -> argparse.ArgumentParser:
    """Add the ``path`` subcommand."""
    parser: argparse.ArgumentParser = subparsers.add_parser(
        "path", help="route between two GPUs: hops, bottleneck, latency"
    )
    add_topology_options(parser)
    parser.add_argument(
        "gpus",
        nargs="*",
        metavar="SRC DST",
        help="the two GPUs, as --src and --dst (`path n0.g3 n12.g5`)",
    )
    take_free_words(parser, "gpus")
    parser.add_argument("--src", help="source GPU: n<node>.g<gpu> or a global rank")
    parser.add_argument("--dst", help="destination GPU")
    parser.add_argument(
        "--message-size",
        "--size",
        dest="size",
        metavar="SIZE",
        help="message size for the transfer time: 8, 64K, 1G (binary), 1GB, 1GiB",
    )
    add_hosts_option(parser, "--src/--dst are then job ranks or HOST.gK")
    add_json_option(parser, "print one JSON object")
    return parser


def message_size(args: argparse.Namespace) -> int | None:
    """``--message-size`` in bytes; a unit typed apart from its number (``--size 1 GiB``)
    is among the free words and is read with it (it names no GPU).

    Raises:
        ConfigError: Not a size.
    """
    if args.size is None:
        return None
    text = args.size
    units = [word for word in args.gpus if is_unit_word(word)]
    if units and text.replace(".", "", 1).isdigit():
        text += units[0]
        args.gpus.remove(units[0])
    return parse_message_size(text, "--message-size")


def endpoints(args: argparse.Namespace) -> tuple[str, str]:
    """(source, destination) from ``--src``/``--dst`` or the positional GPUs, in that order.

    Raises:
        ConfigError: Not exactly two GPUs in all.
    """
    given = [args.src, args.dst]
    free = list(args.gpus)
    for i, value in enumerate(given):
        if value is None and free:
            given[i] = free.pop(0)
    if free:
        extra = " ".join(free)
        raise ConfigError(f"path: two GPUs, not also {extra} (give SRC DST or --src/--dst)")
    if given[0] is None or given[1] is None:
        missing = " and ".join(n for n, v in zip(("--src", "--dst"), given) if v is None)
        raise ConfigError(f"path: give the two GPUs: SRC DST, or {missing}")
    return given[0], given[1]


def run(args: argparse.Namespace) -> int:
    """Route and print; returns 0.

    Raises:
        FabricError: Unknown topology or GPU ids, identical endpoints, not two GPUs.
    """
    from fabricui.render.path import render_path
    from fabricui.services.path import find_path

    size = message_size(args)
    src, dst = endpoints(args)
    request = PathRequest(topology_request(args), src, dst, size, args.hosts)
    result = find_path(request, catalog(args))
    if args.json:
        print_json(result.to_json())
    else:
        if result.job is not None:
            print(result.job.summary())
        print(render_path(result.report, result.fabric))
    return 0
