"""``fabricui traffic``: max-min fair rates of a traffic pattern and the busiest links."""

from __future__ import annotations

import argparse
from typing import Any

from fabricui.commands.options import (
    add_hosts_option,
    add_topology_options,
    catalog,
    topology_request,
)
from fabricui.render.output import print_json
from fabricui.render.progress import terminal_progress
from fabricui.render.table import text_table
from fabricui.services.command_requests import TrafficRequest
from fabricui.vocabulary import PATTERNS, op_name


def pattern_name(text: str) -> str:
    """A pattern as users spell it (``alltoall``, ``All-to-All``, ``random_pairs``)."""
    key = text.strip().lower()
    return "all_to_all" if op_name(key) == "all_to_all" else key.replace("_", "-")


def add_parser(subparsers: Any) -> argparse.ArgumentParser:
    """Add the ``traffic`` subcommand."""
    parser: argparse.ArgumentParser = subparsers.add_parser(
        "traffic", help="max-min fair rates of a traffic pattern; the most loaded links"
    )
    add_topology_options(parser)
    parser.add_argument(
        "--pattern",
        type=pattern_name,
        choices=PATTERNS,
        default="all_to_all",
        help="all_to_all, ring (each GPU to the next) or random-pairs",
    )
    parser.add_argument("--gpus", type=int, help="the first N GPUs (default: all)")
    parser.add_argument("--seed", type=int, default=0, help="seed for random-pairs")
    parser.add_argument("--top", type=int, default=10, help="busiest links to list")
    parser.add_argument(
        "--json", action="store_true", help="one JSON object, with every flow's rate"
    )
    add_hosts_option(parser, "the pattern runs among the job's GPUs")
    return parser


def run(args: argparse.Namespace) -> int:
    """Simulate and print; returns 0.

    Raises:
        FabricError: Unknown topology, a GPU count or ``--top`` out of range.
    """
    from fabricui.services.traffic import TRAFFIC_PHASES, simulate

    request = TrafficRequest(
        topology_request(args), args.pattern, args.gpus, args.seed, args.top, args.hosts
    )
    with terminal_progress("traffic", TRAFFIC_PHASES, quiet=args.json) as progress:
        result = simulate(request, catalog(args), progress=progress)
    if args.json:
        print_json(result.to_json(), indent=None)
        return 0
    rates = result.rates
    print(
        f"{result.pattern} among {result.gpus} GPUs of {result.topology}: "
        f"{result.n_flows:,} flows, max-min fair"
    )
    print(
        f"flow rate GB/s: min {rates['min_GBps']:.3g}  median {rates['median_GBps']:.3g}"
        f"  max {rates['max_GBps']:.3g}  (total {rates['total_GBps']:.4g})"
    )
    print("busiest links (achievable capacity = bandwidth x efficiency):")
    rows = [
        (
            x["link"],
            x["generation"],
            f"{x['load_GBps']:.2f} /",
            f"{x['capacity_GBps']:.2f} GB/s",
            f"{x['utilization']:.1%}",
        )
        for x in result.busiest_links
    ]
    print("\n".join(text_table(rows, right={2, 3, 4}, indent="  ")))
    print("slowest flows:")
    for src, dst, rate in result.slowest_flows(5):
        print(f"  {src} -> {dst}  {rate:.3g} GB/s")
    return 0
