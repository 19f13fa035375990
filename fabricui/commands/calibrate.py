"""``fabricui calibrate``: fit a topology's link figures to nccl-tests results, write an overlay.

Every run's rows are sorted by size and split alternately: even rows are fitted, odd rows
held out, so the report shows whether the fitted figures predict sizes they never saw.
``--held-out FILE`` adds whole runs (another op or algorithm on the same cluster) that only
check the fit. The overlay (``-o FILE``) holds the changed link generations; give it to any
later command with ``fabricui --calibration FILE``.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from fabricui.errors import ConfigError

if TYPE_CHECKING:
    from fabricui.engine.calibration import CalibrationCase, CalibrationResult
    from fabricui.engine.types import CollectiveAlgorithm
    from fabricui.fabric.fabric import Fabric
    from fabricui.hwdb.catalog import Catalog
    from fabricui.importers.nccl_tests import ResultRun
    from fabricui.model import TopologySpec

#: Link tiers in the order the fit tries their generations (the network first).
TIER_ORDER = ("scale-out", "scale-up", "host", "memory", "on-chip")
#: Tiers whose generations' latency may be fitted.
LATENCY_TIERS = ("scale-out", "scale-up")


def add_parser(subparsers: Any) -> argparse.ArgumentParser:
    """Add the ``calibrate`` subcommand.

    Args:
        subparsers: The object ``ArgumentParser.add_subparsers()`` returned.

    Returns:
        The subcommand's parser.
    """
    from fabricui.vocabulary import OPS

    parser = subparsers.add_parser(
        "calibrate",
        help="fit a topology's link efficiency and latency to nccl-tests results",
        description="Fit the link efficiency and latency of TOPOLOGY's link generations to "
        "nccl-tests output files (or measurements YAML entries), print predicted vs measured "
        "before and after for fitted and held-out rows, and write an overlay for "
        "`fabricui --calibration FILE`.",
    )
    parser.add_argument(
        "results", nargs="+", type=Path, metavar="RESULTS", help="nccl-tests output files"
    )
    parser.add_argument(
        "--topology",
        "-t",
        required=True,
        help="built-in topology id or YAML file the runs ran on",
    )
    parser.add_argument(
        "--nodes", type=int, help="node count of the runs (default: their host count)"
    )
    parser.add_argument(
        "--op", choices=OPS, metavar="OP", help="collective of files that do not name it"
    )
    parser.add_argument(
        "--algo",
        help="algorithm (NCCL_ALGO) of runs whose output does not print it, e.g. ring "
        "(default: auto, the model's choice)",
    )
    parser.add_argument(
        "--entry",
        action="append",
        default=[],
        metavar="ID",
        help="measurements-YAML entry to use (repeatable; default: every entry)",
    )
    parser.add_argument(
        "--held-out",
        action="append",
        default=[],
        type=Path,
        metavar="FILE",
        help="results of the same cluster used only to check the fit (repeatable)",
    )
    parser.add_argument("-o", "--output", type=Path, metavar="FILE", help="write the overlay")
    parser.add_argument("--force", action="store_true", help="replace an existing --output")
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    return parser


def _spec_for(spec: TopologySpec, nodes: int) -> TopologySpec:
    """The topology rescaled to the runs' node count."""
    if nodes == spec.nodes:
        return spec
    if not spec.nodes_settable:
        raise ConfigError(
            f"topology {spec.id} has a fixed node count ({spec.nodes}), runs use {nodes}"
        )
    if nodes > 1 and spec.net is None:
        raise ConfigError(f"topology {spec.id} has no network; the runs span {nodes} nodes")
    return spec.with_nodes(nodes)


def _case(
    run: ResultRun,
    spec: TopologySpec,
    catalog: Catalog,
    fabrics: dict[int, Fabric],
    args: argparse.Namespace,
    held_out: bool,
) -> CalibrationCase:
    """A calibration case of one run: its fabric, ranks, algorithm and fit mask."""
    import numpy as np

    from fabricui.engine.calibration import CalibrationCase, split_alternate
    from fabricui.services.session import build_fabric_with_plugins, collective_algorithms

    if run.op is None:
        raise ConfigError(f"{run.source}: cannot tell the collective; give --op")
    per_node = spec.gpus_per_node
    nodes = args.nodes or run.nodes
    if nodes is None:
        nodes = math.ceil(run.nranks / per_node) if run.nranks else spec.nodes
    if nodes < 1:
        raise ConfigError(f"--nodes must be at least 1 (got {nodes})")
    if nodes not in fabrics:
        fabrics[nodes] = build_fabric_with_plugins(_spec_for(spec, nodes), catalog)
    fabric = fabrics[nodes]
    nranks = run.nranks or fabric.n_gpus
    if nranks % nodes or nranks // nodes > per_node:
        raise ConfigError(
            f"{run.source}: {nranks} ranks do not fit {nodes} nodes of {per_node} GPUs "
            f"of {spec.id} (use --nodes)"
        )
    local = nranks // nodes
    ranks = (np.arange(nodes)[:, None] * per_node + np.arange(local)[None, :]).reshape(-1)
    algorithms = collective_algorithms(run.env)
    if run.env.get("NCCL_ALGO"):
        algo = _forced_algo(run.env["NCCL_ALGO"], algorithms, strict=False)
    else:
        algo = _forced_algo(args.algo, algorithms)
    rows = sorted(run.rows, key=lambda r: r.size_bytes)
    sizes = np.array([r.size_bytes for r in rows], dtype=np.float64)
    times = np.array([r.time_us for r in rows], dtype=np.float64)
    fit = np.zeros(len(rows), dtype=bool) if held_out else split_alternate(len(rows))
    return CalibrationCase(
        label=run.source,
        fabric=fabric,
        op=run.op,
        size_bytes=sizes,
        time_us=times,
        fit=fit,
        ranks=ranks,
        algorithms=tuple(algorithms),
        algo=algo,
        single_process=run.single_process,
    )


def _forced_algo(
    value: str | None, algorithms: list[CollectiveAlgorithm], strict: bool = True
) -> str:
    """The engine algorithm an ``NCCL_ALGO`` value forces, or ``auto`` (lists such as
    ``ring,tree``, exclusions such as ``^nvls`` and, unless ``strict``, algorithms the model
    lacks leave the choice to the model)."""
    name = (value or "").strip().lower()
    known = {a.name for a in algorithms}
    if not name or name == "auto":
        return "auto"
    if name in known:
        return name
    if "," in name or name.startswith("^") or not strict:
        return "auto"
    raise ConfigError(f"unknown algorithm {value!r} (known: {', '.join(sorted(known))})")


def _generation_order(catalog: Catalog, generations: list[str]) -> tuple[list[str], list[str]]:
    """Generations by tier (network first) and those whose latency may be fitted."""
    rank = {tier: i for i, tier in enumerate(TIER_ORDER)}

    def tier(gen: str) -> str:
        link = catalog.links.get(gen)
        return link.tier if link is not None else "host"

    order = sorted(generations, key=lambda g: (rank.get(tier(g), len(rank)), generations.index(g)))
    return order, [g for g in order if tier(g) in LATENCY_TIERS]


def run(args: argparse.Namespace) -> int:
    """Fit, print the before/after tables and write the overlay; returns 0.

    Raises:
        FabricError: Unreadable results, an unknown topology, runs that do not fit it, or
            an existing ``--output`` without ``--force``.
    """
    from fabricui.engine.calibration import fit_links
    from fabricui.hwdb.overlay import (
        CalibrationOverlay,
        LinkCalibration,
        overlay_yaml,
        write_overlay,
    )
    from fabricui.hwdb.resolve import resolve_topology
    from fabricui.importers.nccl_tests import read_results
    from fabricui.services.session import collective_algorithms, load_catalog_with_plugins

    if args.output is not None:
        from fabricui.files import check_target

        check_target(args.output, args.force)
    if args.algo:
        _forced_algo(args.algo, collective_algorithms())
    catalog = load_catalog_with_plugins(
        getattr(args, "hwdb", None) or [], calibration=getattr(args, "calibration", None)
    )
    spec = resolve_topology(args.topology, catalog)
    fit_runs = [r for path in args.results for r in read_results(path, args.op, args.entry)]
    check_runs = [r for path in args.held_out for r in read_results(path, args.op, args.entry)]
    fabrics: dict[int, Fabric] = {}
    cases = [_case(r, spec, catalog, fabrics, args, False) for r in fit_runs]
    cases += [_case(r, spec, catalog, fabrics, args, True) for r in check_runs]
    generations = list(dict.fromkeys(g for f in fabrics.values() for g in f.generations))
    order, latency = _generation_order(catalog, generations)
    result = fit_links(cases, generations=order, latency_generations=latency)

    changed = result.changed
    overlay = CalibrationOverlay(
        links={gen: LinkCalibration(**values) for gen, values in changed.items()},
        topology=spec.id,
        fitted_on=tuple(str(p) for p in args.results),
    )
    report = _report(spec, args, cases, result, fit_runs + check_runs)
    written = False
    if args.output is not None and changed:
        errors = result.errors
        comments = [
            "fabricui calibration overlay (fabricui calibrate); apply with: "
            f"fabricui --calibration {args.output.name} ...",
            f"median |t_pred/t_meas - 1|: fitted rows {_pct(errors['fit']['before'])} -> "
            f"{_pct(errors['fit']['after'])}, held-out rows "
            f"{_pct(errors['held_out']['before'])} -> {_pct(errors['held_out']['after'])}",
        ]
        write_overlay(args.output, overlay_yaml(overlay, comments), force=args.force)
        written = True
    report["output"] = str(args.output) if written else None
    if args.json:
        print(json.dumps(report, indent=2))
    else:
        print(render(report))
    held = result.errors["held_out"]
    if held["before"] is not None and held["after"] is not None and held["after"] > held["before"]:
        print(
            "fabricui: warning: held-out rows got worse with the fitted figures; the "
            "overlay fits noise rather than the cluster",
            file=sys.stderr,
        )
    return 0


def _pct(value: float | None) -> str:
    return "n/a" if value is None else f"{100 * value:.1f}%"


def _report(
    spec: TopologySpec,
    args: argparse.Namespace,
    cases: list[CalibrationCase],
    result: CalibrationResult,
    runs: list[ResultRun],
) -> dict[str, Any]:
    """The ``--json`` object (the text report renders the same)."""
    links = {}
    for gen in result.before:
        entry = {}
        for name in ("efficiency", "lat_us"):
            entry[name] = {"before": result.before[gen][name], "after": result.after[gen][name]}
        entry["fitted"] = [n for g, n in result.fitted if g == gen]
        links[gen] = entry
    runs_out = []
    for case, run, before, after in zip(
        cases, runs, result.predicted_before, result.predicted_after
    ):
        rows = [
            {
                "size_bytes": int(size),
                "measured_us": float(measured),
                "before_us": float(b),
                "after_us": float(a),
                "set": "fit" if fitted else "held_out",
            }
            for size, measured, b, a, fitted in zip(
                case.size_bytes, case.time_us, before, after, case.fit
            )
        ]
        runs_out.append(
            {
                "source": case.label,
                "op": case.op,
                "nranks": int(len(case.ranks)) if case.ranks is not None else None,
                "nodes": case.fabric.nodes,
                "algo": case.algo,
                "single_process": case.single_process,
                "entry": run.entry_id,
                "rows": rows,
            }
        )
    return {
        "topology": spec.id,
        "files": [str(p) for p in args.results],
        "held_out_files": [str(p) for p in args.held_out],
        "links": links,
        "overlay": result.changed,
        "errors": result.errors,
        "evaluations": result.evaluations,
        "runs": runs_out,
    }


def render(report: dict[str, Any]) -> str:
    """Text report: fitted figures, per-row before/after, median errors.

    Args:
        report: The ``--json`` object.

    Returns:
        Lines joined with newlines.
    """
    from fabricui.units import format_bytes

    rows_total = sum(len(r["rows"]) for r in report["runs"])
    lines = [
        f"calibrating {report['topology']} on {len(report['runs'])} run(s), {rows_total} rows",
        "link figures (database -> fitted):",
    ]
    for gen, entry in report["links"].items():
        eff, lat = entry["efficiency"], entry["lat_us"]
        mark = "" if entry["fitted"] else "   (not fitted: no row depends on it enough)"
        if not entry["fitted"] and gen not in report["overlay"]:
            mark = "   (unchanged)"
        lines.append(
            f"  {gen:<12} efficiency {eff['before']:.3f} -> {eff['after']:.3f}   "
            f"lat_us {lat['before']:.3f} -> {lat['after']:.3f}{mark}"
        )
    for run in report["runs"]:
        lines.append("")
        lines.append(
            f"{run['source']}: {run['op']}, {run['nranks']} ranks on {run['nodes']} node(s), "
            f"algo {run['algo']}"
        )
        lines.append(
            f"  {'size':>9}  {'measured us':>12}  {'before us':>11} {'err':>7}  "
            f"{'after us':>11} {'err':>7}  set"
        )
        for row in run["rows"]:
            measured = row["measured_us"]
            before = abs(row["before_us"] / measured - 1)
            after = abs(row["after_us"] / measured - 1)
            lines.append(
                f"  {format_bytes(row['size_bytes']):>9}  {measured:>12.2f}  "
                f"{row['before_us']:>11.2f} {100 * before:>6.1f}%  "
                f"{row['after_us']:>11.2f} {100 * after:>6.1f}%  {row['set'].replace('_', '-')}"
            )
    errors = report["errors"]
    lines += [
        "",
        "median |t_pred / t_meas - 1|   before    after",
        f"  fitted rows                {_pct(errors['fit']['before']):>8} "
        f"{_pct(errors['fit']['after']):>8}",
        f"  held-out rows              {_pct(errors['held_out']['before']):>8} "
        f"{_pct(errors['held_out']['after']):>8}",
    ]
    if not report["overlay"]:
        lines.append(
            "no link figure changed: the database already fits these runs (nothing written)"
        )
    if report.get("output"):
        lines.append(
            f"wrote {report['output']} (apply with: fabricui --calibration {report['output']} ...)"
        )
    elif report["overlay"]:
        lines.append("overlay not written (give -o FILE)")
    return "\n".join(lines)
