"""``fabricui explore`` (and ``fabricui`` alone): open the interactive explorer."""

from __future__ import annotations

import argparse
from typing import Any

from fabricui.errors import ConfigError

#: Views the explorer can open on.
VIEWS = ("topology", "pyramid", "collectives", "strategies", "plugins")


def add_parser(subparsers: Any) -> argparse.ArgumentParser:
    """Add the ``explore`` subcommand.

    Args:
        subparsers: The object ``ArgumentParser.add_subparsers()`` returned.
    """
    parser = subparsers.add_parser(
        "explore", help="open the interactive explorer (also what `fabricui` alone does)"
    )
    parser.add_argument(
        "--topology",
        "-t",
        default=None,
        help="built-in topology id or a YAML file path (default: dgx-h100-pod)",
    )
    parser.add_argument("--nodes", type=int, help="rescale the topology to N nodes")
    parser.add_argument("--src", help="source GPU shown first: n<node>.g<gpu> or a rank")
    parser.add_argument("--dst", help="destination GPU shown first")
    parser.add_argument(
        "--size", help="message size of the path panel: 8, 64K, 1G (binary), 1GB (default: 1G)"
    )
    parser.add_argument("--view", default="topology", help=f"view shown first: {', '.join(VIEWS)}")
    return parser


def run(args: argparse.Namespace) -> int:
    """Check the options, then run the explorer until the user quits; returns 0.

    Options are checked before the screen is taken over, so that a typo is one line on
    stderr (exit status 2) rather than a modal. Without options nothing is loaded before
    the first paint: the explorer starts as fast as Textual does.

    Args:
        args: Parsed arguments; every attribute is optional (``fabricui`` alone passes the
            top-level namespace).

    Raises:
        FabricError: Unknown topology, bad node count, GPU id, size or view.
    """
    from fabricui.hwdb.resolve import DEFAULT_TOPOLOGY

    topology = getattr(args, "topology", None) or DEFAULT_TOPOLOGY
    nodes = getattr(args, "nodes", None)
    src, dst = getattr(args, "src", None), getattr(args, "dst", None)
    view = getattr(args, "view", None) or "topology"
    size_text = getattr(args, "size", None)
    hwdb = getattr(args, "hwdb", None) or []
    if view not in VIEWS:
        raise ConfigError(f"unknown view {view!r} (one of {', '.join(VIEWS)})")
    size_bytes = None
    if size_text:
        from fabricui.units import parse_size

        size_bytes = parse_size(size_text)
        if size_bytes < 1:
            raise ConfigError(f"--size must be at least 1 byte (got {size_text})")
    calibration = getattr(args, "calibration", None)
    catalog = None
    if hwdb or calibration or topology != DEFAULT_TOPOLOGY or nodes is not None or src or dst:
        catalog = _check(topology, nodes, src, dst, hwdb, calibration)

    from fabricui.tui.app import make_app

    app = make_app(
        topology=topology,
        nodes=nodes,
        src=src,
        dst=dst,
        view=view,
        catalog=catalog,
        size_bytes=size_bytes,
    )
    app.run()
    return 0


def _check(
    topology: str,
    nodes: int | None,
    src: str | None,
    dst: str | None,
    hwdb: Any,
    calibration: Any = None,
) -> Any:
    """Load the catalog (calibrated when asked) and the topology once to reject bad input;
    returns the catalog, which the app then keeps for every reload."""
    from fabricui.services.session import load_catalog_with_plugins
    from fabricui.tui.data import FabricData

    catalog = load_catalog_with_plugins(hwdb, calibration=calibration)
    data = FabricData.load(topology, nodes, catalog)
    ranks = [data.parse_gpu(gpu) for gpu in (src, dst) if gpu]
    if len(ranks) == 2 and ranks[0] == ranks[1]:
        raise ConfigError(f"source and destination are the same GPU ({src})")
    return catalog
