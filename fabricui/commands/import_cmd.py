"""``fabricui import FORMAT FILE``: read what a machine printed, show it, write a topology spec.

``FILE`` may be ``-`` (stdin). The summary goes to stdout (or JSON with ``--json``); every gap
the importer states goes to stderr as ``fabricui: warning: ...``. With ``-o FILE`` the node
becomes a topology spec that ``fabricui explore --topology FILE`` opens (``--nodes N`` replicates
it, ``--net LINK:GBPS`` and ``--gpu ID`` fill what the input does not say). For the cluster
formats (ibnetdiscover, iblinkinfo, slurm-topology) ``-o`` needs ``--node NODE`` and writes the
whole cluster (``fabricui.commands.import_cluster``).
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Callable

from fabricui.errors import ConfigError, FabricError, exception_line

#: Largest input read [bytes]; topology outputs are a few KiB.
MAX_INPUT_BYTES = 64 * 2**20
#: Where the built-in formats are listed for --help (the plugin host may add more).
FORMATS_HELP = (
    "nvidia-smi (`nvidia-smi topo -m`), nccl-xml (NCCL_TOPO_FILE / NCCL_TOPO_DUMP_FILE), "
    "ibstat (also ibv_devinfo, ibdev2netdev), rocm-smi (`rocm-smi --showtopo`), "
    "ibnetdiscover (plain, -g, -p), iblinkinfo, slurm-topology (topology.conf, scontrol show "
    "topology, topology.yaml), nvidia-smi-q (NVLink fabric of `nvidia-smi -q`), "
    "or a plugin's format"
)


def importer_table() -> dict[str, Callable[..., Any]]:
    """Importers by format name, as the plugin host has them.

    Returns:
        Format name -> ``parse(text)``.
    """
    from fabricui.plugins import get_host

    table: dict[str, Callable[..., Any]] = dict(get_host().importers())
    if not table:
        # The built-in importers reach the host through the ``fabricui_importers`` entry point.
        # Until that entry point is declared in pyproject.toml (or when the plugin failed),
        # the host has none: use the built-in table directly.
        from fabricui.importers.builtin import builtin_importers

        return builtin_importers()
    return table


class _Formats:
    """argparse ``choices`` that ask the plugin host only when ``import`` is parsed."""

    def __contains__(self, item: object) -> bool:
        return item in importer_table()

    def __iter__(self) -> Iterator[str]:
        return iter(sorted(importer_table()))


def add_parser(subparsers: Any) -> argparse.ArgumentParser:
    """Add the ``import`` subcommand.

    Args:
        subparsers: The object ``ArgumentParser.add_subparsers()`` returned.
    """
    parser: argparse.ArgumentParser = subparsers.add_parser(
        "import",
        help="read nvidia-smi topo -m, NCCL topology XML, ibstat or rocm-smi output: show it, "
        "state what is missing, write a topology spec",
    )
    parser.add_argument("format", metavar="FORMAT", choices=_Formats(), help=FORMATS_HELP)
    parser.add_argument("file", metavar="FILE", help="the saved output, or - to read stdin")
    parser.add_argument("--json", action="store_true", help="print the parsed data as JSON")
    parser.add_argument(
        "-o",
        "--output",
        metavar="YAML",
        help="write a topology spec that `fabricui explore --topology YAML` opens (- prints it)",
    )
    parser.add_argument("--force", action="store_true", help="let -o replace an existing file")
    parser.add_argument("--nodes", type=int, help="-o: replicate the node N times (default 1)")
    parser.add_argument(
        "--net",
        metavar="LINK:GBPS",
        help="-o: network link and port rate, e.g. ib-ndr:400, roce:200, efa:100 "
        "(default: from the input, else ib-ndr:400 when there are NICs)",
    )
    parser.add_argument(
        "--gpu",
        metavar="ID",
        help="-o: catalog GPU id (see `fabricui hwdb list gpus`); default: named in the "
        "input, else guessed from the links",
    )
    parser.add_argument(
        "--node",
        metavar="NODE",
        help="-o with ibnetdiscover, iblinkinfo or slurm-topology: what one host is, a "
        "topology id (dgx-a100) or a node spec file (from `import nvidia-smi -o` or `probe`)",
    )
    parser.add_argument(
        "--hosts",
        metavar="HOSTLIST",
        help="-o with a cluster format: the hosts that become nodes (Slurm hostlist, e.g. "
        "'luna-[0001-0560]'); default: those with the most common port count",
    )
    return parser


def read_input(name: str) -> tuple[str, str]:
    """The text of FILE (``-`` = stdin) and the name to use in messages.

    Raises:
        ParseError: Missing, unreadable, binary, not UTF-8, too large or empty.
    """
    from fabricui.importers.common import ParseError

    if name == "-":
        origin = "<stdin>"
        if sys.stdin is None:
            raise ParseError("<stdin>: no standard input")
        if sys.stdin.isatty():
            print("fabricui: reading the output from stdin (end with Ctrl-D)", file=sys.stderr)
        buffer = getattr(sys.stdin, "buffer", None)
        data = buffer.read(MAX_INPUT_BYTES + 1) if buffer else sys.stdin.read().encode()
    else:
        origin = name
        try:
            with open(name, "rb") as handle:
                data = handle.read(MAX_INPUT_BYTES + 1)
        except FileNotFoundError:
            raise ParseError(f"{name}: no such file") from None
        except IsADirectoryError:
            raise ParseError(f"{name}: is a directory, expected a file") from None
        except PermissionError:
            raise ParseError(f"{name}: permission denied") from None
        except OSError as exc:
            raise ParseError(f"{name}: cannot read ({exc.strerror})") from None
    if len(data) > MAX_INPUT_BYTES:
        raise ParseError(f"{origin}: larger than 64 MiB, not the output of a topology command")
    if data.startswith((b"\xff\xfe", b"\xfe\xff")):
        # PowerShell's `>` writes UTF-16 with a byte-order mark.
        try:
            text = data.decode("utf-16")
        except UnicodeDecodeError as exc:
            raise ParseError(f"{origin}: not valid UTF-16 text (byte {exc.start})") from None
    elif b"\x00" in data:
        raise ParseError(f"{origin}: a binary file (NUL bytes), not text output")
    else:
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise ParseError(f"{origin}: not UTF-8 text (byte {exc.start})") from None
    if not text.strip():
        raise ParseError(f"{origin}: empty input")
    return text, origin


def _warn(lines: list[str]) -> None:
    for line in lines:
        print(f"fabricui: warning: {line}", file=sys.stderr)


def _spec_id(output: str) -> str:
    if output == "-":
        return "imported"
    stem = re.sub(r"[^a-z0-9._-]+", "-", Path(output).stem.lower()).strip("-.")
    return stem or "imported"


def run(args: argparse.Namespace) -> int:
    """Parse FILE with the FORMAT importer; print a summary or JSON; write ``-o``.

    Returns:
        0 (errors are raised as FabricError and printed by the CLI).

    Raises:
        ConfigError: Unknown format, or -o options without -o.
        ParseError: The input cannot be read or is not FORMAT.
    """
    from fabricui.importers.common import ParseError

    output = args.output
    node, hosts = getattr(args, "node", None), getattr(args, "hosts", None)
    if not output and (args.force or args.nodes is not None or args.net or args.gpu or node):
        raise ConfigError("--force, --nodes, --net, --gpu and --node only apply with -o FILE")
    if hosts and not output:
        raise ConfigError("--hosts only applies with -o FILE")
    if output == "-" and args.json:
        raise ConfigError("--json and -o - both write to stdout: give -o a file name")
    if output and output != "-":
        from fabricui.atomic_write import check_target

        check_target(Path(output), args.force)
    table = importer_table()
    if args.format not in table:
        from fabricui.hwdb.catalog import unknown_id_message

        raise ConfigError(unknown_id_message("import format", args.format, table))
    text, origin = read_input(args.file)
    try:
        result = table[args.format](text)
    except FabricError as exc:
        raise ParseError(f"{origin}: {exc.message}") from None
    except Exception as exc:  # a plugin importer's bug (the plugin host recorded it)
        failed = f"{_importer(args.format)} failed: {exception_line(exc)}"
        raise ParseError(f"{origin}: {failed}") from None
    from fabricui.importers.fabric_graph import SwitchGraph

    cluster = isinstance(result, SwitchGraph)
    if cluster:
        from fabricui.commands.import_cluster import check_cluster_args

        check_cluster_args(args, result)
    elif node or hosts:
        raise ConfigError(f"--node and --hosts apply to cluster formats, not {args.format}")
    warnings, notes, shown = _checked_result(result, args.format, args.json)
    _warn(warnings)
    print(shown)
    if not args.json:
        for note in notes:
            print(f"  note: {note}")
    if output and cluster:
        from fabricui.commands.import_cluster import write_cluster_spec

        write_cluster_spec(args, result, origin, warnings, _spec_id(output))
    elif output:
        _write_spec(args, result, origin, warnings)
    return 0


def _importer(name: str) -> str:
    """``the NAME importer (plugin P)`` for messages."""
    from fabricui.plugins import get_host

    owner = get_host().contributor("importers", name)
    builtin = owner is None or owner == "importers"
    return f"the {name} importer" + ("" if builtin else f" (plugin {owner})")


def _text_list(value: Any) -> list[str] | None:
    if not isinstance(value, (list, tuple)) or not all(isinstance(v, str) for v in value):
        return None
    return [" ".join(v.split()) for v in value]


def _checked_result(result: Any, name: str, as_json: bool) -> tuple[list[str], list[str], str]:
    """(warnings, notes, what to print) of an importer's result, checked: a plugin importer
    may return anything.

    Raises:
        ParseError: ``warnings``/``notes`` are not lists of text, ``to_json()`` is not JSON
            (NaN included) or ``summary()`` is not text.
    """
    from fabricui.importers.common import ParseError

    def broken(problem: str) -> ParseError:
        return ParseError(f"{_importer(name)} returned {problem}")

    warnings = _text_list(getattr(result, "warnings", []))
    notes = _text_list(getattr(result, "notes", []))
    if warnings is None or notes is None:
        return_type = type(result).__name__
        raise broken(f"a {return_type} whose warnings or notes are not lists of text")
    try:
        if as_json:
            to_json = getattr(result, "to_json", None)
            data = to_json() if callable(to_json) else result
            return warnings, notes, json.dumps(data, indent=2, allow_nan=False)
        summary = getattr(result, "summary", None)
        if not callable(summary):
            return warnings, notes, json.dumps(result, indent=2, default=str, allow_nan=False)
        text = summary()
    except FabricError:
        raise
    except (TypeError, ValueError) as exc:
        raise broken(f"data that is not JSON ({exception_line(exc)})") from None
    except Exception as exc:  # the result's own method failed
        raise broken(f"a result that fails: {exception_line(exc)}") from None
    if not isinstance(text, str):
        raise broken(f"a summary that is {type(text).__name__}, not text")
    return warnings, notes, text


def _write_spec(args: argparse.Namespace, result: Any, origin: str, gaps: list[str]) -> None:
    """Turn the parsed node into a checked topology spec and write it (``-o``)."""
    from fabricui.errors import HwdbError
    from fabricui.fabric import build_fabric
    from fabricui.hwdb.topology_file import parse_topology
    from fabricui.hwdb.yamlfile import parse_yaml
    from fabricui.importers.common import NodeLayout, ParseError
    from fabricui.importers.spec import build_spec, parse_net, render_yaml, write_spec
    from fabricui.services.session import load_catalog_with_plugins

    layout_of = getattr(result, "layout", None)
    if not callable(layout_of):
        net = getattr(result, "suggested_net", None)
        suggested = net() if callable(net) else None
        hint = f"; its NICs suggest --net {suggested}" if isinstance(suggested, str) else ""
        raise ParseError(
            f"{origin}: {args.format} output has "
            + ("no GPU link matrix" if getattr(result, "gpus", None) else "no GPUs")
            + ", so it cannot become a topology spec "
            f"(-o needs nvidia-smi, nccl-xml or rocm-smi output){hint}"
        )
    try:
        layout = layout_of()
    except FabricError:
        raise
    except Exception as exc:  # a plugin importer's result
        failed = f"{_importer(args.format)} failed: layout(): {exception_line(exc)}"
        raise ParseError(failed) from None
    if not isinstance(layout, NodeLayout):
        raise ParseError(
            f"{_importer(args.format)} returned a layout() that is {type(layout).__name__}, "
            "not a NodeLayout"
        )
    catalog = load_catalog_with_plugins(getattr(args, "hwdb", []) or [])
    net = parse_net(args.net, catalog) if args.net else None
    output = args.output
    try:
        draft = build_spec(
            layout,
            catalog,
            gpu=args.gpu,
            nodes=args.nodes if args.nodes is not None else 1,
            net=net,
            spec_id=_spec_id(output),
            origin=origin,
            command=f"fabricui import {args.format} {origin}",
        )
    except ParseError as exc:
        raise ParseError(f"{origin}: {exc.message}") from None
    text = render_yaml(draft, gaps)
    name = "<stdout>" if output == "-" else output
    try:
        spec = parse_topology(parse_yaml(text, name), catalog, default_id=_spec_id(output))
        build_fabric(spec, catalog)
    except FabricError as exc:  # the mapping produced something the builder refuses: our bug
        raise HwdbError(f"the topology made from {origin} does not load: {exc.message}") from None
    _warn(draft.warnings)
    if output == "-":
        sys.stdout.write(text)
        return
    write_spec(Path(output), text, force=args.force)
    stream = sys.stderr if args.json else sys.stdout
    print(
        f"wrote {output}: {draft.summary()}; open it with `fabricui explore --topology {output}`",
        file=stream,
    )
