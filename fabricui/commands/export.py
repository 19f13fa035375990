"""``fabricui export -t TOPO --format dot|svg|pdf``: the topology as a diagram for design
reviews (hosts with their devices, the network's tiers, links coloured by class)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from fabricui.commands.options import (
    add_topology_options,
    catalog,
    output_path,
    topology_request,
)
from fabricui.errors import ConfigError
from fabricui.files import check_target, shown_path, write_bytes
from fabricui.services import admission

if TYPE_CHECKING:
    from fabricui.fabric.fabric import Fabric

#: Formats ``export`` writes.
FORMATS = ("dot", "svg", "pdf")
#: Memory per device drawn (its box, label, links and their text in the file), per format
#: [bytes]. Measured 2026-11-29 as peak RSS over the fabric's: 1.7 to 2.1 KB per device
#: for SVG and PDF, 0.7 to 0.9 KB for DOT, drawing 1,024 to 4,096 hosts of
#: h100-ib-cluster and gb200-nvl72-cluster. Rounded up.
DRAWN_DEVICE_BYTES = {"dot": 1200, "svg": 3000, "pdf": 3000}


def add_parser(subparsers: Any) -> argparse.ArgumentParser:
    """Add the ``export`` subcommand.

    Args:
        subparsers: The object ``ArgumentParser.add_subparsers()`` returned.
    """
    parser: argparse.ArgumentParser = subparsers.add_parser(
        "export",
        help="draw the topology as a diagram: Graphviz DOT, SVG or PDF",
        description="SVG and PDF are drawn by fabricui itself (no Graphviz needed); DOT is "
        "for Graphviz (dot -Tpng fabric.dot > fabric.png) or for editing.",
    )
    add_topology_options(parser)
    parser.add_argument(
        "--format",
        choices=FORMATS,
        help="dot, svg or pdf (default: from -o's suffix, else dot)",
    )
    parser.add_argument(
        "-o",
        "--output",
        type=output_path,
        metavar="FILE",
        help="write FILE (default: standard output)",
    )
    parser.add_argument("--force", action="store_true", help="let -o replace an existing file")
    parser.add_argument(
        "--max-hosts",
        type=int,
        default=None,
        metavar="N",
        help="hosts drawn before the rest are summarised in one box (default: 8)",
    )
    return parser


def run(args: argparse.Namespace) -> int:
    """Draw and write the diagram; returns 0.

    Raises:
        FabricError: Unknown topology, a bad format or file name, an existing file.
    """
    from fabricui.render.diagram import (
        DEFAULT_MAX_HOSTS,
        pdf_unsupported,
        to_dot,
        to_pdf,
        to_svg,
        topology_drawing,
    )
    from fabricui.services.session import load_fabric

    output = args.output
    fmt = args.format
    if output and output != "-":
        suffix = Path(output).suffix.lower().lstrip(".")
        if fmt is not None and suffix in FORMATS and suffix != fmt:
            # As snapshot: an SVG in a .dot file opens as neither.
            raise ConfigError(f"-o {output} is .{suffix} but --format is {fmt}")
        if fmt is None:
            if suffix not in FORMATS:
                raise ConfigError(f"-o {output}: use a .dot, .svg or .pdf name, or --format")
            fmt = suffix
        check_target(Path(output), args.force)
    fmt = fmt or "dot"
    if fmt == "pdf" and (not output or output == "-") and sys.stdout.isatty():
        raise ConfigError("a PDF is not for a terminal: give -o FILE.pdf or redirect the output")
    max_hosts = args.max_hosts if args.max_hosts is not None else DEFAULT_MAX_HOSTS
    if max_hosts < 1:
        raise ConfigError(f"--max-hosts must be at least 1 (got {max_hosts})")
    fabric = load_fabric(topology_request(args), catalog(args))
    admit_drawing(fabric, max_hosts, fmt)
    if fmt == "dot":
        data = to_dot(fabric, max_hosts).encode()
    elif fmt == "svg":
        data = to_svg(topology_drawing(fabric, max_hosts)).encode()
    else:
        drawing = topology_drawing(fabric, max_hosts)
        data = to_pdf(drawing)
        missing = pdf_unsupported(drawing)
        if missing:
            print(
                "fabricui: warning: the PDF's standard fonts have no "
                f"{missing[:20]!r}: drawn as '?' (--format svg keeps every character)",
                file=sys.stderr,
            )
    if output and output != "-":
        write_bytes(Path(output), data, args.force)
        print(f"wrote {shown_path(output)}", file=sys.stderr)
    elif fmt == "pdf":
        sys.stdout.flush()
        sys.stdout.buffer.write(data)
    else:
        sys.stdout.write(data.decode("utf-8"))
    return 0


def admit_drawing(fabric: Fabric, max_hosts: int, fmt: str) -> None:
    """Refuse, before drawing, a diagram of more hosts than the memory budget holds (a
    ``--max-hosts`` in the thousands on a 100,000-GPU fabric), with the count that fits.

    Raises:
        ConfigError: One line: the estimate, the budget and the ``--max-hosts`` that fits.
    """
    from fabricui.render.diagram import drawn_hosts

    hosts, _ = drawn_hosts(fabric, max_hosts)
    devices = sum(len(fabric.host_device_ids(node)) for node in hosts)
    start = admission.resident_bytes()
    budget = admission.memory_budget()
    each = DRAWN_DEVICE_BYTES[fmt]
    per_host = each * devices / max(len(hosts), 1)
    most = int((budget - start) // per_host) if per_host else len(hosts)
    advice = (
        f"use --max-hosts {most} or fewer"
        if most >= 1
        else admission.raise_budget(start + int(per_host), "one host")
    )
    work = admission.Work(f"a diagram of {len(hosts):,} hosts", devices, "devices", each, start)
    admission.admit(work, budget, advice)
