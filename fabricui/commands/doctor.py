"""``fabricui doctor``: read an NCCL_DEBUG=INFO log and list what is wrong with the setup;
with ``--topology`` also what is wrong with how the job used the fabric it ran on."""

from __future__ import annotations

import argparse
import sys
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

from fabricui.commands.options import add_topology_options, catalog, topology_request
from fabricui.errors import ConfigError
from fabricui.render.output import print_json
from fabricui.services.doctor_codes import CODES, ENV_READ, FABRIC_CODES, SEVERITIES
from fabricui.services.job_env import job_settings

if TYPE_CHECKING:
    from fabricui.importers.nccl_log import NcclLog
    from fabricui.services.doctor import Finding
    from fabricui.services.doctor_fabric import FabricCheck
    from fabricui.services.doctor_health import AllReducePrice, JobHealthFinding
    from fabricui.services.loaded import LoadedFabric


#: Exit status when ``--fail-on`` finds a finding that severe (2 is for unusable input).
EXIT_FINDINGS = 1


def add_parser(subparsers: Any) -> argparse.ArgumentParser:
    """Add the ``doctor`` subcommand.

    Args:
        subparsers: The object ``ArgumentParser.add_subparsers()`` returned.

    Returns:
        The subcommand's parser.
    """
    codes = "; ".join(f"{code}: {text}" for code, text in CODES.items())
    fabric_codes = "; ".join(f"{code}: {text}" for code, text in FABRIC_CODES.items())
    parser = subparsers.add_parser(
        "doctor",
        help="diagnose an NCCL_DEBUG=INFO log: network, transports, findings with fixes "
        "(with --topology: rings, trees, NICs and channels against the fabric the job ran on)",
        description="Read an NCCL_DEBUG=INFO log and report the NCCL version, the network, "
        "transports per connection type, channels and findings. Finding codes: "
        + codes
        + ". With --topology T (an imported cluster or the job's machines) the log's rings, trees, "
        "NICs and channels are checked against that fabric: " + fabric_codes,
    )
    add_topology_options(parser)
    parser.add_argument(
        "log",
        metavar="LOG",
        nargs="?",
        help="the log file, or - for standard input (optional with --health: the health "
        "files' findings, and with --topology the ranks and hosts they touch)",
    )
    parser.add_argument(
        "--env",
        action="append",
        default=[],
        metavar="NCCL_NAME=VALUE",
        help="an NCCL setting the job used that the log may not print (repeatable; the "
        "checks read " + ", ".join(ENV_READ) + "; another variable is said to change nothing)",
    )
    parser.add_argument(
        "--hosts",
        metavar="HOSTLIST",
        help="with --topology: the job's hosts (Slurm hostlist) when the log's host names "
        "are not the topology's; the log's hosts map to them in order of their first rank",
    )
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    parser.add_argument(
        "--fail-on",
        choices=("warning", "error"),
        help="exit 1 when a finding is at least this severe (for CI); default: exit 0",
    )
    return parser


def _env_hints(items: list[str], log: bool) -> dict[str, str]:
    """The ``--env`` settings, checked as ``collective --env`` checks them (one line for a
    word that is no job variable); those the log's checks do not read (all of them without
    a log) are said on stderr to change nothing, not dropped silently.

    Raises:
        ConfigError: A word that is not ``NCCL_NAME=value`` (or a libfabric or aws-ofi-nccl
            variable).
    """
    hints = job_settings(items)
    unread = [name for name in hints if not log or name not in ENV_READ]
    if unread:
        verb = "changes" if len(unread) == 1 else "change"
        reads = f"the log's checks read {', '.join(ENV_READ)}" if log else "there is no log"
        print(
            f"fabricui: warning: --env {', '.join(unread)} {verb} nothing here ({reads})",
            file=sys.stderr,
        )
    return hints


def run(args: argparse.Namespace) -> int:
    """Diagnose and print; returns 0, or 1 when ``--fail-on`` finds a finding that severe
    (2 only for unreadable input).

    Raises:
        FabricError: The file is missing or not an NCCL log, or an ``--env`` is malformed.
    """
    from fabricui.services.doctor import diagnose, read_log, report_json

    if args.log is None:
        if not getattr(args, "health", None):
            raise ConfigError("give an NCCL_DEBUG=INFO log, or --health FILE (see --help)")
        _env_hints(args.env, log=False)
        return _health_only(args)
    hints = _env_hints(args.env, log=True)
    log = read_log(args.log)
    findings = diagnose(log, hints)
    loaded = _loaded(args)
    check = _fabric_check(args, log, loaded)
    if check is not None:
        order = {s: i for i, s in enumerate(SEVERITIES)}
        findings = sorted([*findings, *check.findings], key=lambda f: order[f.severity])
    parts = _health_parts(args, check, loaded)
    if args.json:
        data = report_json(log, findings)
        if check is not None:
            data["fabric"] = check.to_json()
        if parts is not None:
            data["health"] = _health_json(parts)
        print_json(data)
    else:
        print(render(log, findings, check))
        if parts is not None:
            _print_health(parts)
    fail_on = getattr(args, "fail_on", None)
    if fail_on is not None:
        worst = {"warning": ("warning", "error"), "error": ("error",)}[fail_on]
        if any(f.severity in worst for f in findings):
            return EXIT_FINDINGS
    return 0


def _loaded(args: argparse.Namespace) -> LoadedFabric | None:
    """The fabric the job ran on, as ``--health`` says it is (None without ``--topology``):
    loaded once, for both the fabric check and the health part, so the health files are
    read once."""
    from fabricui.services.loaded import LoadedFabric

    if getattr(args, "topology", None) is None:
        if getattr(args, "hosts", None):
            raise ConfigError("--hosts applies with --topology (the fabric the job ran on)")
        return None
    return LoadedFabric.load(topology_request(args), catalog(args), report_health=True)


def _fabric_check(
    args: argparse.Namespace, log: NcclLog, loaded: LoadedFabric | None
) -> FabricCheck | None:
    """The comparison with ``--topology`` (None without it).

    Raises:
        ConfigError: A bad hostlist.
    """
    from fabricui.services.doctor_fabric import compare
    from fabricui.services.jobs import expand_hosts

    if loaded is None:
        return None
    hosts = None
    if args.hosts:
        try:
            hosts = expand_hosts(args.hosts)
        except ConfigError as exc:
            raise ConfigError(f"--hosts: {exc.message}") from None
    return compare(log, loaded.fabric, hosts)


def _health_only(args: argparse.Namespace) -> int:
    """``doctor --health FILE [-t T [--hosts H]]``: the files' findings, and on the topology
    what they do to the job's all-reduce and the ranks and hosts they touch."""
    from fabricui.services.health import read_health

    if getattr(args, "topology", None) is None and getattr(args, "hosts", None):
        raise ConfigError("--hosts applies with --topology (the fabric the job runs on)")
    parts = _health_parts(args, None, _loaded(args)) or HealthParts(read_health(args.health))
    if args.json:
        print_json({"health": _health_json(parts)})
    else:
        _print_health(parts)
    worst = {f.severity for f in parts.report.findings} | {f.severity for f in parts.job}
    fail_on = getattr(args, "fail_on", None)
    limit = {"warning": {"warning", "error"}, "error": {"error"}}.get(fail_on or "", set())
    return EXIT_FINDINGS if worst & limit else 0


@dataclass(frozen=True)
class HealthParts:
    """What ``--health`` adds to the doctor's report."""

    report: Any
    """The health files' report (``services.health``)."""
    job: list[JobHealthFinding] = field(default_factory=list)
    """The job's findings on the fabric as it is (``services.doctor_health``)."""
    price: AllReducePrice | None = None
    """The job's all-reduce as it is and as built (None without a topology, or when it
    cannot run)."""


def _health_parts(
    args: argparse.Namespace, check: FabricCheck | None, loaded: LoadedFabric | None
) -> HealthParts | None:
    """The health files' report and, on a topology, the job's all-reduce as it is and as
    built and its findings; None without --health. The job: ``--hosts`` on the topology,
    the log's placed ranks, else every GPU of the topology."""
    if not getattr(args, "health", None):
        return None
    from fabricui.services.health import read_health, report_of

    if loaded is None:
        return HealthParts(read_health(args.health))
    import numpy as np

    from fabricui.services.doctor_health import job_findings
    from fabricui.services.jobs import place_job, placeable_ranks
    from fabricui.services.loaded import LoadedFabric

    as_is = loaded
    as_built = LoadedFabric.load(replace(as_is.request, health=()), as_is.catalog)
    fabric = as_is.fabric
    if check is not None and check.placement.gpu_of:
        ranks = np.asarray([g for _, g in sorted(check.placement.gpu_of.items())], dtype=np.int64)
    elif getattr(args, "hosts", None):
        ranks = place_job(fabric, args.hosts).ranks
    else:
        ranks = placeable_ranks(fabric)
    cluster = fabric.spec.cluster
    names = None
    if cluster is not None and cluster.hosts and cluster.hosts_per_node == 1:
        names = [h.name or "" for h in cluster.hosts]
    price, job = job_findings(as_is, as_built, ranks, names)
    return HealthParts(report_of(fabric), job, price)


def _print_health(parts: HealthParts) -> None:
    """Print the health part of the report; the files' warnings it prints are not said
    again on stderr with what ``--health`` changed (``--json`` keeps both, as ``path
    --json`` does)."""
    from fabricui.services.health import warnings_printed

    print(render_health(parts.report, parts.job, parts.price))
    warnings_printed()


def _health_json(parts: HealthParts) -> dict[str, Any]:
    data: dict[str, Any] = parts.report.to_json()
    data["job"] = [f.to_json() for f in parts.job]
    if parts.price is not None:
        data["all_reduce"] = parts.price.to_json()
    return data


def render_health(
    health: Any, job: list[JobHealthFinding], price: AllReducePrice | None = None
) -> str:
    """The health files' findings (with the document each threshold comes from), then what
    they do to the job: its all-reduce as it is and as built (``price``), then the
    findings."""
    lines = ["health: " + health.file_names()]
    if price is not None:
        lines.append(f"job: {price.line()}")
    shown = list(health.findings)
    if not shown and not job:
        lines.append("no finding in the health files")
    # Say which file (or host) too when there are several, or the host a listing names.
    several = len({i.name for i in health.inputs}) > 1 or any(
        getattr(i, "listed_host", None) for i in health.inputs
    )
    for finding in shown:
        where = (
            f"{finding.where} in {finding.origin}" if several and finding.origin else finding.where
        )
        lines.append(f"{finding.severity:<7}  {finding.code} ({where}): {finding.message}")
        lines.append(f"         fix: {finding.fix}")
        lines.append(f"         source: {finding.source}")
    for finding in job:
        lines.append(f"{finding.severity:<7}  {finding.code}: {finding.message}")
        lines.append(f"         fix: {finding.fix}")
    for warning in health.warnings:
        lines.append(f"warning: {warning}")
    for note in health.notes:
        lines.append(f"note: {note}")
    return "\n".join(lines)


def render(log: NcclLog, findings: list[Finding], check: FabricCheck | None = None) -> str:
    """The text report: facts first, then findings with their fixes.

    Args:
        log: The parsed log.
        findings: ``diagnose(log)`` (and the fabric check's).
        check: The comparison with the fabric, when one was asked for.

    Returns:
        Lines joined with newlines.
    """
    from fabricui.services.doctor import transport_label

    version = log.version or "not printed"
    if log.cuda:
        version += f" (CUDA {log.cuda})"
    lines = [f"{log.source}", f"  NCCL version   {version}"]
    network = log.network or "not printed"
    if log.plugins:
        network += f"  (plugins: {', '.join(log.plugins)})"
    lines.append(f"  network        {network}")
    if log.ib_devices:
        devices = " ".join(
            f"{d.name}:{d.port}/{d.link_layer}{'/SHARP' if d.sharp else ''}" for d in log.ib_devices
        )
        lines.append(f"  IB devices     {devices}")
    ranks = []
    if log.nranks is not None:
        ranks.append(f"{log.nranks} ranks")
    elif log.ranks:
        ranks.append(f"{len(log.ranks)} ranks seen")
    if log.nnodes is not None:
        ranks.append(f"{log.nnodes} nodes")
    if log.hosts:
        hosts = len(log.hosts)
        ranks.append(f"{hosts} host{'s' if hosts > 1 else ''} in the log")
    if ranks:
        lines.append(f"  ranks          {', '.join(ranks)}")
    channels = "not printed" if log.channels is None else str(log.channels)
    nvls = "not printed" if log.nvls_channels is None else str(log.nvls_channels)
    lines.append(f"  channels       {channels} (NVLS channels: {nvls})")
    if log.nvls_support:
        available = sum(log.nvls_support.values())
        lines.append(
            f"  NVLS multicast available on {available} of {len(log.nvls_support)} GPUs in the log"
        )
    counts = log.transport_counts()
    if counts:
        lines.append("  transports     (connection lines)")
        for kind, count in counts.items():
            lines.append(f"    {transport_label(kind):<26} {count:>5}")
    else:
        lines.append("  transports     none in the log")
    if log.env:
        settings = ", ".join(f"{k}={v}" for k, v in sorted(log.env.items()))
        lines.append(f"  environment    {settings}")
    if check is not None:
        placed = len(check.placement.gpu_of)
        lines.append(f"  fabric         {check.topology}: {placed} rank(s) placed")
        for host, where in list(check.placement.host_of.items())[:4]:
            lines.append(f"    {host} -> {where}")
        if len(check.placement.host_of) > 4:
            lines.append(f"    ... and {len(check.placement.host_of) - 4} more hosts")
        for ring in check.rings[:4]:
            edges = ", ".join(f"{n} {tier}" for tier, n in ring["edges"].items() if n)
            lines.append(f"    ring {ring['channel']:>2}: edges {edges}")
        for note in check.placement.assumptions:
            lines.append(f"    assumed: {note}")
    problems = [f for f in findings if f.severity != "info"]
    lines.append("")
    if not problems:
        notes = len(findings)
        lines.append("no warnings or errors" + (f" ({notes} notes)" if notes else ""))
    for finding in findings:
        where = f" (line {finding.line})" if finding.line else ""
        lines.append(f"{finding.severity:<7}  {finding.code}{where}: {finding.message}")
        lines.append(f"         fix: {finding.fix}")
    return "\n".join(lines)
