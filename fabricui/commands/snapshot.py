"""``fabricui snapshot``: the options that render explorer views headless to SVG, text or
Markdown, turned into the snapshot request the TUI renders (``fabricui.cli`` hands it over)."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from fabricui.commands.options import (
    add_topology_options,
    completes,
    output_path,
    topology_request,
)
from fabricui.errors import ConfigError
from fabricui.files import check_target
from fabricui.services.command_requests import SnapshotRequest
from fabricui.services.requests import (
    GROUP_CHOICES,
    SNAPSHOT_FORMATS,
    LaunchRequest,
    SnapshotTarget,
)
from fabricui.units import parse_message_size
from fabricui.vocabulary import OPS, VIEWS

DESCRIPTION = (
    "Print an explorer view as a Markdown report, or write it (-o FILE.md, with the view's "
    "SVG beside it), as the screen in SVG (FILE.svg) or as plain text (FILE.txt); "
    "--all writes every view into a directory (--format picks md, svg or txt)."
)


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
    """The options of ``fabricui snapshot``."""
    view = parser.add_argument(
        "view", nargs="?", metavar="VIEW", help=f"one of {', '.join(VIEWS)} (or give --all)"
    )
    completes(view, VIEWS)
    parser.add_argument(
        "--all", action="store_true", help="render every view into the directory -o DIR"
    )
    parser.add_argument(
        "-o",
        "--output",
        type=output_path,
        default="-",
        metavar="FILE",
        help="FILE.md, FILE.svg or FILE.txt; - for standard output (the default: the "
        "Markdown report); with --all a directory",
    )
    parser.add_argument(
        "--format",
        choices=SNAPSHOT_FORMATS,
        help="md (a report), svg or txt (the screen); default: from FILE's suffix, md for -, "
        "svg for --all",
    )
    parser.add_argument("--force", action="store_true", help="overwrite existing files")
    parser.add_argument(
        "--ascii", action="store_true", help="draw with plain ASCII (default: Unicode)"
    )
    parser.add_argument(
        "--terminal-size",
        "--size",
        dest="terminal_size",
        default="120x40",
        metavar="COLSxROWS",
        help="terminal size to render at (default: 120x40)",
    )
    add_topology_options(parser)
    parser.add_argument("--src", help="topology view: source GPU (n<node>.g<gpu> or a rank)")
    parser.add_argument("--dst", help="topology view: destination GPU")
    parser.add_argument(
        "--message-size", metavar="S", help="topology view: message size, e.g. 1G (default 1 GiB)"
    )
    parser.add_argument(
        "--hosts",
        metavar="HOSTLIST",
        help="topology view: a job's hosts on an imported cluster, underlined (as `explore`)",
    )
    parser.add_argument(
        "--jobs",
        metavar="FILE",
        help="topology view: running jobs (`squeue` ...) whose GPUs are underlined and named "
        "above the map (as `explore`)",
    )
    op = parser.add_argument("--op", help="collectives view: operation (default: all_reduce)")
    completes(op, OPS)
    group = parser.add_argument(
        "--group",
        help=(
            "collectives view: all, host (or node), domain or per-node, or gpus:N for the "
            "first N GPUs, N >= 2 (default: all)"
        ),
    )
    completes(group, GROUP_CHOICES)
    parser.add_argument(
        "--sweep",
        "--sizes",
        dest="sizes",
        metavar="A:B",
        help="collectives view: size range, e.g. 8:16G, or one size (as `collective --sweep`)",
    )
    parser.add_argument(
        "--nccl",
        metavar="VERSION",
        help="collectives view: NCCL release whose picks it shows (default: the newest modelled)",
    )
    parser.add_argument(
        "--env",
        action="append",
        default=[],
        metavar="NCCL_NAME=VALUE",
        help="collectives view: NCCL setting of the job (repeatable), as `collective --env`",
    )
    parser.add_argument(
        "--measured",
        metavar="FILE",
        help="collectives view: an nccl-tests output shown beside the prediction",
    )
    parser.add_argument("--model", help="strategies view: model id (default: llama3-70b)")
    parser.add_argument(
        "--layout", help="strategies view: layout such as 'tp8 pp2 fsdp' (default: TP on a node)"
    )
    parser.add_argument(
        "--search", action="store_true", help="strategies view: also rank every layout"
    )


#: Options one view alone reads: (argparse dest, the flag, the view).
VIEW_OPTIONS = (
    ("hosts", "--hosts", "topology"),
    ("jobs", "--jobs", "topology"),
    ("op", "--op", "collectives"),
    ("group", "--group", "collectives"),
    ("sizes", "--sweep", "collectives"),
    ("nccl", "--nccl", "collectives"),
    ("env", "--env", "collectives"),
    ("measured", "--measured", "collectives"),
    ("model", "--model", "strategies"),
    ("layout", "--layout", "strategies"),
    ("search", "--search", "strategies"),
)


def check_view_options(args: argparse.Namespace, view: str) -> None:
    """Refuse an option of another view than the one rendered: it would change nothing,
    and the snapshot would look like its answer.

    Raises:
        ConfigError: Naming the option and the view that reads it.
    """
    for dest, flag, owner in VIEW_OPTIONS:
        if owner != view and getattr(args, dest, None):
            raise ConfigError(
                f"snapshot {view}: {flag} is an option of the {owner} view (snapshot {owner} "
                f"{flag} ..., or --all)"
            )


def snapshot_request(args: argparse.Namespace) -> SnapshotRequest:
    """The snapshot request of the parsed options (checked: views, names, formats, sizes).

    Raises:
        ConfigError: A view and ``--all`` together, neither, an unknown view, an option of
            another view than the one given, a file name
            that is not .md/.svg/.txt, an ``--all`` target that is not a directory, existing
            files without ``--force``, or a bad terminal or message size.
    """
    output = args.output
    fmt = getattr(args, "format", None)
    directory = None
    if args.all:
        if args.view:
            raise ConfigError("snapshot: give a VIEW or --all, not both")
        if output == "-":
            raise ConfigError("snapshot --all: give the directory to write into (-o DIR)")
        directory = Path(output)
        if directory.exists() and not directory.is_dir():
            raise ConfigError(f"{directory} is not a directory (--all writes VIEW files into it)")
        fmt = fmt or "svg"
        targets = tuple(SnapshotTarget(v, fmt, directory / f"{v}.{fmt}") for v in VIEWS)
    else:
        if not args.view:
            raise ConfigError("snapshot: give a VIEW (or --all)")
        if args.view not in VIEWS:
            raise ConfigError(f"unknown view {args.view!r} (one of {', '.join(VIEWS)})")
        check_view_options(args, args.view)
        if output == "-":
            targets = (SnapshotTarget(args.view, fmt or "md", None),)
        else:
            path = Path(output)
            suffix = path.suffix.lower().lstrip(".")
            if suffix not in SNAPSHOT_FORMATS:
                raise ConfigError(f"-o {output}: use a .md, .svg or .txt file name (or -)")
            if fmt is not None and fmt != suffix:
                raise ConfigError(f"-o {output} is .{suffix} but --format is {fmt}")
            targets = (SnapshotTarget(args.view, suffix, path),)
    for target in targets:
        for written in (target.path, target.image_path):
            if written is not None and not (directory is not None and not directory.exists()):
                check_target(written, args.force)
    options = {
        key: value
        for key in ("op", "group", "sizes", "model", "layout", "hosts", "jobs")
        if (value := getattr(args, key, None))
    }
    if getattr(args, "search", False):
        options["search"] = "yes"
    version, env = getattr(args, "nccl", None), list(getattr(args, "env", None) or [])
    if version or env:
        from fabricui.services.collective import nccl_environment, parse_nccl_settings

        if version and "=" in version:
            raise ConfigError(f"--nccl {version}: give a release such as 2.21 (settings: --env)")
        nccl_environment(env, inherit=False)  # a word that is not NAME=value
        # the view's NCCL prompt text, checked as it checks it (an unknown release ...)
        options["nccl"] = " ".join(([version] if version else []) + env)
        parse_nccl_settings(options["nccl"])
    if measured := getattr(args, "measured", None):
        from fabricui.services.collective import measured_input, measured_run

        measured = measured_input(measured)
        measured_run(measured)  # no such file, or no nccl-tests table in it
        options["measured"] = measured
    size = getattr(args, "message_size", None)
    launch = LaunchRequest(
        topology=topology_request(args),
        src=args.src,
        dst=args.dst,
        message_size=parse_message_size(size, "--message-size") if size else None,
        options=tuple(options.items()),
        ascii=bool(getattr(args, "ascii", False)),
    )
    return SnapshotRequest(
        launch, targets, directory, args.force, parse_terminal_size(args.terminal_size)
    )


def parse_terminal_size(text: str, flag: str = "--terminal-size") -> tuple[int, int]:
    """``120x40`` -> (120, 40).

    Args:
        text: What the user typed.
        flag: The option it was given to (for the error).

    Raises:
        ConfigError: Not ``COLSxROWS`` within 40x10 .. 1000x500.
    """
    cols, sep, rows = text.lower().partition("x")
    if not sep or not cols.isdigit() or not rows.isdigit():
        hint = ""
        if text[:1].isdigit():  # 1G, 64K: a message size where the screen's size goes
            hint = " (a message size is --message-size)"
        raise ConfigError(f"invalid {flag} {text!r}: use COLUMNSxROWS such as 120x40{hint}")
    size = (int(cols), int(rows))
    if size[0] < 40 or size[1] < 10 or size[0] > 1000 or size[1] > 500:
        raise ConfigError(f"{flag} {text} is out of range (40x10 .. 1000x500)")
    return size
