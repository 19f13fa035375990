"""``fabricui collective``: time, algbw and busbw of a collective per size, as nccl-tests."""

from __future__ import annotations

import argparse
import json
import math
from typing import Any

from fabricui.errors import ConfigError
from fabricui.vocabulary import DEFAULT_TOPOLOGY, OPS

#: Ways to pick the group of GPUs from the fabric: every GPU, the GPUs of host (node) 0
#: (``node`` is the same), those of scale-up domain 0 (the hosts sharing an NVLink switch,
#: e.g. an NVL72 rack), or GPU 0 of every node.
GROUPS = ("all", "host", "node", "domain", "per-node")


def add_parser(subparsers: Any) -> argparse.ArgumentParser:
    """Add the ``collective`` subcommand."""
    parser = subparsers.add_parser(
        "collective", help="predict a collective per size (time, algbw, busbw, algorithm)"
    )
    parser.add_argument("op", choices=OPS, metavar="OP", help=", ".join(OPS))
    parser.add_argument(
        "--topology",
        "-t",
        default=DEFAULT_TOPOLOGY,
        help="built-in topology id or YAML file (default: dgx-h100-pod)",
    )
    parser.add_argument("--nodes", type=int, help="rescale the topology to N nodes")
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
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    return parser


def sweep_sizes(text: str) -> list[int]:
    """``8:16G`` -> [8, 16, 32, ..., 16 GiB] (doubling, both ends included).

    Raises:
        ConfigError: Malformed range, or the start is not below the end.
    """
    from fabricui.units import parse_size

    if text.count(":") != 1:
        raise ConfigError(f"invalid --sweep {text!r}: use START:END, e.g. 8:16G")
    start, end = (parse_size(part) for part in text.split(":"))
    if start < 1 or end < start:
        raise ConfigError(f"invalid --sweep {text!r}: need 1 <= START <= END")
    count = int(math.floor(math.log2(end / start))) + 1
    return [start * 2**i for i in range(count)]


def _sizes(args: argparse.Namespace) -> list[int]:
    from fabricui.units import parse_size

    if args.sweep:
        return sweep_sizes(args.sweep)
    if not args.size:
        raise ConfigError("fabricui collective: give --size S [S ...] or --sweep A:B")
    return [parse_size(s) for s in args.size]


def _group_ranks(args: argparse.Namespace, fabric):  # type: ignore[no-untyped-def]
    import numpy as np

    g = fabric.gpus_per_node
    if args.gpus is not None:
        if not 1 <= args.gpus <= fabric.n_gpus:
            raise ConfigError(f"--gpus must be within 1..{fabric.n_gpus} (got {args.gpus})")
        return np.arange(args.gpus)
    if args.group in ("node", "host"):
        return np.arange(g)
    if args.group == "domain":
        return np.arange(min(fabric.gpus_per_domain, fabric.n_gpus))
    if args.group == "per-node":
        return np.arange(fabric.nodes) * g
    return np.arange(fabric.n_gpus)


def _rows(prediction) -> list[dict[str, Any]]:  # type: ignore[no-untyped-def]
    return [
        {
            "size_bytes": int(size),
            "algorithm": algo,
            "time_us": float(t),
            "algbw_GBps": float(alg),
            "busbw_GBps": float(bus),
        }
        for size, algo, t, alg, bus in zip(
            prediction.size_bytes,
            prediction.algorithm,
            prediction.time_us,
            prediction.algbw_GBps,
            prediction.busbw_GBps,
        )
    ]


def run(args: argparse.Namespace) -> int:
    """Predict and print; returns 0."""
    import numpy as np

    from fabricui.engine.collectives import algbw_GBps, bus_factor, ideal_time_us

    sizes = _sizes(args)
    if args.ideal:
        if not args.nranks or args.nranks < 1 or not args.bw:
            raise ConfigError("--ideal needs --nranks N (>= 1) and --bw BW, e.g. 100GB/s")
        from fabricui.units import parse_bandwidth_GBps

        bw = parse_bandwidth_GBps(args.bw)
        times = ideal_time_us(args.op, np.asarray(sizes, dtype=float), args.nranks, bw)
        alg = algbw_GBps(sizes, times)
        rows = [
            {
                "size_bytes": s,
                "algorithm": "ideal",
                "time_us": float(t),
                "algbw_GBps": float(a),
                "busbw_GBps": float(a) * bus_factor(args.op, args.nranks),
            }
            for s, t, a in zip(sizes, times, alg)
        ]
        result = {"op": args.op, "topology": None, "nranks": args.nranks, "rows": rows}
    else:
        from fabricui.engine.evaluate import evaluate_collective
        from fabricui.hwdb.resolve import resolve_topology
        from fabricui.services.session import (
            build_fabric_with_plugins,
            collective_algorithms,
            load_catalog_with_plugins,
        )

        catalog = load_catalog_with_plugins(
            getattr(args, "hwdb", None) or [], calibration=getattr(args, "calibration", None)
        )
        spec = resolve_topology(args.topology, catalog, args.nodes)
        fabric = build_fabric_with_plugins(spec, catalog)
        ranks = _group_ranks(args, fabric)
        prediction = evaluate_collective(
            fabric, args.op, sizes, ranks=ranks, algorithms=collective_algorithms(), algo=args.algo
        )
        result = {
            "op": args.op,
            "topology": fabric.spec.id,
            "nranks": int(len(ranks)),
            "rows": _rows(prediction),
        }
    if args.json:
        print(json.dumps(result, indent=2))
    else:
        print(render(result))
    return 0


def render(result: dict[str, Any]) -> str:
    """nccl-tests-like table of one collective's rows."""
    from fabricui.units import format_bytes

    where = f" on {result['topology']}" if result["topology"] else " (ideal)"
    lines = [
        f"{result['op']}{where}, {result['nranks']} ranks",
        f"{'size':>10}  {'time us':>12}  {'algbw GB/s':>10}  {'busbw GB/s':>10}  algorithm",
    ]
    for row in result["rows"]:
        lines.append(
            f"{format_bytes(row['size_bytes']):>10}  {row['time_us']:>12.2f}  "
            f"{row['algbw_GBps']:>10.2f}  {row['busbw_GBps']:>10.2f}  {row['algorithm']}"
        )
    return "\n".join(lines)
