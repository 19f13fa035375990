"""``fabricui hwdb list|show|validate``: inspect and check the hardware database."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from fabricui.commands.options import catalog, catalog_request, completes
from fabricui.errors import ConfigError
from fabricui.render.output import print_json
from fabricui.render.table import text_table
from fabricui.vocabulary import HWDB_KINDS, record_kind_singular


def add_parser(subparsers: Any, parser_class: Any = None) -> argparse.ArgumentParser:
    """Add the ``hwdb`` subcommand and its actions."""
    parser: argparse.ArgumentParser = subparsers.add_parser(
        "hwdb", help="inspect and check the hardware database"
    )
    actions = parser.add_subparsers(
        dest="hwdb_command", parser_class=parser_class or type(parser), metavar="ACTION"
    )
    listing = actions.add_parser("list", help="list records of one kind, or all kinds")
    kind = listing.add_argument(
        "kind", nargs="?", help=f"{', '.join(HWDB_KINDS[:-1])} or {HWDB_KINDS[-1]}"
    )
    completes(kind, HWDB_KINDS)
    listing.add_argument("--json", action="store_true", help="print JSON")
    show = actions.add_parser("show", help="show one record with its sources")
    show.add_argument("id", help="record id (e.g. nvlink4, h100-sxm, dgx-h100-pod)")
    show.add_argument("--json", action="store_true", help="print JSON")
    validate = actions.add_parser(
        "validate",
        help="check the database, a hwdb directory, one record file or one topology file",
    )
    validate.add_argument(
        "path",
        nargs="?",
        type=Path,
        help="a hwdb directory, a record file (links:, gpus: ...) or a topology YAML file",
    )
    validate.add_argument("--json", action="store_true", help="print one JSON object")
    return parser


def run(args: argparse.Namespace) -> int:
    """List, show or validate; returns 0.

    Raises:
        FabricError: No action, an unknown kind or id, a database problem, or a directory
            or record file to validate that holds no records.
    """
    if args.hwdb_command is None:
        raise ConfigError("hwdb: choose an action: list, show or validate")
    if args.hwdb_command == "validate":
        from fabricui.services.catalog_info import validate

        target = args.path
        checked = None if target is None or target.is_dir() else catalog(args)
        result = validate(target, catalog_request(args).hwdb_dirs, checked)
        if args.json:
            print_json(result.to_json())
        else:
            print(result.summary())
        return 0
    if args.hwdb_command == "list":
        return _list(args, catalog(args))
    return _show(args, catalog(args))


def _list(args: argparse.Namespace, catalog: Any) -> int:
    from fabricui.services.catalog_info import record_kinds

    kinds = record_kinds(args.kind)
    if args.json:
        print_json({k: sorted(catalog.table(k)) for k in kinds})
        return 0
    for kind in kinds:
        table = catalog.table(kind)
        print(f"{kind} ({len(table)})")
        rows = [
            (
                record_id,
                getattr(table[record_id], "name", "")
                or getattr(table[record_id], "description", ""),
            )
            for record_id in sorted(table)
        ]
        if rows:
            print("\n".join(text_table(rows, indent="  ", gap=" ")))
    return 0


def _show(args: argparse.Namespace, catalog: Any) -> int:
    from fabricui.services.catalog_info import record_json

    kind, record = catalog.find(args.id)
    if args.json:
        print_json({"kind": kind, **record_json(record)})
        return 0
    name = {"gpus": "GPU", "nics": "NIC"}.get(kind) or record_kind_singular(kind)
    print(f"{name} {record.id}  ({catalog.origins.get((kind, record.id), '')})")
    for key, value in record_json(record).items():
        if key == "id" or value in (None, "", [], {}):
            continue
        if isinstance(value, dict):
            value = ", ".join(f"{k}={v}" for k, v in value.items())
        print(f"  {key:<20} {value}")
    return 0
