"""``fabricui calibrate``: fit a topology's link figures to nccl-tests results, write an overlay.

Every run's rows are sorted by size and split alternately: even rows are fitted, odd rows
held out, so the report shows whether the fitted figures predict sizes they never saw.
``--held-out FILE`` adds whole runs (another op or algorithm on the same cluster) that only
check the fit. The overlay (``-o FILE``) holds the changed link generations; give it to any
later command with ``fabricui --calibration FILE``. What a run does not say (where its ranks
ran) is assumed and said; a fitted figure that ends on its bound is flagged.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from fabricui.commands.options import catalog_request, completes, output_file, topology_name
from fabricui.files import shown_path
from fabricui.render.output import print_json
from fabricui.render.progress import terminal_progress
from fabricui.units import format_bytes
from fabricui.vocabulary import OPS, op_name

#: Median error of the fitted rows under which unchanged figures mean the database fits.
FITS_WELL = 0.10


def add_parser(subparsers: Any) -> argparse.ArgumentParser:
    """Add the ``calibrate`` subcommand.

    Args:
        subparsers: The object ``ArgumentParser.add_subparsers()`` returned.

    Returns:
        The subcommand's parser.
    """
    parser = subparsers.add_parser(
        "calibrate",
        help="fit a topology's link efficiency and latency to nccl-tests results",
        description="Fit the link efficiency and latency of TOPOLOGY's link generations to "
        "nccl-tests output files (or measurements YAML entries), print predicted vs measured "
        "before and after for fitted and held-out rows, and write an overlay for "
        "`fabricui --calibration FILE`.",
    )
    parser.add_argument(
        "results",
        nargs="+",
        type=Path,
        metavar="RESULTS",
        help="nccl-tests output files (a run given twice is fitted once)",
    )
    parser.add_argument(
        "--topology",
        "-t",
        type=topology_name,
        required=True,
        help="built-in topology id or YAML file the runs ran on",
    )
    parser.add_argument(
        "--nodes", type=int, help="node count of the runs (default: their host count)"
    )
    parser.add_argument(
        "--hosts",
        metavar="HOSTLIST",
        help="on an imported cluster: the hosts the runs ran on (Slurm hostlist, e.g. "
        "'luna-[0100-0103]'), as many as the rank lines name, in the order of their ranks "
        "(default: the hosts the rank lines name when the cluster has them, else its first "
        "hosts, said so)",
    )
    op = parser.add_argument(
        "--op",
        type=op_argument,
        metavar="OP",
        help="collective of files that do not name it (all_reduce, alltoall, AllGather ...)",
    )
    completes(op, OPS)
    algo = parser.add_argument(
        "--algo",
        help="algorithm (NCCL_ALGO) of runs whose output does not print it, e.g. ring "
        "(default: auto, the model's choice)",
    )
    completes(algo, "algorithm")
    parser.add_argument(
        "--entry",
        action="append",
        default=[],
        metavar="ID|N",
        help="measurements-YAML entry to use; a number N: the N-th run (from 1, in file "
        "order) of each nccl-tests output among RESULTS, whose runs start where sizes "
        "start over or another test starts (repeatable; default: every entry and run; "
        "--held-out outputs are used whole)",
    )
    parser.add_argument(
        "--held-out",
        action="append",
        default=[],
        type=Path,
        metavar="FILE",
        help="results of the same cluster used only to check the fit, whole (--entry "
        "picks among RESULTS only) but for the runs also fitted, each run once (repeatable)",
    )
    parser.add_argument(
        "-o", "--output", type=output_file, metavar="FILE", help="write the overlay"
    )
    parser.add_argument("--force", action="store_true", help="replace an existing --output")
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    return parser


def op_argument(text: str) -> str:
    """``--op`` in the spellings people use (``alltoall``, ``AllReduce``), as ``collective``
    takes its operation.

    Raises:
        argparse.ArgumentTypeError: No collective of that name.
    """
    op = op_name(text)
    if op is None:
        raise argparse.ArgumentTypeError(f"unknown collective {text!r} (one of {', '.join(OPS)})")
    return op


def run(args: argparse.Namespace) -> int:
    """Fit, print the before/after tables and write the overlay; returns 0.

    Raises:
        FabricError: Unreadable results, an unknown topology, runs that do not fit it, or
            an existing ``--output`` without ``--force``.
    """
    from fabricui.services.calibrate import CALIBRATE_PHASES, CalibrateRequest, calibrate

    request = CalibrateRequest(
        topology=args.topology,
        results=tuple(args.results),
        held_out=tuple(args.held_out),
        nodes=args.nodes,
        op=args.op,
        algo=args.algo,
        entries=tuple(args.entry),
        hosts=args.hosts,
        output=args.output,
        force=args.force,
        catalog=catalog_request(args),
    )
    with terminal_progress("calibrate", CALIBRATE_PHASES, quiet=args.json) as progress:
        calibration = calibrate(request, progress)
    if args.json:
        print_json(calibration.report)
    else:
        print(render(calibration.report))
    from fabricui.services.calibrate import bound_lines, dropped_lines, repeat_lines, skipped_line

    skipped = skipped_line(calibration.report)
    warnings = dropped_lines(calibration.report) + ([skipped] if skipped else [])
    warnings += repeat_lines(calibration.report)
    if args.json:  # the text report says these on the figures' own lines
        warnings += bound_lines(calibration.report)
    for line in warnings:
        print(f"fabricui: warning: {line}", file=sys.stderr)
    if calibration.held_out_worse:
        print(
            "fabricui: warning: held-out rows got worse with the fitted figures; the "
            "overlay fits noise rather than the cluster",
            file=sys.stderr,
        )
    return 0


def render(report: dict[str, Any]) -> str:
    """Text report: fitted figures, per-row before/after, median errors.

    Args:
        report: The ``--json`` object.

    Returns:
        Lines joined with newlines.
    """
    from fabricui.services.calibrate import pct, ranked_hostlist

    rows_total = sum(len(r["rows"]) for r in report["runs"])
    lines = [
        f"calibrating {report['topology']} on {len(report['runs'])} run(s), {rows_total} rows",
        "link figures (database -> fitted):",
    ]
    for gen, entry in report["links"].items():
        eff, lat = entry["efficiency"], entry["lat_us"]
        mark = _link_mark(entry)
        lines.append(
            f"  {gen:<12} efficiency {eff['before']:.3f} -> {eff['after']:.3f}   "
            f"lat_us {lat['before']:.3f} -> {lat['after']:.3f}{mark}"
        )
    for run in report["runs"]:
        lines.append("")
        hosts = f" ({ranked_hostlist(run['hosts'])})" if run.get("hosts") else ""
        lines.append(
            f"{shown_path(run['source'])}: {run['op']}, {run['nranks']} ranks on "
            f"{run['nodes']} node(s){hosts}{_devices_text(run)}, "
            f"algo {run['algo']}{_launched(run)}"
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
    if report.get("assumptions"):
        lines += ["", "assumed:"] + [f"  - {text}" for text in report["assumptions"]]
    errors = report["errors"]
    lines += [
        "",
        "median |t_pred / t_meas - 1|   before    after",
        f"  fitted rows                {pct(errors['fit']['before']):>8} "
        f"{pct(errors['fit']['after']):>8}",
        f"  held-out rows              {pct(errors['held_out']['before']):>8} "
        f"{pct(errors['held_out']['after']):>8}",
    ]
    if not report["overlay"]:
        after = errors["fit"]["after"]
        if after is not None and after > FITS_WELL:
            lines.append(
                f"no link figure changed, yet predictions are off by {pct(after)}: the runs "
                "may not be of this topology or node count (a degraded link, another "
                "fabric); nothing written"
            )
        else:
            lines.append(
                "no link figure changed: the database already fits these runs (nothing written)"
            )
    if report.get("output"):
        lines.append(
            f"wrote {shown_path(report['output'])} (apply with: fabricui --calibration "
            f"{shown_path(report['output'])} ...)"
        )
    elif report["overlay"]:
        lines.append("overlay not written (give -o FILE)")
    return "\n".join(lines)


#: What the text report says of a figure the fit did not move, by its JSON ``status``.
STATUS_WORDS = {
    "kept": "kept: no other value fits clearly better",
    "unconstrained": "not constrained by these runs",
    "untried": "not tried: the fit tries the {max} busiest generations the runs depend on",
    "excluded": "not fitted: calibrate fits scale-out and scale-up latency only",
}


def _link_mark(entry: dict[str, Any]) -> str:
    """What a generation's line adds to its figures: the figures on a bound (the runs are
    outside what the model explains), then what became of each figure not fitted (kept,
    not constrained ...); empty when both were fitted and are within their bounds."""
    from fabricui.services.calibrate import MAX_GENERATIONS, bound_text

    def words(status: str) -> str:
        return STATUS_WORDS.get(status, "not fitted").format(max=MAX_GENERATIONS)

    parts = []
    at_bound = entry.get("at_bound")
    if at_bound:
        parts.append(
            f"{', '.join(bound_text(n, w) for n, w in at_bound.items())}: the runs are "
            "outside what the model explains; do not trust "
            + ("this figure" if len(at_bound) == 1 else "these figures")
        )
    status = entry.get("status") or {}
    others = {name: what for name, what in status.items() if what != "fitted"}
    if others and len(others) == len(status) and len(set(others.values())) == 1:
        parts.append(words(next(iter(others.values()))))
    elif others:
        parts.append("; ".join(f"{name} {words(what)}" for name, what in others.items()))
    return f"   ({'; '.join(parts)})" if parts else ""


def _devices_text(run: dict[str, Any]) -> str:
    """``, GPUs 4-7 of each`` when the run's ranks are priced on other GPUs of their nodes
    than the first ones, ``, the GPUs its rank lines name`` when they differ between
    nodes; empty when every node's ranks are on its GPUs 0, 1 ..."""
    devices = [tuple(d) for d in run.get("devices") or []]
    if not devices or all(d == tuple(range(len(d))) for d in devices):
        return ""
    if len(set(devices)) > 1:
        return ", the GPUs its rank lines name (JSON devices)"
    (shared,) = set(devices)
    if shared == tuple(range(shared[0], shared[-1] + 1)):
        return (
            f", GPUs {shared[0]}-{shared[-1]} of each"
            if len(shared) > 1
            else (f", GPU {shared[0]} of each")
        )
    return f", GPUs {', '.join(str(d) for d in shared)} of each"


def _launched(run: dict[str, Any]) -> str:
    """``, each thread drove 8 GPUs`` for a run one thread issued on several GPUs (its
    times, fitted and predicted, include that thread's issue), else empty."""
    if not run.get("single_process"):
        return ""
    per_thread = run.get("gpus_per_thread")
    if per_thread:
        return f", each thread drove {per_thread} GPUs"
    return ", one process drove every GPU of its node"
