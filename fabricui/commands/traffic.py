"""``fabricui traffic``: max-min fair rates of a traffic pattern and the busiest links."""

from __future__ import annotations

import argparse
import json
from typing import Any

from fabricui.errors import ConfigError
from fabricui.vocabulary import DEFAULT_TOPOLOGY, PATTERNS


def add_parser(subparsers: Any) -> argparse.ArgumentParser:
    """Add the ``traffic`` subcommand."""
    parser = subparsers.add_parser(
        "traffic", help="max-min fair rates of a traffic pattern; the most loaded links"
    )
    parser.add_argument(
        "--topology",
        "-t",
        default=DEFAULT_TOPOLOGY,
        help="built-in topology id or YAML file (default: dgx-h100-pod)",
    )
    parser.add_argument("--nodes", type=int, help="rescale the topology to N nodes")
    parser.add_argument(
        "--pattern",
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
    return parser


def run(args: argparse.Namespace) -> int:
    """Simulate and print; returns 0."""
    import numpy as np

    from fabricui.engine.traffic import pattern_flows, simulate_traffic
    from fabricui.hwdb.resolve import resolve_topology
    from fabricui.services.session import build_fabric_with_plugins, load_catalog_with_plugins

    catalog = load_catalog_with_plugins(
        getattr(args, "hwdb", None) or [], calibration=getattr(args, "calibration", None)
    )
    spec = resolve_topology(args.topology, catalog, args.nodes)
    fabric = build_fabric_with_plugins(spec, catalog)
    n = fabric.n_gpus if args.gpus is None else args.gpus
    if not 2 <= n <= fabric.n_gpus:
        raise ConfigError(f"--gpus must be within 2..{fabric.n_gpus} (got {n})")
    if args.top < 1:
        raise ConfigError(f"--top must be at least 1 (got {args.top})")
    src, dst = pattern_flows(args.pattern, np.arange(n), args.seed)
    report = simulate_traffic(fabric, src, dst)
    busiest = report.busiest_links(args.top)
    rates = report.rate_GBps
    links = [
        {
            "link": f"{fabric.device_name(int(fabric.link_src[k]))}->"
            f"{fabric.device_name(int(fabric.link_dst[k]))}",
            "generation": fabric.generations[int(fabric.link_gen[k])],
            "load_GBps": float(report.link_load_GBps[k]),
            "capacity_GBps": float(report.link_capacity_GBps[k]),
            "utilization": float(report.link_load_GBps[k] / report.link_capacity_GBps[k]),
        }
        for k in busiest
    ]
    summary = {
        "min_GBps": float(rates.min()),
        "median_GBps": float(np.median(rates)),
        "max_GBps": float(rates.max()),
        "total_GBps": float(rates.sum()),
    }
    if args.json:
        print(
            json.dumps(
                {
                    "topology": fabric.spec.id,
                    "pattern": args.pattern,
                    "gpus": n,
                    "flows": [
                        {
                            "src": fabric.gpu_name(int(a)),
                            "dst": fabric.gpu_name(int(b)),
                            "rate_GBps": float(r),
                        }
                        for a, b, r in zip(src, dst, rates)
                    ],
                    "rates": summary,
                    "busiest_links": links,
                }
            )
        )
        return 0
    print(f"{args.pattern} among {n} GPUs of {fabric.spec.id}: {src.size} flows, max-min fair")
    print(
        f"flow rate GB/s: min {summary['min_GBps']:.3g}  median {summary['median_GBps']:.3g}"
        f"  max {summary['max_GBps']:.3g}  (total {summary['total_GBps']:.4g})"
    )
    print("busiest links (achievable capacity = bandwidth x efficiency):")
    width = max((len(x["link"]) for x in links), default=4)
    for x in links:
        print(
            f"  {x['link']:<{width}}  {x['generation']:<8} {x['load_GBps']:9.2f} / "
            f"{x['capacity_GBps']:8.2f} GB/s  {x['utilization']:6.1%}"
        )
    slowest = np.argsort(rates, kind="stable")[:5]
    print("slowest flows:")
    for i in slowest:
        print(
            f"  {fabric.gpu_name(int(src[i]))} -> {fabric.gpu_name(int(dst[i]))}  "
            f"{rates[i]:.3g} GB/s"
        )
    return 0
