"""``fabricui probe``: collect this node's GPU and network outputs into a folder and a node spec.

Runs each tool that is present with a timeout (``fabricui.services.probe``), writes the raw
outputs, ``probe.json`` and, when a GPU matrix was read, ``node.yaml`` (for ``fabricui import
ibnetdiscover ... --node node.yaml``). Missing tools are listed, a tool that printed what
cannot be read is ``unreadable``; the exit status is 0 unless the folder cannot be written.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from fabricui.commands.options import written_path


def add_parser(subparsers: Any) -> argparse.ArgumentParser:
    """Add the ``probe`` subcommand.

    Args:
        subparsers: The object ``ArgumentParser.add_subparsers()`` returned.

    Returns:
        The subcommand's parser.
    """
    parser = subparsers.add_parser(
        "probe",
        help="collect this node's nvidia-smi, ibstat, rocm-smi, lspci outputs and write a "
        "node spec (missing tools are listed, not fatal)",
    )
    parser.add_argument(
        "-o",
        "--output",
        type=written_path,
        metavar="DIR",
        help="folder for the outputs (default: fabricui-probe-HOSTNAME)",
    )
    parser.add_argument(
        "--force",
        action="store_true",
        help="reuse a non-empty folder: replace probe's files in it and remove (and list) "
        "those an earlier probe wrote that this one does not",
    )
    parser.add_argument(
        "--timeout", type=float, default=30.0, metavar="S", help="seconds per tool (default 30)"
    )
    parser.add_argument(
        "--ibnetdiscover",
        action="store_true",
        help="also run ibnetdiscover (it scans the whole InfiniBand fabric)",
    )
    parser.add_argument("--json", action="store_true", help="print the report as JSON")
    return parser


def run(args: argparse.Namespace) -> int:
    """Probe and print the report.

    Returns:
        0, also when tools are missing.

    Raises:
        ConfigError: The output folder cannot be used.
    """
    import socket

    from fabricui.services.probe import probe

    folder = Path(args.output or f"fabricui-probe-{socket.gethostname()}")
    report = probe(
        folder,
        force=args.force,
        timeout_s=args.timeout,
        allow_ibnetdiscover=args.ibnetdiscover,
        extra_hwdb=tuple(getattr(args, "hwdb", []) or ()),
    )
    if args.json:
        print(json.dumps(report.to_json(), indent=2))
    else:
        print(report.summary())
    return 0
