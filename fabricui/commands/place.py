"""``fabricui place N``: the N free hosts of an imported cluster whose traffic stays lowest in
the tree, priced against a random pick of as many."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from fabricui.commands.options import (
    add_json_option,
    add_topology_options,
    catalog,
    topology_request,
)
from fabricui.errors import one_line
from fabricui.render.output import print_json


def add_parser(subparsers: Any) -> argparse.ArgumentParser:
    """Add the ``place`` subcommand."""
    parser: argparse.ArgumentParser = subparsers.add_parser(
        "place",
        help="pick N free hosts of an imported cluster whose traffic stays lowest in the tree "
        "(whole leaves, rails, pods, NVLink domains), priced against a random pick",
    )
    parser.add_argument("count", metavar="N", type=int, help="hosts wanted")
    add_topology_options(parser)
    parser.add_argument(
        "--free",
        metavar="FILE|HOSTLIST",
        help="the free hosts: a `sinfo` or `scontrol show node` output (idle nodes that are "
        "not drained, down or reserved), a file of host names one per line (`scontrol show "
        "hostnames`; hostlists allowed, '#' comments), or a Slurm hostlist of the cluster's "
        "hosts; a value with a '/' or naming a file is read as a file; default every host",
    )
    parser.add_argument(
        "--jobs",
        metavar="FILE",
        help="running jobs (`squeue`, `scontrol show job`, `sacct` with NodeList): their hosts "
        "are not free, and the uplinks they share with the pick are priced; a file none of "
        "whose running jobs' hosts is on the cluster is refused",
    )
    parser.add_argument(
        "--seed", type=int, default=0, help="seed of the random pick, >= 0 (default 0)"
    )
    parser.add_argument("--no-price", action="store_true", help="pick only: skip pricing the pick")
    add_json_option(parser, "print one JSON object (hosts, max_tier, price)")
    return parser


def run(args: argparse.Namespace) -> int:
    """Pick, price and print (warnings on stderr); returns 0.

    Raises:
        FabricError: No host names in the topology, bad --free/--jobs, too few free hosts.
    """
    from fabricui.services.place import PlaceRequest, place

    request = PlaceRequest(
        topology_request(args),
        args.count,
        free=args.free,
        jobs=args.jobs,
        seed=args.seed,
        price=not args.no_price,
    )
    result = place(request, catalog(args))
    for line in result.warnings:
        print(f"fabricui: warning: {one_line(line)}", file=sys.stderr)
    if args.json:
        print_json(result.to_json())
    else:
        print(result.summary())
    return 0
