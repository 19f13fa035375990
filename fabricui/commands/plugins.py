"""``fabricui plugins``: list plugins with their version, source, status and contributions."""

from __future__ import annotations

import argparse
import json
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from fabricui.plugins import PluginHost

COLUMNS = ("name", "version", "source", "status", "contributes")


def add_parser(subparsers: Any) -> argparse.ArgumentParser:
    """Add the ``plugins`` subcommand.

    Args:
        subparsers: The object ``ArgumentParser.add_subparsers()`` returned.
    """
    parser = subparsers.add_parser(
        "plugins", help="list installed plugins, what they contribute, and failures"
    )
    parser.add_argument(
        "--all", action="store_true", help="include the built-in plugins (hidden otherwise)"
    )
    parser.add_argument("--json", action="store_true", help='print JSON {"plugins": [...]}')
    return parser


def run(args: argparse.Namespace, host: PluginHost | None = None) -> int:
    """Print the plugin list as a table or JSON; returns the exit status (0).

    Args:
        args: Parsed arguments with ``all`` and ``json``.
        host: Plugin host to describe (default: the process-wide one).
    """
    if host is None:
        from fabricui.plugins import get_host

        host = get_host()
    rows = [row for row in host.describe() if _shown(row, args.all)]
    if args.json:
        print(json.dumps({"plugins": rows}, indent=2))
    else:
        print(_table(rows, args.all))
    return 0


def _shown(row: dict[str, Any], show_all: bool) -> bool:
    """Built-ins are listed with ``--all``, or when they are not ok."""
    return show_all or row["source"] != "builtin" or row["status"] != "ok"


def _contributes(row: dict[str, Any]) -> str:
    parts = [f"{kind}: {', '.join(names)}" for kind, names in row["contributes"].items()]
    return "; ".join(parts) or "-"


def _table(rows: list[dict[str, Any]], show_all: bool) -> str:
    if not rows:
        hint = "" if show_all else " (built-ins: fabricui plugins --all)"
        return f"no plugins installed{hint}"
    cells = [
        [row["name"], row["version"] or "-", row["source"], row["status"], _contributes(row)]
        for row in rows
    ]
    widths = [max(len(str(c[i])) for c in [list(COLUMNS), *cells]) for i in range(len(COLUMNS))]
    lines = [_line(COLUMNS, widths)]
    for row, cell in zip(rows, cells):
        lines.append(_line(cell, widths))
        if row["error"]:
            lines.append(f"  error: {row['error']}")
    return "\n".join(lines)


def _line(cells: Any, widths: list[int]) -> str:
    return "  ".join(f"{c:<{w}}" for c, w in zip(cells, widths)).rstrip()
