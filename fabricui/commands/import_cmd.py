"""``fabricui import [FORMAT] FILE``: read what a machine printed, show it, write a topology spec.

``FILE`` may be ``-`` (stdin); without ``FORMAT`` the tool that printed it is recognised.
The summary goes to stdout (or JSON with ``--json``; to stderr with ``-o -``, whose stdout
is the spec alone); every gap the importer states goes to stderr as ``fabricui: warning:
...``. With ``-o FILE`` the node becomes a topology spec that ``fabricui explore --topology
FILE`` opens (``--nodes N`` replicates it, ``--net LINK:GBPS`` and ``--gpu ID`` fill what the
input does not say).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

from fabricui.commands.options import output_path
from fabricui.files import shown_path, write_text

if TYPE_CHECKING:
    from fabricui.services.importing import Imported, ImportRequest

#: Where the built-in formats are listed for --help (the plugin host may add more).
FORMATS_HELP = (
    "nvidia-smi (`nvidia-smi topo -m`), nccl-xml (NCCL_TOPO_FILE / NCCL_TOPO_DUMP_FILE), "
    "ibstat (also ibv_devinfo, ibdev2netdev), rocm-smi (`rocm-smi --showtopo`), "
    "ibnetdiscover (plain, -g, -p), iblinkinfo, slurm-topology (topology.conf, scontrol show "
    "topology, topology.yaml), nvidia-smi-q (NVLink fabric of `nvidia-smi -q`); port "
    "state and counters: perfquery, ibqueryerrors, ibdiagnet, ibswinfo, mlxlink, nvlink "
    "(`nvidia-smi nvlink -s/-R/-gt/-e`, `dcgmi nvlink`), dcgmi-diag, fabric-manager, "
    "rdma-link, show-gids, ethtool (`ethtool -S`); Slurm: sinfo, scontrol-node, squeue, "
    "scontrol-job, sacct; or a plugin's format. Left out, the format is recognised"
)


class _Formats:
    """argparse ``choices`` that ask the plugin host only when ``import`` is parsed."""

    def __contains__(self, item: object) -> bool:
        from fabricui.services.importing import importer_table, importers_missing

        # With the built-in importers plugin off, let the word through: ``run`` says why
        # there is no format to choose from (argparse would list none).
        return item in importer_table() or importers_missing() is not None

    def __iter__(self) -> Iterator[str]:
        from fabricui.services.importing import importer_table

        return iter(sorted(importer_table()))


def add_parser(subparsers: Any) -> argparse.ArgumentParser:
    """Add the ``import`` subcommand.

    Args:
        subparsers: The object ``ArgumentParser.add_subparsers()`` returned.
    """
    parser: argparse.ArgumentParser = subparsers.add_parser(
        "import",
        help="read what a tool printed (topology, port state and counters, NVLink state, "
        "Slurm nodes and jobs): show it, state what is missing, write a topology spec",
    )
    parser.add_argument(
        "format", metavar="FORMAT", nargs="?", choices=_Formats(), help=FORMATS_HELP
    )
    parser.add_argument("file", metavar="FILE", help="the saved output, or - to read stdin")
    parser.add_argument("--json", action="store_true", help="print the parsed data as JSON")
    parser.add_argument(
        "-o",
        "--output",
        type=output_path,
        metavar="YAML",
        help="write a topology spec that `fabricui explore --topology YAML` opens (-: print "
        "only the spec on stdout, the summary on stderr)",
    )
    parser.add_argument("--force", action="store_true", help="let -o replace an existing file")
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
    parser.add_argument(
        "--names",
        metavar="FILE",
        help="cluster formats: a GUID-to-hostname map ('H-<guid> host', 'host: 0x<guid>', "
        "CSV) naming adapters the fabric names by GUID; unmatched GUIDs are listed",
    )
    parser.add_argument(
        "--domains",
        metavar="PATH",
        help="-o with a cluster format: each tray's NVLink domain, a folder of per-tray "
        "`nvidia-smi -q` outputs (named by host), pdsh-prefixed `nvidia-smi -q`, "
        "'HOST CLUSTERUUID [CLIQUEID]' lines or an NMX compute-node JSON; the trays of a "
        "domain share its NVLink switch",
    )
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
    return parser


def _warn(lines: tuple[str, ...] | list[str]) -> None:
    for line in lines:
        print(f"fabricui: warning: {line}", file=sys.stderr)


def run(args: argparse.Namespace) -> int:
    """Parse FILE with the FORMAT importer; print a summary or JSON; write ``-o``.

    Returns:
        0 (errors are raised as FabricError and printed by the CLI).

    Raises:
        ConfigError: Unknown format, or -o options without -o.
        ParseError: The input cannot be read or is not FORMAT.
    """
    from fabricui.services import importing

    detected = args.format is None
    request = importing.ImportRequest(
        format=args.format or "",
        file=args.file,
        as_json=args.json,
        output=args.output,
        force=args.force,
        nodes=args.nodes,
        net=args.net,
        gpu=args.gpu,
        hwdb_dirs=tuple(getattr(args, "hwdb", None) or ()),
        node=getattr(args, "node", None),
        hosts=getattr(args, "hosts", None),
        names=getattr(args, "names", None),
        domains=getattr(args, "domains", None),
    )
    importing.check_request(request)
    if not detected:
        importing.require_importer(request.format)
    if args.file == "-" and sys.stdin is not None and sys.stdin.isatty():
        print("fabricui: reading the output from stdin (end with Ctrl-D)", file=sys.stderr)
    text, origin = importing.read_input(args.file)
    if detected:
        request = importing.detected_request(request, text, origin)
    imported = importing.import_text(request, text, origin)
    importing.check_cluster_request(request, imported)
    _warn(imported.warnings)
    # With -o - stdout is the spec alone (`import F -o - > s.yaml`), so the summary moves.
    shown = sys.stderr if request.output == "-" else sys.stdout
    print(imported.shown, file=shown)
    if not args.json:
        for note in imported.notes:
            print(f"  note: {note}", file=shown)
        if detected:
            print(
                f"  note: read as {request.format} output (name the format to be sure)",
                file=shown,
            )
    if request.output:
        _write_spec(request, imported, request.output)
    return 0


def _write_spec(request: ImportRequest, imported: Imported, output: str) -> None:
    """Make the spec and write it to ``output`` (``-o``; ``-``: standard output), saying
    where it went."""
    from fabricui.services.importing import is_cluster, make_cluster_spec, make_spec

    spec = (make_cluster_spec if is_cluster(imported) else make_spec)(request, imported)
    _warn(spec.warnings)
    if output == "-":
        sys.stdout.write(spec.text)
        return
    write_text(Path(output), spec.text, force=request.force)
    stream = sys.stderr if request.as_json else sys.stdout
    print(
        f"wrote {shown_path(output)}: {spec.summary}; open it with "
        f"`fabricui explore --topology {shown_path(output)}`",
        file=stream,
    )
