"""``fabricui plugins``: list plugins with their version, source, status and contributions;
``fabricui plugins new NAME``: scaffold a plugin package."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING, Any

from fabricui.render.output import print_json

if TYPE_CHECKING:
    from fabricui.plugins import PluginHost

COLUMNS = ("name", "version", "source", "status", "contributes")


def add_parser(subparsers: Any) -> argparse.ArgumentParser:
    """Add the ``plugins`` subcommand.

    Args:
        subparsers: The object ``ArgumentParser.add_subparsers()`` returned.
    """
    parser = subparsers.add_parser(
        "plugins",
        help="list installed plugins, what they contribute, and failures; scaffold one",
        usage="%(prog)s [-h] [--all] [--json]\n       "
        "%(prog)s new [-h] [--scale-up | --scale-out] [--dir DIR] [--force] NAME",
    )
    parser.add_argument(
        "--all", action="store_true", help="include the built-in plugins (hidden otherwise)"
    )
    parser.add_argument("--json", action="store_true", help='print JSON {"plugins": [...]}')
    actions = parser.add_subparsers(dest="plugins_command", metavar="ACTION")
    new = actions.add_parser(
        "new",
        prog=f"{parser.prog} new",
        help="scaffold a plugin package fabricui-NAME/ (pyproject, hookimpls, hwdb, tests)",
    )
    new.add_argument(
        "name", metavar="NAME", help="plugin name: lowercase letters, digits and dashes (my-fabric)"
    )
    new.add_argument(
        "--dir",
        type=Path,
        default=Path("."),
        help="directory to create fabricui-NAME/ in (default: the current one)",
    )
    new.add_argument(
        "--force", action="store_true", help="replace an existing fabricui-NAME/ directory"
    )
    kind = new.add_mutually_exclusive_group()
    kind.add_argument(
        "--scale-up",
        dest="kind",
        action="store_const",
        const="scale-up",
        help="a scale-up interconnect: its link generation and a reference topology in YAML "
        "(hwdb/), tests that route and price a collective over it",
    )
    kind.add_argument(
        "--scale-out",
        dest="kind",
        action="store_const",
        const="scale-out",
        help="a network link generation, its interconnect and a strategy (the default)",
    )
    return parser


def run(args: argparse.Namespace, host: PluginHost | None = None) -> int:
    """Print the plugin list as a table or JSON, or scaffold a plugin (``new``).

    Args:
        args: Parsed arguments with ``all`` and ``json`` (and ``plugins_command``,
            ``name``, ``dir`` and ``force`` for ``new``).
        host: Plugin host to describe (default: the process-wide one).

    Returns:
        The exit status (0).

    Raises:
        ConfigError: ``new`` with a bad name or an existing target without ``--force``.
    """
    if getattr(args, "plugins_command", None) == "new":
        return run_new(args)
    if host is None:
        from fabricui.plugins import get_host

        host = get_host()
    rows = [row for row in host.describe() if _shown(row, args.all)]
    if args.json:
        print_json({"plugins": rows})
    else:
        print(_table(rows, args.all))
    return 0


def run_new(args: argparse.Namespace) -> int:
    """Write ``fabricui-NAME/`` and say what to do next; returns the exit status (0).

    Args:
        args: Parsed arguments with ``name``, ``dir``, ``force`` and ``kind``
            (``scale-up`` or ``scale-out``, the default).

    Raises:
        ConfigError: A bad name, or an existing target without ``--force``.
    """
    from fabricui.plugins.scaffold import scaffold

    kind = getattr(args, "kind", None) or "scale-out"
    target = scaffold(args.name, args.dir, force=args.force, kind=kind)
    files = sorted(p.relative_to(target).as_posix() for p in target.rglob("*") if p.is_file())
    # "./" keeps pip from reading a bare relative path as a package name.
    shown = target.as_posix() if target.is_absolute() else f"./{target.as_posix()}"
    print(f"created {shown}/")
    for name in files:
        print(f"  {name}")
    print(f"next: pip install -e '{shown}[test]' && fabricui plugins && pytest {shown}")
    return 0


def _shown(row: dict[str, Any], show_all: bool) -> bool:
    """Built-ins are listed with ``--all``, or when they are not ok."""
    return show_all or row["source"] != "builtin" or row["status"] != "ok"


#: Table label of each ``contributes`` key, in the order the table lists them (what a
#: plugin brings to the fabric first, its hwdb directory last); ``--json`` keeps the keys.
LABELS = {
    "interconnects": "interconnects",
    "link_generations": "generations",
    "nics": "NICs",
    "switches": "switches",
    "gpus": "GPUs",
    "models": "models",
    "topologies": "topologies",
    "collective_algorithms": "algorithms",
    "topology_builders": "builders",
    "strategies": "strategies",
    "importers": "importers",
    "hwdb_paths": "hwdb",
}


def _contributes(row: dict[str, Any]) -> str:
    """``generations: nvlink1, nvlink2; switches: ...`` (an hwdb path by its last two parts)."""
    contributes = row["contributes"]
    order = [k for k in LABELS if k in contributes] + [k for k in contributes if k not in LABELS]
    parts = []
    for kind in order:
        names = contributes[kind]
        if kind == "hwdb_paths":
            names = ["/".join(Path(name).parts[-2:]) for name in names]
        parts.append(f"{LABELS.get(kind, kind)}: {', '.join(names)}")
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
