"""``fabricui traffic``: max-min fair rates of a traffic pattern and the busiest links."""

from __future__ import annotations

import argparse
from typing import Any

from fabricui.commands.options import (
    add_hosts_option,
    add_topology_options,
    catalog,
    completes,
    take_free_words,
    topology_request,
)
from fabricui.errors import ConfigError, unknown_id_message
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
    pattern = parser.add_argument(
        "pattern_word",
        nargs="?",
        metavar="PATTERN",
        help="the pattern as a word, as --pattern (`traffic ring`)",
    )
    completes(pattern, PATTERNS)
    take_free_words(parser, "words")
    parser.add_argument(
        "--pattern",
        type=pattern_name,
        choices=PATTERNS,
        help="all_to_all (the default), ring (each GPU to the next) or random-pairs",
    )
    parser.add_argument("--gpus", type=int, help="the first N GPUs (default: all)")
    parser.add_argument(
        "--seed", type=int, default=0, help="seed for random-pairs, >= 0 (default: 0)"
    )
    parser.add_argument("--top", type=int, default=10, help="busiest links to list")
    parser.add_argument(
        "--json", action="store_true", help="one JSON object, with every flow's rate"
    )
    add_hosts_option(parser, "the pattern runs among the job's GPUs")
    return parser


def pattern_of(args: argparse.Namespace) -> str:
    """The pattern typed as a word (``traffic ring``) or by ``--pattern``; all_to_all when
    neither.

    Raises:
        ConfigError: An unknown word (with the nearest patterns), two words, or a word and
            a different ``--pattern``.
    """
    words = ([args.pattern_word] if args.pattern_word else []) + list(args.words)
    if len(words) > 1:
        raise ConfigError(f"traffic: one pattern, not {', '.join(words)}")
    if not words:
        return args.pattern or PATTERNS[0]
    word = pattern_name(words[0])
    if word not in PATTERNS:
        raise ConfigError(unknown_id_message("pattern", words[0], PATTERNS))
    if args.pattern is not None and args.pattern != word:
        raise ConfigError(f"traffic: one pattern, not {words[0]} and --pattern {args.pattern}")
    return word


def run(args: argparse.Namespace) -> int:
    """Simulate and print; returns 0.

    Raises:
        FabricError: Unknown topology, a GPU count or ``--top`` out of range.
    """
    from fabricui.services.traffic import TRAFFIC_PHASES, simulate

    request = TrafficRequest(
        topology_request(args), pattern_of(args), args.gpus, args.seed, args.top, args.hosts
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
        f"flow rate GB/s: min {rate_text(rates['min_GBps'])}  median "
        f"{rate_text(rates['median_GBps'])}  max {rate_text(rates['max_GBps'])}  (total "
        f"{rate_text(rates['total_GBps'])})"
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
        print(f"  {src} -> {dst}  {rate_text(rate)} GB/s")
    return 0


def rate_text(value_GBps: float) -> str:
    """A rate [GB/s] to three significant digits and never in exponent form: ``0.392``,
    ``46.8``, ``10,520`` (a total of thousands reads as ``1.2e+04`` in ``%g``)."""
    if value_GBps >= 1000:
        return f"{value_GBps:,.0f}"
    return f"{value_GBps:.3g}"
