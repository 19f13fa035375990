"""The options every command shares, declared once: the topology (``--topology/-t``,
``--nodes``), the hardware database (``--hwdb``, ``--calibration``) and ``--json``; and the
service requests they become."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING

from fabricui.services.requests import CatalogRequest, TopologyRequest
from fabricui.vocabulary import DEFAULT_TOPOLOGY

if TYPE_CHECKING:
    from fabricui.hwdb.catalog import Catalog


def add_topology_options(parser: argparse.ArgumentParser) -> None:
    """Add ``--topology/-t ID|FILE`` and ``--nodes N``.

    Args:
        parser: The command's parser.
    """
    parser.add_argument(
        "--topology",
        "-t",
        default=DEFAULT_TOPOLOGY,
        help="built-in topology id (see `fabricui topologies`) or a YAML file path "
        f"(default: {DEFAULT_TOPOLOGY})",
    )
    parser.add_argument("--nodes", type=int, help="rescale the topology to N nodes")


def add_catalog_options(parser: argparse.ArgumentParser) -> None:
    """Add ``--hwdb DIR`` (repeatable) and ``--calibration FILE`` (global options).

    Args:
        parser: The top-level parser.
    """
    parser.add_argument(
        "--hwdb",
        action="append",
        type=Path,
        default=[],
        metavar="DIR",
        help="extra hardware-database directory whose records add to or override the built-in ones",
    )
    parser.add_argument(
        "--calibration",
        type=Path,
        metavar="FILE",
        help="calibration overlay from `fabricui calibrate`: fitted link efficiency and "
        "latency applied to every command and the TUI",
    )


def add_json_option(parser: argparse.ArgumentParser, help_text: str = "print JSON") -> None:
    """Add ``--json``."""
    parser.add_argument("--json", action="store_true", help=help_text)


def topology_request(args: argparse.Namespace) -> TopologyRequest:
    """The topology the options name (the default topology when they name none)."""
    return TopologyRequest(
        getattr(args, "topology", None) or DEFAULT_TOPOLOGY, getattr(args, "nodes", None)
    )


def catalog_request(args: argparse.Namespace) -> CatalogRequest:
    """The hardware database the global options name."""
    return CatalogRequest(
        tuple(getattr(args, "hwdb", None) or ()), getattr(args, "calibration", None)
    )


def catalog(args: argparse.Namespace) -> Catalog:
    """The catalog the global options name, loaded with the plugins.

    Raises:
        HwdbError: A database file or the calibration overlay is malformed.
    """
    from fabricui.services.session import load_catalog

    return load_catalog(catalog_request(args))
