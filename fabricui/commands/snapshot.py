"""``fabricui snapshot``: render an explorer view headless to SVG or text (scripts, CI, README)."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from fabricui.errors import ConfigError
from fabricui.vocabulary import DEFAULT_TOPOLOGY

DESCRIPTION = (
    "Render an explorer view off-screen to FILE.svg, FILE.txt (plain text) or FILE.md "
    "(a Markdown report); "
    "--all renders every view into a directory."
)
#: Views ``--all`` renders, and the file name of each.
VIEWS = ("topology", "pyramid", "collectives", "strategies", "plugins")


def add_parser(subparsers: Any) -> argparse.ArgumentParser:
    """Add the ``snapshot`` subcommand.

    Args:
        subparsers: The object ``ArgumentParser.add_subparsers()`` returned.
    """
    parser = subparsers.add_parser(
        "snapshot", help="render a TUI view headless to SVG or text", description=DESCRIPTION
    )
    add_arguments(parser)
    return parser


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The options of ``fabricui snapshot`` (shared with ``python -m fabricui.snapshot``)."""
    parser.add_argument(
        "view", nargs="?", metavar="VIEW", help=f"one of {', '.join(VIEWS)} (or give --all)"
    )
    parser.add_argument(
        "--all", action="store_true", help="render every view into the directory -o DIR"
    )
    parser.add_argument(
        "-o",
        "--output",
        required=True,
        type=Path,
        metavar="FILE",
        help="FILE.svg, FILE.txt or FILE.md (with --all: a directory, written as VIEW.svg)",
    )
    parser.add_argument("--force", action="store_true", help="overwrite existing files")
    parser.add_argument(
        "--size",
        default="120x40",
        metavar="COLSxROWS",
        help="terminal size (default: 120x40)",
    )
    parser.add_argument(
        "--topology",
        "-t",
        default=DEFAULT_TOPOLOGY,
        help="built-in topology id or a YAML file path (default: dgx-h100-pod)",
    )
    parser.add_argument("--nodes", type=int, help="rescale the topology to N nodes")
    parser.add_argument("--src", help="topology view: source GPU (n<node>.g<gpu> or a rank)")
    parser.add_argument("--dst", help="topology view: destination GPU")
    parser.add_argument(
        "--message-size", metavar="S", help="topology view: message size, e.g. 1G (default 1 GiB)"
    )
    parser.add_argument("--op", help="collectives view: operation (default: all_reduce)")
    parser.add_argument("--group", help="collectives view: all, node or per-node (default: all)")
    parser.add_argument(
        "--sizes", metavar="A:B", help="collectives view: size range, e.g. 8:16G, or one size"
    )
    parser.add_argument("--model", help="strategies view: model id (default: llama3-70b)")
    parser.add_argument(
        "--layout", help="strategies view: layout such as 'tp8 pp2 fsdp' (default: TP on a node)"
    )
    parser.add_argument(
        "--search", action="store_true", help="strategies view: also rank every layout"
    )


def _request(args: argparse.Namespace, view: str) -> Any:
    from fabricui.snapshot import ViewRequest, parse_terminal_size
    from fabricui.units import parse_size

    options = {
        key: value
        for key in ("op", "group", "sizes", "model", "layout")
        if (value := getattr(args, key, None))
    }
    if getattr(args, "search", False):
        options["search"] = "yes"
    size = getattr(args, "message_size", None)
    return ViewRequest(
        view=view,
        topology=args.topology,
        nodes=args.nodes,
        src=args.src,
        dst=args.dst,
        message_size=parse_size(size) if size else None,
        options=options,
        size=parse_terminal_size(args.size),
    )


def run(args: argparse.Namespace) -> int:
    """Render and write; prints where each file went; returns 0.

    Raises:
        FabricError: Bad input, or an output file that exists without ``--force``.
    """
    from fabricui.atomic_write import check_target, exists_message
    from fabricui.services.session import load_catalog_with_plugins
    from fabricui.snapshot import render_view, write_snapshot

    output: Path = args.output
    if args.all:
        if args.view:
            raise ConfigError("fabricui snapshot: give a VIEW or --all, not both")
        if output.exists() and not output.is_dir():
            raise ConfigError(f"{output} is not a directory (--all writes VIEW.svg files into it)")
        targets = [(view, output / f"{view}.svg") for view in VIEWS]
        existing = [str(path) for _, path in targets if path.exists() or path.is_symlink()]
        if existing and not args.force:
            raise ConfigError(exists_message(", ".join(existing)))
    else:
        if not args.view:
            raise ConfigError("fabricui snapshot: give a VIEW (or --all)")
        if args.view not in VIEWS:
            raise ConfigError(f"unknown view {args.view!r} (one of {', '.join(VIEWS)})")
        if output.suffix.lower() not in (".svg", ".txt", ".md"):
            raise ConfigError(f"-o {output}: use a .svg, .txt or .md file name")
        check_target(output, args.force)
        targets = [(args.view, output)]
    requests = [(_request(args, view), path) for view, path in targets]
    catalog = load_catalog_with_plugins(
        getattr(args, "hwdb", None) or [], calibration=getattr(args, "calibration", None)
    )
    # Render every view before writing any, so a view that fails leaves no files behind.
    rendered = [(render_view(request, catalog), path) for request, path in requests]
    if args.all:
        try:
            output.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise ConfigError(f"{output}: cannot create the directory ({exc.strerror})") from None
    for snapshot, path in rendered:
        write_snapshot(snapshot, path, force=args.force)
        print(f"wrote {path}")
    return 0
