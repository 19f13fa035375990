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
from fabricui.units import is_unit_word, join_size_units, parse_message_size


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


def size_and_gpus(args: argparse.Namespace) -> tuple[int | None, list[str]]:
    """``--message-size`` in bytes (None without it) and the GPU words: a unit typed apart
    from the size's number (``--size 1 GiB``) lands among the free words, names no GPU, and
    is read with the size.

    Raises:
        ConfigError: Not a size.
    """
    gpus = list(args.gpus)
    if args.size is None:
        return None, gpus
    text = args.size
    unit = next((word for word in gpus if is_unit_word(word)), None)
    if unit is not None and len(joined := join_size_units([text, unit])) == 1:
        text = joined[0]
        gpus.remove(unit)
    return parse_message_size(text, "--message-size"), gpus


def endpoints(args: argparse.Namespace, free: list[str]) -> tuple[str, str]:
    """(source, destination) from ``--src``/``--dst`` or the positional GPUs ``free``, in
    that order.

    Raises:
        ConfigError: Not exactly two GPUs in all.
    """
    given = [args.src, args.dst]
    free = list(free)
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

    size, gpus = size_and_gpus(args)
    src, dst = endpoints(args, gpus)
    request = PathRequest(topology_request(args), src, dst, size, args.hosts)
    result = find_path(request, catalog(args))
    if args.json:
        print_json(result.to_json())
    else:
        if result.job is not None:
            print(result.job.summary())
        print(render_path(result.report, result.fabric))
    return 0
