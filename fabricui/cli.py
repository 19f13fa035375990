"""Command-line interface: argument parsing and printing only; every figure also as --json."""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any, NoReturn

from fabricui import __version__
from fabricui.commands import calibrate as calibrate_command
from fabricui.commands import collective as collective_command
from fabricui.commands import doctor as doctor_command
from fabricui.commands import explore as explore_command
from fabricui.commands import import_cmd as import_command
from fabricui.commands import plan as plan_command
from fabricui.commands import plugins as plugins_command
from fabricui.commands import probe as probe_command
from fabricui.commands import snapshot as snapshot_command
from fabricui.commands import strategies as strategies_command
from fabricui.commands import traffic as traffic_command
from fabricui.errors import ConfigError, FabricError
from fabricui.vocabulary import DEFAULT_TOPOLOGY

EXIT_USAGE = 2


class _Parser(argparse.ArgumentParser):
    """argparse with one-line errors (exit status 2), never a multi-line usage dump."""

    def error(self, message: str) -> NoReturn:
        raise ConfigError(f"{self.prog}: {message} (see {self.prog} --help)")


def _add_topology_args(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--topology",
        "-t",
        default=DEFAULT_TOPOLOGY,
        help="built-in topology id (see `fabricui topologies`) or a YAML file path "
        "(default: dgx-h100-pod)",
    )
    parser.add_argument("--nodes", type=int, help="rescale the topology to N nodes")


def _positive_size(text: str) -> int:
    from fabricui.units import parse_size

    return parse_size(text)


def build_parser() -> argparse.ArgumentParser:
    """The full argument parser (also used by tests and the docs)."""
    parser = _Parser(
        prog="fabricui",
        description="Explore GPU cluster fabrics: paths, bottlenecks and communication costs.",
    )
    parser.add_argument("--version", action="version", version=f"fabricui {__version__}")
    parser.add_argument(
        "--hwdb",
        action="append",
        type=Path,
        default=[],
        metavar="DIR",
        help="extra hardware-database directory whose records add to or override the built-in ones",
    )
    parser.add_argument(
        "--calibration",
        type=Path,
        metavar="FILE",
        help="calibration overlay from `fabricui calibrate`: fitted link efficiency and "
        "latency applied to every command and the TUI",
    )
    sub = parser.add_subparsers(dest="command", parser_class=_Parser, metavar="COMMAND")

    path = sub.add_parser("path", help="route between two GPUs: hops, bottleneck, latency")
    _add_topology_args(path)
    path.add_argument("--src", required=True, help="source GPU: n<node>.g<gpu> or a global rank")
    path.add_argument("--dst", required=True, help="destination GPU")
    path.add_argument(
        "--hosts",
        metavar="HOSTLIST",
        help="place a job on an imported cluster's hosts (Slurm hostlist; default "
        "$SLURM_JOB_NODELIST on such a cluster): --src/--dst are then job ranks or HOST.gK",
    )
    path.add_argument(
        "--size",
        type=_positive_size,
        help="message size for the transfer time: 8, 64K, 1G (binary), 1GB, 1GiB",
    )
    path.add_argument("--json", action="store_true", help="print one JSON object")

    topologies = sub.add_parser("topologies", help="list the built-in topologies")
    topologies.add_argument("--json", action="store_true", help="print JSON")

    hwdb = sub.add_parser("hwdb", help="inspect and check the hardware database")
    hwdb_sub = hwdb.add_subparsers(dest="hwdb_command", parser_class=_Parser, metavar="ACTION")
    hwdb_list = hwdb_sub.add_parser("list", help="list records of one kind, or all kinds")
    hwdb_list.add_argument(
        "kind", nargs="?", help="links, gpus, nics, switches, topologies or models"
    )
    hwdb_list.add_argument("--json", action="store_true", help="print JSON")
    hwdb_show = hwdb_sub.add_parser("show", help="show one record with its sources")
    hwdb_show.add_argument("id", help="record id (e.g. nvlink4, h100-sxm, dgx-h100-pod)")
    hwdb_show.add_argument("--json", action="store_true", help="print JSON")
    hwdb_validate = hwdb_sub.add_parser(
        "validate", help="check the database, another hwdb directory, or one topology file"
    )
    hwdb_validate.add_argument(
        "path", nargs="?", type=Path, help="a hwdb directory or a topology YAML file"
    )
    collective_command.add_parser(sub)
    plan_command.add_parser(sub)
    strategies_command.add_parser(sub)
    plugins_command.add_parser(sub)
    traffic_command.add_parser(sub)
    doctor_command.add_parser(sub)
    calibrate_command.add_parser(sub)
    import_command.add_parser(sub)
    explore_command.add_parser(sub)
    snapshot_command.add_parser(sub)
    probe_command.add_parser(sub)
    return parser


def _catalog(args: argparse.Namespace):  # type: ignore[no-untyped-def]
    from fabricui.services.session import load_catalog_with_plugins

    return load_catalog_with_plugins(args.hwdb, calibration=args.calibration)


def _print_json(data: Any) -> None:
    print(json.dumps(data, indent=2))


def _cmd_path(args: argparse.Namespace) -> int:
    from fabricui.engine.evaluate import evaluate_path
    from fabricui.hwdb.resolve import resolve_topology
    from fabricui.report import render_path
    from fabricui.services.session import build_fabric_with_plugins

    catalog = _catalog(args)
    spec = resolve_topology(args.topology, catalog, args.nodes)
    fabric = build_fabric_with_plugins(spec, catalog)
    from fabricui.services.jobs import NODELIST_ENV, place_job

    src, dst, job = args.src, args.dst, None
    if args.hosts or (spec.cluster and spec.cluster.hosts and os.environ.get(NODELIST_ENV)):
        job = place_job(fabric, args.hosts)
        src, dst = str(job.rank_of(src)), str(job.rank_of(dst))
    report = evaluate_path(fabric, src, dst, args.size)
    if args.json:
        _print_json({**report.to_json(), **({"job": job.to_json()} if job else {})})
    else:
        if job is not None:
            print(job.summary())
        print(render_path(report, fabric))
    return 0


def _cmd_topologies(args: argparse.Namespace) -> int:
    catalog = _catalog(args)
    specs = sorted(catalog.topologies.values(), key=lambda s: s.id)
    if args.json:
        _print_json(
            [
                {
                    "id": s.id,
                    "description": s.description,
                    "gpu": s.gpu,
                    "nodes": s.nodes,
                    "gpus_per_node": s.gpus_per_node,
                    "gpus": s.n_gpus,
                }
                for s in specs
            ]
        )
        return 0
    width = max(len(s.id) for s in specs)
    for s in specs:
        print(f"{s.id:<{width}}  {s.n_gpus:>4} GPUs  {s.description}")
    return 0


def _record_json(record: Any) -> dict[str, Any]:
    data = dataclasses.asdict(record)
    return {k: (list(v) if isinstance(v, tuple) else v) for k, v in data.items() if k != "origin"}


def _cmd_hwdb(args: argparse.Namespace) -> int:
    from fabricui.hwdb.catalog import KINDS, unknown_id_message

    if args.hwdb_command is None:
        raise ConfigError("fabricui hwdb: choose an action: list, show or validate")
    if args.hwdb_command == "validate":
        return _cmd_hwdb_validate(args)
    catalog = _catalog(args)
    if args.hwdb_command == "list":
        kinds = [args.kind] if args.kind else list(KINDS)
        for kind in kinds:
            if kind not in KINDS:
                raise ConfigError(unknown_id_message("record kind", kind, KINDS))
        if args.json:
            _print_json({k: sorted(catalog.table(k)) for k in kinds})
            return 0
        for kind in kinds:
            table = catalog.table(kind)
            print(f"{kind} ({len(table)})")
            for record_id in sorted(table):
                record = table[record_id]
                label = getattr(record, "name", "") or getattr(record, "description", "")
                print(f"  {record_id:<22} {label}")
        return 0
    kind, record = catalog.find(args.id)
    if args.json:
        _print_json({"kind": kind, **_record_json(record)})
        return 0
    print(
        f"{kind[:-1] if kind.endswith('s') else kind} {record.id}  "
        f"({catalog.origins.get((kind, record.id), '')})"
    )
    for key, value in _record_json(record).items():
        if key == "id" or value in (None, "", [], {}):
            continue
        if isinstance(value, dict):
            value = ", ".join(f"{k}={v}" for k, v in value.items())
        print(f"  {key:<20} {value}")
    return 0


def _cmd_hwdb_validate(args: argparse.Namespace) -> int:
    from fabricui.hwdb import default_hwdb_dir, load_catalog
    from fabricui.hwdb.topology_file import parse_topology
    from fabricui.hwdb.yamlfile import read_yaml

    target: Path | None = args.path
    if target is None or target.is_dir():
        dirs = [default_hwdb_dir(), *args.hwdb] + ([target] if target is not None else [])
        catalog = load_catalog(dirs)
        counts = ", ".join(
            f"{len(catalog.table(k))} {k}"
            for k in ("links", "gpus", "nics", "switches", "topologies", "models")
        )
        print(f"ok: {target or default_hwdb_dir()}: {counts}")
        return 0
    from fabricui.services.session import topology_builder

    catalog = _catalog(args)
    spec = parse_topology(read_yaml(target), catalog, default_id=target.stem)
    topology_builder(spec)
    print(f"ok: {target}: topology {spec.id}, {spec.nodes} x {spec.gpus_per_node} {spec.gpu}")
    return 0


COMMANDS = {
    "path": _cmd_path,
    "topologies": _cmd_topologies,
    "hwdb": _cmd_hwdb,
    "collective": collective_command.run,
    "plan": plan_command.run,
    "strategies": strategies_command.run,
    "plugins": plugins_command.run,
    "traffic": traffic_command.run,
    "doctor": doctor_command.run,
    "calibrate": calibrate_command.run,
    "import": import_command.run,
    "explore": explore_command.run,
    "snapshot": snapshot_command.run,
    "probe": probe_command.run,
}


def main(argv: Sequence[str] | None = None) -> int:
    """Run the CLI; returns the exit status (0 ok, 2 user error)."""
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
        if args.command is None:  # bare `fabricui` opens the explorer on the default topology
            return explore_command.run(args)
        status = COMMANDS[args.command](args)
        if args.command != "plugins":
            from fabricui.plugins import get_host

            get_host().report_failures(sys.stderr)
        return status
    except FabricError as exc:
        print(f"fabricui: error: {exc.message}", file=sys.stderr)
        return EXIT_USAGE
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        return 0
