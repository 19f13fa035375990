"""``fabricui topologies``: the built-in (and plugin) topologies, one line each."""

from __future__ import annotations

import argparse
from typing import Any

from fabricui.commands.options import add_json_option, catalog
from fabricui.render.output import print_json
from fabricui.render.table import text_table


def add_parser(subparsers: Any) -> argparse.ArgumentParser:
    """Add the ``topologies`` subcommand."""
    parser: argparse.ArgumentParser = subparsers.add_parser(
        "topologies", help="list the built-in topologies"
    )
    add_json_option(parser)
    return parser


def run(args: argparse.Namespace) -> int:
    """Print the topologies; returns 0."""
    from fabricui.services.catalog_info import topology_rows

    rows = topology_rows(catalog(args))
    if args.json:
        print_json(rows)
        return 0
    table = [(r["id"], f"{r['gpus']} GPUs", r["description"]) for r in rows]
    print("\n".join(text_table(table, right={1})))
    return 0
