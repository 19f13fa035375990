"""``fabricui collective``: time, algbw and busbw of a collective per size, as nccl-tests."""

from __future__ import annotations

import argparse
from typing import Any

from fabricui.commands.options import (
    add_hosts_option,
    add_json_option,
    add_topology_options,
    catalog,
    completes,
    topology_request,
)
from fabricui.errors import ConfigError
from fabricui.render.output import print_json
from fabricui.services.command_requests import CollectiveRequest
from fabricui.services.requests import GROUPS
from fabricui.vocabulary import OPS


def add_parser(subparsers: Any) -> argparse.ArgumentParser:
    """Add the ``collective`` subcommand."""
    parser: argparse.ArgumentParser = subparsers.add_parser(
        "collective", help="predict a collective per size (time, algbw, busbw, algorithm)"
    )
    op = parser.add_argument(
        "op",
        nargs="?",
        metavar="OP",
        help=f"{', '.join(OPS)} (also allreduce, all-reduce, AllReduce ...); before or after "
        "the options",
    )
    completes(op, OPS)
    add_topology_options(parser)
    parser.add_argument("--gpus", type=int, help="use the first N GPUs (global ranks 0..N-1)")
    parser.add_argument(
        "--group",
        choices=GROUPS,
        default="all",
        help="all GPUs, the GPUs of host 0 (node is the same), of scale-up domain 0 (an "
        "NVLink rack), or GPU 0 of every node",
    )
    sizes = parser.add_mutually_exclusive_group()
    sizes.add_argument(
        "--size",
        "--message-size",
        dest="size",
        nargs="+",
        metavar="S",
        help="sizes: 8, 64K, 1G (binary, as nccl-tests), 1GB, 1GiB",
    )
    sizes.add_argument("--sweep", metavar="A:B", help="sizes from A to B doubling, e.g. 8:16G")
    parser.add_argument(
        "--algo",
        default="auto",
        help="auto (fastest per size, as NCCL), or ring, tree, p2p, nvls, nvlstree, sharp, ...",
    )
    parser.add_argument(
        "--ideal",
        action="store_true",
        help="textbook bandwidth-only time (needs --nranks and --bw)",
    )
    parser.add_argument("--nranks", type=int, help="ranks for --ideal")
    parser.add_argument("--bw", help="per-rank bandwidth for --ideal, e.g. 100GB/s or 400Gb/s")
    add_hosts_option(parser, "the group is the job's GPUs, compared with as many packed")
    add_json_option(parser, "print one JSON object")
    return parser


def _op_and_sizes(args: argparse.Namespace) -> tuple[str, list[int]]:
    """The operation and the sizes, wherever the operation was typed: ``--size 1G
    all_reduce`` hands the op to ``--size`` (it takes several values), so a size that is
    an operation's name is the operation.

    Raises:
        ConfigError: No operation, two, an unknown one (with the nearest names), or no sizes.
    """
    from fabricui.errors import unknown_id_message
    from fabricui.units import parse_message_size, parse_size_sweep
    from fabricui.vocabulary import op_name

    words = list(args.size or [])
    named = [w for w in words if op_name(w) is not None]
    typed = [args.op] if args.op else []
    if len(typed) + len(named) > 1:
        raise ConfigError(f"collective: one operation, not {', '.join(typed + named)}")
    if not typed and not named:
        raise ConfigError(f"collective: give the operation ({', '.join(OPS)})")
    text = (typed + named)[0]
    op = op_name(text)
    if op is None:
        raise ConfigError(unknown_id_message("operation", text, OPS))
    words = [w for w in words if w not in named]
    if args.sweep:
        return op, parse_size_sweep(args.sweep, "--sweep")
    if not words:
        raise ConfigError("collective: give --size S [S ...] or --sweep A:B")
    return op, [parse_message_size(w) for w in words]


def run(args: argparse.Namespace) -> int:
    """Predict and print; returns 0.

    Raises:
        FabricError: Bad sizes, topology, group, algorithm; ``--ideal`` without its numbers.
    """
    from fabricui.services.collective import ideal_collective, predict_collective

    op, sizes = _op_and_sizes(args)
    if args.ideal:
        if not args.nranks or args.nranks < 1 or not args.bw:
            raise ConfigError("--ideal needs --nranks N (>= 1) and --bw BW, e.g. 100GB/s")
        from fabricui.units import parse_bandwidth_GBps

        result = ideal_collective(op, sizes, args.nranks, parse_bandwidth_GBps(args.bw))
    else:
        request = CollectiveRequest(
            topology_request(args), op, tuple(sizes), args.group, args.gpus, args.algo, args.hosts
        )
        from fabricui.render.progress import terminal_progress
        from fabricui.services.collective import COLLECTIVE_PHASES

        phases = COLLECTIVE_PHASES + (args.hosts is not None)
        with terminal_progress("collective", phases, quiet=args.json) as progress:
            result = predict_collective(request, catalog(args), progress=progress)
    if args.json:
        print_json(result.to_json())
    else:
        print(render(result.to_json()))
    return 0


def render(result: dict[str, Any]) -> str:
    """nccl-tests-like table of one collective's rows."""
    from fabricui.render.table import text_table
    from fabricui.units import format_bytes

    where = f" on {result['topology']}" if result["topology"] else " (ideal)"
    rows = [("size", "time us", "algbw GB/s", "busbw GB/s", "algorithm")]
    rows += [
        (
            format_bytes(row["size_bytes"]),
            f"{row['time_us']:.2f}",
            f"{row['algbw_GBps']:.2f}",
            f"{row['busbw_GBps']:.2f}",
            row["algorithm"],
        )
        for row in result["rows"]
    ]
    lines = [f"{result['op']}{where}, {result['nranks']} ranks"]
    job = result.get("job")
    if job is not None:
        rows[0] = (*rows[0], "packed busbw")
        for i, packed in enumerate(result["packed_rows"], start=1):
            rows[i] = (*rows[i], f"{packed['busbw_GBps']:.2f}")
        lines.append(
            f"job on {len(job['hosts'])} host(s) {job['hostlist']}: {job['top_tier']} "
            "is the highest tier its traffic climbs; 'packed' is as many GPUs from rank 0"
        )
    return "\n".join([*lines, *text_table(rows, right={0, 1, 2, 3, 5})])
