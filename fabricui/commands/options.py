"""The options every command shares, declared once: the topology (``--topology/-t``,
``--nodes``), the hardware database (``--hwdb``, ``--calibration``) and ``--json``; and the
service requests they become."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING

from fabricui.bounds import NIC_PORT_GBPS, checked
from fabricui.services.requests import CatalogRequest, TopologyRequest, WhatIf
from fabricui.vocabulary import DEFAULT_TOPOLOGY

if TYPE_CHECKING:
    from fabricui.hwdb.catalog import Catalog


def add_topology_options(parser: argparse.ArgumentParser, top_level: bool = False) -> None:
    """Add ``--topology/-t ID|FILE``, ``--nodes N`` and the what-if links (``--nic-gbps``,
    ``--scale-up-links``).

    The same options exist before the command (``fabricui -t X path ...``, and bare
    ``fabricui -t X`` for the explorer): a command's own copy leaves what was given before
    it alone unless given again (argparse's SUPPRESS default).

    Args:
        parser: The command's parser (or the top-level one, ``top_level=True``).
        top_level: Declare the defaults (None) that the commands' copies keep.
    """
    unset = None if top_level else argparse.SUPPRESS
    parser.add_argument(
        "--topology",
        "-t",
        default=unset,
        help="built-in topology id (see `fabricui topologies`) or a YAML file path "
        f"(default: {DEFAULT_TOPOLOGY})",
    )
    parser.add_argument("--nodes", type=int, default=unset, help="rescale the topology to N nodes")
    parser.add_argument(
        "--nic-gbps",
        type=float,
        default=unset,
        metavar="GBPS",
        help="what if every NIC port ran at GBPS Gb/s",
    )
    parser.add_argument(
        "--scale-up-links",
        type=int,
        default=unset,
        metavar="N",
        help="what if each GPU (NVSwitch) or GPU pair (mesh) had N scale-up links",
    )


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
        "--max-memory",
        metavar="SIZE",
        help="memory a request may use, e.g. 8G (default 2G, or $FABRICUI_MAX_MEMORY); "
        "larger work is refused up front with what would fit",
    )
    parser.add_argument(
        "--calibration",
        type=Path,
        metavar="FILE",
        help="calibration overlay from `fabricui calibrate`: fitted link efficiency and "
        "latency applied to every command and the TUI",
    )


def add_hosts_option(parser: argparse.ArgumentParser, what: str) -> None:
    """Add ``--hosts HOSTLIST``: a Slurm job's hosts on an imported cluster.

    Args:
        parser: The command's parser.
        what: What the job's GPUs become (``the group``).
    """
    parser.add_argument(
        "--hosts",
        metavar="HOSTLIST",
        help=f"a job's hosts on an imported cluster (Slurm hostlist, e.g. 'node[001-064]'; "
        f"default $SLURM_JOB_NODELIST on such a cluster): {what}",
    )


def add_json_option(parser: argparse.ArgumentParser, help_text: str = "print JSON") -> None:
    """Add ``--json``."""
    parser.add_argument("--json", action="store_true", help=help_text)


def topology_request(args: argparse.Namespace) -> TopologyRequest:
    """The topology the options name (the default topology when they name none), with
    the what-if links they ask for."""
    nic_gbps = getattr(args, "nic_gbps", None)
    if nic_gbps is not None:
        nic_gbps = checked(nic_gbps, NIC_PORT_GBPS, "--nic-gbps")
    links = getattr(args, "scale_up_links", None)
    what_if = WhatIf(nic_gbps, links) if nic_gbps is not None or links is not None else None
    return TopologyRequest(
        getattr(args, "topology", None) or DEFAULT_TOPOLOGY, getattr(args, "nodes", None), what_if
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
