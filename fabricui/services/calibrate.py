"""``calibrate``: fit a topology's link figures to nccl-tests results and write an overlay.

Every run's rows are sorted by size and split alternately: even rows are fitted, odd rows
held out, so the report shows whether the fitted figures predict sizes they never saw.
Held-out files add whole runs (another op or algorithm on the same cluster) that only
check the fit.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import numpy.typing as npt

from fabricui.engine.calibration import (
    MAX_GENERATIONS,
    PARAMETERS,
    CalibrationCase,
    fit_links,
    split_alternate,
)
from fabricui.errors import ConfigError
from fabricui.files import check_target, shown_path
from fabricui.hwdb.overlay import CalibrationOverlay, LinkCalibration, overlay_yaml, write_overlay
from fabricui.hwdb.resolve import resolve_topology
from fabricui.importers.common import ParseError
from fabricui.importers.hostlist import expand
from fabricui.importers.nccl_tests import DroppedRow, dropped_summary, read_results
from fabricui.services import admission
from fabricui.services.jobs import hostlist, place_job, unknown_hosts
from fabricui.services.progress import NO_PROGRESS, Phases
from fabricui.services.requests import CatalogRequest
from fabricui.services.run_hardware import (
    MISMATCHES,
    other_hardware,
    other_text,
    part_assumed,
    topology_hardware,
)
from fabricui.services.session import (
    admit_fabric,
    build_fabric_with_plugins,
    collective_algorithms,
    load_catalog,
)

if TYPE_CHECKING:
    from fabricui.engine.calibration import CalibrationResult
    from fabricui.engine.types import CollectiveAlgorithm
    from fabricui.fabric.fabric import Fabric
    from fabricui.hwdb.catalog import Catalog
    from fabricui.importers.nccl_tests import ResultRun
    from fabricui.model import TopologySpec

#: Memory the fit takes whatever the run's size (its algorithms, trial figures) [bytes];
#: on top, each rank costs a fabric's GPU and a collective's rank (``admission``). Measured
#: 2026-11-27 as peak RSS of calibrate over logs of 32 to 4,096 hosts of 8 GPUs: 46 MiB at
#: 256 ranks, 55 MiB at 1,024, 129 MiB at 8,192, 387 MiB at 32,768 (the estimate is 1.4 to
#: 1.8 times as much).
FIT_BYTES = 32 * 2**20
#: Link tiers in the order the fit tries their generations (the network first).
TIER_ORDER = ("scale-out", "scale-up", "host", "memory", "on-chip")
#: Tiers whose generations' latency may be fitted.
LATENCY_TIERS = ("scale-out", "scale-up")


@dataclass(frozen=True)
class CalibrateRequest:
    """What ``fabricui calibrate`` was asked."""

    topology: str
    """Built-in topology id or YAML file the runs ran on."""
    results: tuple[Path, ...]
    """nccl-tests output files (or measurements YAML) to fit."""
    held_out: tuple[Path, ...] = ()
    """Results of the same cluster used only to check the fit."""
    nodes: int | None = None
    """Node count of the runs (default: their host count)."""
    op: str | None = None
    """Collective of files that do not name it."""
    algo: str | None = None
    """``NCCL_ALGO`` of runs whose output does not print it."""
    entries: tuple[str, ...] = ()
    """Measurements-YAML entry ids to use (default: all), and whole numbers: the runs of
    each nccl-tests output among ``results`` to use (1-based, in file order; default: all)."""
    hosts: str | None = None
    """Slurm hostlist of the hosts the runs ran on, on an imported cluster (default: the
    hosts the rank lines name, else the first hosts)."""
    output: Path | None = None
    """Where to write the overlay."""
    force: bool = False
    """Replace an existing ``output``."""
    catalog: CatalogRequest = field(default_factory=CatalogRequest)
    """The hardware database to start from."""


@dataclass(frozen=True)
class Calibration:
    """A fit and what became of it."""

    report: dict[str, Any]
    """The ``--json`` object (the text report renders the same)."""
    held_out_worse: bool
    """Held-out rows got worse with the fitted figures (the fit follows noise)."""


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


@dataclass(frozen=True)
class _Placement:
    """Where a run's ranks are priced, and what of it the run did not say."""

    nodes: int
    """Nodes the ranks are on (hosts, on a topology placed by host)."""
    ranks: npt.NDArray[np.int64]
    """(nranks,) global ranks of the fabric the run's ranks are priced on."""
    hosts: tuple[str, ...] = ()
    """Host names of those nodes, on a topology placed by host (else empty)."""
    assumptions: tuple[str, ...] = ()
    """What was assumed where the run does not say it, one sentence each."""
    devices: tuple[tuple[int, ...], ...] = ()
    """Per node, the GPUs (0 .. GPUs per node - 1) the run's ranks are priced on."""


def placed_by_host(spec: TopologySpec) -> bool:
    """True when runs are priced on hosts of the topology as it is (an imported cluster, or
    any topology whose node count is fixed), False when the topology is rebuilt at the
    runs' node count (its nodes are alike)."""
    cluster = spec.cluster
    return (cluster is not None and bool(cluster.hosts)) or not spec.nodes_settable


def _case(
    run: ResultRun,
    spec: TopologySpec,
    catalog: Catalog,
    fabrics: dict[int, Fabric],
    request: CalibrateRequest,
    held_out: bool,
) -> tuple[CalibrationCase, _Placement]:
    """A calibration case of one run (its fabric, ranks, algorithm and fit mask) and where
    its ranks were placed."""
    if run.op is None:
        raise ConfigError(f"{run.source}: cannot tell the collective; give --op")
    if placed_by_host(spec):
        fabric, placement = _on_hosts(run, spec, catalog, fabrics, request)
    else:
        fabric, placement = _rescaled(run, spec, catalog, fabrics, request)
    part = part_assumed(run, spec, catalog)
    if part is not None:
        said = f"{run.source}: {part}"
        placement = replace(placement, assumptions=(said, *placement.assumptions))
    algorithms = collective_algorithms(run.env)
    if run.env.get("NCCL_ALGO"):
        algo = _forced_algo(run.env["NCCL_ALGO"], algorithms, strict=False)
    else:
        algo = _forced_algo(request.algo, algorithms)
    rows = sorted(run.rows, key=lambda r: r.size_bytes)
    sizes = np.array([r.size_bytes for r in rows], dtype=np.float64)
    times = np.array([r.time_us for r in rows], dtype=np.float64)
    fit = np.zeros(len(rows), dtype=bool) if held_out else split_alternate(len(rows))
    case = CalibrationCase(
        label=run.source,
        fabric=fabric,
        op=run.op,
        size_bytes=sizes,
        time_us=times,
        fit=fit,
        ranks=placement.ranks,
        algorithms=tuple(algorithms),
        algo=algo,
        single_process=run.single_process,
        gpus_per_thread=run.gpus_per_thread,
    )
    return case, placement


def _rescaled(
    run: ResultRun,
    spec: TopologySpec,
    catalog: Catalog,
    fabrics: dict[int, Fabric],
    request: CalibrateRequest,
) -> tuple[Fabric, _Placement]:
    """The topology rebuilt at the run's node count, the run's ranks spread evenly over its
    nodes: on the devices their rank lines name, else GPUs 0, 1 ... of each."""
    per_node = spec.gpus_per_node
    run, shared = _shared_names(run, per_node)
    nodes = request.nodes if request.nodes is not None else run.nodes
    counted = nodes is None
    if nodes is None:
        nodes = math.ceil(run.nranks / per_node) if run.nranks else spec.nodes
    if nodes < 1:
        raise ConfigError(f"--nodes must be at least 1 (got {nodes})")
    if run.nranks:
        _check_placement(run, run.nranks, nodes, spec, request.nodes is not None)
    if nodes not in fabrics:
        scaled = _spec_for(spec, nodes)
        _admit_fit(run, run.nranks or scaled.n_gpus)  # before building: 4,096 hosts at once
        admit_fabric(scaled, catalog)  # a 100,000-host log: one line, not gigabytes
        fabrics[nodes] = build_fabric_with_plugins(scaled, catalog)
    fabric = fabrics[nodes]
    nranks = run.nranks or fabric.n_gpus
    if nranks % nodes or nranks // nodes > per_node:
        raise ConfigError(
            f"{run.source}: {nranks} ranks do not fit {nodes} nodes of {per_node} GPUs "
            f"of {spec.id} (use --nodes)"
        )
    local = nranks // nodes
    first = np.arange(nodes, dtype=np.int64) * per_node
    ranks, devices, placed = _rank_gpus(run, first, local, per_node, spec.id)
    where = "node(s)"
    if request.nodes is not None:
        where = "nodes --nodes gives"
    elif not counted:
        where = "nodes the run names"
    assumed = _spread(run, nranks, nodes, local, per_node, where, counted, "--nodes") + placed
    return fabric, _Placement(nodes, ranks, (), shared + assumed, devices)


def _on_hosts(
    run: ResultRun,
    spec: TopologySpec,
    catalog: Catalog,
    fabrics: dict[int, Fabric],
    request: CalibrateRequest,
) -> tuple[Fabric, _Placement]:
    """The topology as it is, the run's ranks on its hosts: ``--hosts``, else the hosts
    the output's rank lines name when the topology has them all, else its first hosts
    (said so). Each rank is on the device its rank line names, else a host's ranks are its
    GPUs 0, 1 ...

    Raises:
        ConfigError: Unknown hosts (with the nearest ones), or as many hosts as the run
            cannot have run on (another count than its rank lines or ``--nodes``, more
            than the topology has, ranks that do not split evenly over them).
    """
    if spec.nodes not in fabrics:
        _admit_fit(run, run.nranks or spec.n_gpus)
        admit_fabric(spec, catalog)
        fabrics[spec.nodes] = build_fabric_with_plugins(spec, catalog)
    fabric = fabrics[spec.nodes]
    names, per_domain = fabric.host_layout
    per_host = fabric.gpus_per_node // per_domain
    known = [name for name in names if name is not None]
    run, shared = _shared_names(run, per_host)
    _check_hosts(run, per_host, spec.id)
    logged = [host for host, _ in run.hosts]
    assumed: list[str] = list(shared)
    counted = False
    given = request.hosts is not None
    if request.hosts is not None:
        hosts = _given_hosts(fabric, request.hosts)
        if logged and len(logged) != len(hosts):
            raise ConfigError(
                f"{run.source}: the rank lines name {len(logged)} host(s), --hosts names "
                f"{len(hosts)} (give the hosts the run ran on, in the order of their ranks)"
            )
        if request.nodes is not None and request.nodes != len(hosts):
            raise ConfigError(
                f"--nodes {request.nodes} disagrees with the {len(hosts)} host(s) --hosts "
                "names (drop --nodes)"
            )
    else:
        on_cluster = set(known)
        logged = _cluster_names(logged, on_cluster)
        unknown = [host for host in logged if host not in on_cluster]
        if logged and request.nodes is not None and request.nodes != len(logged):
            raise ConfigError(
                f"{run.source}: the run names {len(logged)} host(s) ({run.nranks} ranks), "
                f"--nodes says {request.nodes} (drop --nodes, or give --nodes {len(logged)})"
            )
        if logged and not unknown:
            hosts = logged
        else:
            count = request.nodes if request.nodes is not None else run.nodes
            counted = count is None
            if count is None:
                count = math.ceil(run.nranks / per_host) if run.nranks else len(known)
            if count < 1:
                raise ConfigError(f"--nodes must be at least 1 (got {count})")
            if count > len(known):
                raise ConfigError(
                    f"{run.source}: the run spans {count} hosts, {spec.id} has {len(known)}"
                )
            hosts = known[:count]
            if count < len(known):
                why = "the output names no hosts"
                if unknown:
                    why = f"{len(unknown)} of the output's hosts are not {spec.id}'s: " + (
                        unknown_hosts(unknown, known)
                    )
                elif run.entry_id is not None:
                    why = "the entry names no hosts"
                assumed.append(
                    f"{run.source}: priced on the first {count} host(s) of {spec.id}, "
                    f"{hostlist(hosts)} ({why}; give --hosts)"
                )
    count = len(hosts)
    nranks = run.nranks or count * per_host
    if nranks > count * per_host or nranks % count:
        raise ConfigError(
            f"{run.source}: {nranks} ranks do not split evenly over {count} host(s) of "
            f"{per_host} GPUs of {spec.id} (give --hosts the run's hosts)"
        )
    local = nranks // count
    index = {name: i for i, name in enumerate(names) if name is not None}
    host_ids = np.asarray([index[name] for name in hosts], dtype=np.int64)
    first = (host_ids // per_domain) * fabric.gpus_per_node + (host_ids % per_domain) * per_host
    ranks, devices, placed = _rank_gpus(run, first, local, per_host, spec.id)
    assumed += _cluster_order(run, hosts, first)
    where = "hosts --hosts names" if given else "host(s)"
    if not given and not counted:
        where = "hosts --nodes gives" if request.nodes is not None else "hosts the run names"
    assumed += _spread(run, nranks, count, local, per_host, where, counted, "--hosts") + placed
    return fabric, _Placement(count, ranks, tuple(hosts), tuple(assumed), devices)


def _cluster_order(
    run: ResultRun, hosts: Sequence[str], first: npt.NDArray[np.int64]
) -> tuple[str, ...]:
    """What was assumed of 3 or more hosts whose ranks come out of the cluster's order
    (``hosts`` in the order of their first rank, ``first`` their first GPUs): NCCL rings
    them (and roots its trees) in the ranks' order, the model in the cluster's, as its
    groups hold their GPUs sorted. Two hosts make one ring either way."""
    if len(hosts) < 3 or not np.any(np.diff(first) < 0):
        return ()
    ordered = [hosts[i] for i in np.argsort(first, kind="stable")]
    return (
        f"{run.source}: the ranks' hosts come in the order {ranked_hostlist(hosts)}; the "
        f"ring and trees follow the cluster's host order ({ranked_hostlist(ordered)}), "
        "not the ranks'",
    )


def _shared_names(run: ResultRun, per_node: int) -> tuple[ResultRun, tuple[str, ...]]:
    """The run with each host name its rank lines give more ranks than a node has GPUs,
    and whose devices they name again from the start, split into the hosts that share it
    (containers whose hostname is the same on every machine: ranks 0-7 on devices 0-7,
    ranks 8-15 on devices 0-7 again): ``user#1``, ``user#2`` ..., each rank on the first
    whose device it does not repeat; said as assumed. The run unchanged when no name
    needs it, or when the hosts it would make are not alike (every rank on device 0:
    nothing tells them apart)."""
    crowded = {host for host, count in run.hosts if count > per_node}
    if not crowded or len(run.rank_devices) != sum(count for _, count in run.hosts):
        return run, ()
    taken: dict[str, list[set[int]]] = {host: [] for host in crowded}
    placement = []
    for host, device in run.rank_devices:
        if host not in crowded:
            placement.append((host, device))
            continue
        parts = taken[host]
        part = next((i for i, used in enumerate(parts) if device not in used), len(parts))
        if part == len(parts):
            parts.append(set())
        parts[part].add(device)
        placement.append((f"{host}#{part + 1}", device))
    sizes = {len(used) for parts in taken.values() for used in parts}
    if len(sizes) != 1 or not 1 < next(iter(sizes)) <= per_node:
        return run, ()
    hosts = tuple(Counter(host for host, _ in placement).items())  # in order of first rank
    said = tuple(
        f"{run.source}: the rank lines put {count} ranks on host {host}, naming its devices "
        f"{len(taken[host])} times over (hosts sharing a name, as containers do): priced as "
        f"{len(taken[host])} hosts {host}#1 to {host}#{len(taken[host])}"
        for host, count in run.hosts
        if host in crowded
    )
    return replace(run, hosts=hosts, rank_devices=tuple(placement), nodes=len(hosts)), said


def _given_hosts(fabric: Fabric, text: str) -> list[str]:
    """The hosts ``--hosts`` names, in its order (the order of the runs' ranks).

    Raises:
        ConfigError: A malformed or empty hostlist, a host named twice (a run has each of
            its hosts once), or hosts the fabric lacks (with the nearest ones).
    """
    try:
        named = expand(text)
    except ParseError as exc:
        raise ConfigError(f"--hosts: {exc.message}") from None
    seen: set[str] = set()
    for host in named:
        if host in seen:
            raise ConfigError(
                f"--hosts names {host} twice (give each host the runs ran on once, in the "
                "order of their ranks)"
            )
        seen.add(host)
    return list(place_job(fabric, text).hosts)


def _cluster_names(logged: list[str], known: set[str]) -> list[str]:
    """The rank lines' hosts as the cluster names them: a name it lacks whose first label
    is one of its hosts (``luna-0100.example.com``: ``hostname`` prints the FQDN on some
    clusters, the fabric's dumps the short name) is that host, unless two names would
    come to one host."""
    short = [
        host.partition(".")[0] if host not in known and host.partition(".")[0] in known else host
        for host in logged
    ]
    return short if len(set(short)) == len(short) else logged


def ranked_hostlist(hosts: Sequence[str]) -> str:
    """Hosts as a Slurm hostlist in their order (the order of their ranks, as ``--hosts``
    takes them): compressed when that keeps the order (``luna-[0100-0101]``), else the
    names joined by commas (``luna-0200,luna-0100``)."""
    compressed = hostlist(hosts)
    return compressed if not hosts or expand(compressed) == list(hosts) else ",".join(hosts)


def _rank_gpus(
    run: ResultRun,
    first: npt.NDArray[np.int64],
    local: int,
    per_node: int,
    topology: str,
) -> tuple[npt.NDArray[np.int64], tuple[tuple[int, ...], ...], tuple[str, ...]]:
    """The fabric GPU of each rank of ``run``, in rank order: the device its rank line
    names on its host (the run's hosts in order of their first rank are the nodes whose
    first GPU ``first`` gives), else GPUs 0, 1 ... of each node. Ranks that alternate
    between hosts are priced on the GPUs they name, and the report says the model (as
    NCCL does) rings them host by host, not in rank order.

    Returns:
        (nranks,) global GPUs, the devices priced per node, and what was assumed.

    Raises:
        ConfigError: A device beyond a node's GPUs (one line: the rank, its host).
    """
    nodes = first.size
    placement = run.rank_devices
    if len(placement) != nodes * local:  # no rank lines (or not one per rank): a block each
        devices = tuple(tuple(range(local)) for _ in range(nodes))
        ranks = (first[:, None] + np.arange(local, dtype=np.int64)[None, :]).reshape(-1)
        return ranks, devices, ()
    order = {host: i for i, host in enumerate(dict.fromkeys(host for host, _ in placement))}
    node_of = np.array([order[host] for host, _ in placement], dtype=np.int64)
    device = np.array([d for _, d in placement], dtype=np.int64)
    beyond = np.flatnonzero(device >= per_node)
    if beyond.size:
        rank = int(beyond[0])
        raise ConfigError(
            f"{run.source}: rank {rank} ran on device {device[rank]} of {placement[rank][0]}, "
            f"but a node of {topology} has {per_node} GPUs (give -t the topology the run ran on)"
        )
    assumed = []
    shared = any(np.unique(device[node_of == n]).size < local for n in range(nodes))
    if shared:  # each process saw only its own GPU (as device 0): its host's k-th rank, GPU k
        device = np.zeros_like(device)
        for n in range(nodes):
            device[node_of == n] = np.arange(local)
        if local < per_node:
            assumed.append(
                f"{run.source}: the rank lines give several ranks of a host the same device "
                f"(each process saw only its own GPU): GPUs 0-{local - 1} of each host assumed"
            )
    if np.any(np.diff(node_of) < 0):
        assumed.append(
            f"{run.source}: the rank lines alternate ranks between hosts; priced on the GPUs "
            "they name, the ring and trees host by host as NCCL builds them (not in rank order)"
        )
    devices = tuple(tuple(sorted(device[node_of == n].tolist())) for n in range(nodes))
    return first[node_of] + device, devices, tuple(assumed)


def _spread(
    run: ResultRun,
    nranks: int,
    nodes: int,
    local: int,
    per_node: int,
    where: str,
    counted: bool,
    option: str,
) -> tuple[str, ...]:
    """What was assumed of a run that does not say where its ranks ran (no rank lines):
    its rank count, and that they are spread evenly, GPUs 0, 1 ... of each node; nothing
    when the run says it, or when its ranks fill the nodes given or named.

    Args:
        where: What the nodes are (``node(s)``, ``hosts --hosts names`` ...).
        counted: The node count is the fewest that hold the ranks (nothing gave it).
        option: The option that gives the real placement (``--nodes``, ``--hosts``).
    """
    if run.hosts:
        return ()
    if not run.nranks:
        return (
            f"{run.source}: the run does not say its rank count: every GPU of {nodes} "
            f"{where} assumed ({nranks} ranks)",
        )
    if local == per_node and not counted:
        return ()
    gpus = ""
    if local < per_node:
        gpus = f", GPUs 0-{local - 1} of each" if local > 1 else ", GPU 0 of each"
    fewest = f" (the fewest that hold them; give {option} if the run spread them wider)"
    return (
        f"{run.source}: the run does not say where its ranks ran: {nranks} ranks assumed "
        f"spread evenly, {local} on each of {nodes} {where}{gpus}{fewest if counted else ''}",
    )


def _check_placement(
    run: ResultRun, nranks: int, nodes: int, spec: TopologySpec, given: bool
) -> None:
    """Refuse a node count the run's ranks cannot have run on: more ranks than its GPUs,
    another host count than the output names, or ranks that do not split evenly.

    Raises:
        ConfigError: One line with the real reason and what to pass.
    """
    per_node = spec.gpus_per_node
    hint = " (use --nodes)" if run.nodes is None else ""
    _check_hosts(run, per_node, spec.id)
    if nranks > nodes * per_node:
        raise ConfigError(
            f"{run.source}: {nranks} ranks do not fit {nodes} nodes of {per_node} GPUs "
            f"of {spec.id}{hint}"
        )
    if given and run.nodes is not None and run.nodes != nodes:
        raise ConfigError(
            f"{run.source}: the run names {run.nodes} host(s) ({nranks} ranks), --nodes says "
            f"{nodes} (drop --nodes, or give --nodes {run.nodes})"
        )
    if nranks % nodes:
        raise ConfigError(
            f"{run.source}: {nranks} ranks do not split evenly over {nodes} nodes{hint}"
        )


def _check_hosts(run: ResultRun, per_node: int, topology: str) -> None:
    """Refuse a run whose rank lines put more ranks on a host than a node of the topology
    has GPUs, or a different number on different hosts: the fit prices the same count of
    ranks on every node, so another placement would be fitted as a slower fabric.

    Raises:
        ConfigError: One line naming the hosts and their rank counts.
    """
    counts = dict(run.hosts)
    if not counts:
        return
    host, most = max(counts.items(), key=lambda item: item[1])
    if most > per_node:
        raise ConfigError(
            f"{run.source}: the rank lines put {most} ranks on host {host}, but a node of "
            f"{topology} has {per_node} GPUs (give -t the topology the run ran on)"
        )
    if len(set(counts.values())) > 1:
        shown = ", ".join(f"{h}: {n}" for h, n in list(counts.items())[:6])
        more = ", ..." if len(counts) > 6 else ""
        raise ConfigError(
            f"{run.source}: the rank lines put different numbers of ranks on the hosts "
            f"({shown}{more}); calibrate prices the same number on every node (fit a run "
            "with as many ranks on each host)"
        )


def _of_this_hardware(
    runs: list[ResultRun], spec: TopologySpec, catalog: Catalog, named: bool
) -> tuple[list[ResultRun], list[dict[str, str]]]:
    """The runs of the topology's hardware, and the entries left out (``other_hardware``).

    Raises:
        ConfigError: An entry named with ``--entry``, or an nccl-tests output (a file the
            user named), ran on other hardware.
    """
    kept, skipped = [], []
    for run in runs:
        other = other_hardware(run, spec, catalog)
        if other is None:
            kept.append(run)
            continue
        if named or run.entry_id is None:
            text = other_text(spec.id, topology_hardware(spec, catalog), [other])
            raise ConfigError(f"{run.source}: {text} (give -t a topology of that hardware)")
        skipped.append(other)
    return kept, skipped


def _none_match(spec: TopologySpec, catalog: Catalog, skipped: list[dict[str, str]]) -> str:
    """The one line refusing results none of which ran on the topology's hardware."""
    return (
        f"no measurements entry ran on the hardware of {spec.id}: they "
        f"{other_text(spec.id, topology_hardware(spec, catalog), skipped)} (give -t a topology of "
        "theirs)"
    )


def skipped_line(report: dict[str, Any]) -> str | None:
    """One line saying how many measurements entries were left out for running on other
    hardware and on what, or None."""
    skipped = report.get("skipped_entries") or []
    if not skipped:
        return None
    tally = [(sum(s["why"] == why for s in skipped), noun) for why, _, noun in MISMATCHES]
    words = [f"{n} on another {noun}" for n, noun in tally if n]
    counts = " and ".join([", ".join(words[:-1]), words[-1]] if len(words) > 1 else words)
    text = other_text(report["topology"], report["hardware"], skipped)
    plural = "entries" if len(skipped) > 1 else "entry"
    return f"skipped {len(skipped)} measurements {plural} ({counts}): they {text}"


def _admit_fit(run: ResultRun, nranks: int) -> None:
    """Refuse, before any fabric is built, a run whose fit would not fit the memory budget:
    every evaluation of the fit predicts the run's collective among all its ranks.

    Raises:
        ConfigError: Too many ranks for the budget (one line: the budget that would do).
    """
    work = admission.Work(
        f"fitting {run.source} ({run.op} among {nranks:,} GPUs)",
        nranks,
        "ranks",
        admission.RANK_BYTES + admission.GPU_BYTES,
        admission.resident_bytes() + FIT_BYTES,
    )
    needed_mib = -(-work.bytes // 2**26) * 64  # rounded up to 64 MiB
    admission.admit(work, admission.memory_budget(), f"give --max-memory {needed_mib}M")


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


def _entry_kinds(entries: Sequence[str]) -> tuple[list[str], list[int]]:
    """``--entry`` values as (measurements-YAML entry ids, run numbers of nccl-tests
    outputs): a whole number picks a run, anything else names an entry."""
    ids = [e for e in entries if not _run_number(e)]
    numbers = [int(e) for e in entries if _run_number(e)]
    if any(n < 1 for n in numbers):
        raise ConfigError("--entry 0: runs of an nccl-tests output are numbered from 1")
    return ids, list(dict.fromkeys(numbers))


def _run_number(entry: str) -> bool:
    """Whether an ``--entry`` value is a run number: ASCII digits only (``int`` refuses
    other digits, such as a superscript two, that ``str.isdigit`` accepts)."""
    text = entry.strip()
    return text.isascii() and text.isdigit()


def _read_runs(
    paths: Sequence[Path],
    op: str | None,
    ids: Sequence[str],
    numbers: Sequence[int],
    catalog: Catalog | None = None,
) -> tuple[list[ResultRun], dict[str, int]]:
    """The runs of ``paths``: measurements entries named by ``ids`` (every one without),
    and of nccl-tests outputs the runs ``numbers`` picks (1-based, in file order, every
    table of the output counted, one whose rows were all dropped and one of a header
    alone (a run that stopped before its first size) too; without numbers,
    every run with a usable row). Also each nccl-tests run's number in its output, by its
    source. The ids of a measurements entry's ``hardware`` block must name ``catalog``'s
    records (when given).

    Raises:
        ConfigError: A run number beyond an output's runs, one picking a table without a
            usable row, or numbers and no output.
    """
    runs: list[ResultRun] = []
    numbered: dict[str, int] = {}
    outputs = 0
    for path in paths:
        read = read_results(path, op, ids, every_table=True, catalog=catalog)
        if read[0].entry_id is not None:  # a measurements YAML: read_results picked them
            runs += read
            continue
        outputs += 1
        for number, run in enumerate(read, start=1):
            numbered[run.source] = number
        beyond = [n for n in numbers if n > len(read)]
        if beyond:
            lines = ", ".join(run.source.rpartition(":")[2] for run in read[:6])
            more = ", ..." if len(read) > 6 else ""
            held = f"{len(read)} runs, at lines {lines}{more} (give --entry 1 to {len(read)})"
            if len(read) == 1:
                held = f"one run, at line {lines} (drop --entry)"
            raise ConfigError(f"--entry {beyond[0]}: {shown_path(str(path))} holds {held}")
        empty = [n for n in numbers if not read[n - 1].rows]
        if empty:
            run = read[empty[0] - 1]
            where = (
                f"run {empty[0]} of {shown_path(str(path))} (line {run.source.rpartition(':')[2]})"
            )
            if not run.dropped:  # its header alone: the run stopped before its first size
                raise ConfigError(
                    f"--entry {empty[0]}: {where} has no rows: its table ends after the "
                    f"header (the run stopped before its first size); pick another run (1 to "
                    f"{len(read)})"
                )
            why = dropped_summary(run.source, run.dropped).partition(": ")[2]
            raise ConfigError(
                f"--entry {empty[0]}: {where} has no usable row: {why}; pick another run (1 to "
                f"{len(read)})"
            )
        if numbers:
            runs += [run for n, run in enumerate(read, start=1) if n in numbers]
        else:
            runs += _with_orphans(read)
    if numbers and not outputs:
        raise ConfigError(
            f"--entry {numbers[0]}: a number picks a run of an nccl-tests output, and the "
            "results are measurements YAML (give an entry id)"
        )
    return runs, numbered


def _not_fitted(
    check: Sequence[ResultRun], fitted: Sequence[ResultRun], files: Sequence[Path]
) -> tuple[list[ResultRun], list[dict[str, str | None]]]:
    """The held-out runs that are none of the fitted runs, each once, and each one left
    out with the run it repeats (the same collective, ranks and rows): ``fitted``, the
    fitted run (a file given as both, a copy of it, or the whole measurements YAML an
    ``--entry`` was fitted from), or ``fitted`` None and ``held_out``, the held-out run
    kept (a file given twice as ``--held-out``, or a copy of it). A fitted run's rows check
    nothing: counted as held out, they would show a fit as better at predicting what it
    never saw than it is; a held-out run counted twice weighs its rows twice in the median.

    Raises:
        ConfigError: Every held-out run is a fitted one.
    """
    fitted_source = {_rows_key(run): run.source for run in fitted}
    held_source: dict[tuple[Any, ...], str] = {}
    kept: list[ResultRun] = []
    repeats: list[dict[str, str | None]] = []
    for run in check:
        key = _rows_key(run)
        source = fitted_source.get(key)
        if source is not None:
            repeats.append({"source": run.source, "fitted": source})
        elif key in held_source:
            repeats.append({"source": run.source, "fitted": None, "held_out": held_source[key]})
        else:
            held_source[key] = run.source
            kept.append(run)
    if repeats and not kept:
        named = ", ".join(shown_path(str(p)) for p in files)
        raise ConfigError(
            f"--held-out {named}: every run in it is a run the fit uses ("
            f"{_repeat_text(repeats[0])}): give results of other runs to check the fit"
        )
    return kept, repeats


def _fitted_once(runs: Sequence[ResultRun]) -> tuple[list[ResultRun], list[dict[str, str]]]:
    """The runs to fit, each measurement once, and each repeat left out with the run it
    repeats (``{"source", "repeats"}``: a file given twice, or a copy of it): a run fitted
    twice weighs its rows twice in the fit's objective and in its median. Entries of
    other hardware with the same rows are other measurements."""
    first: dict[tuple[Any, ...], str] = {}
    kept: list[ResultRun] = []
    repeats: list[dict[str, str]] = []
    for run in runs:
        key = (*_rows_key(run), run.hardware_gpu, run.hardware_node, run.hardware_net)
        if key in first:
            repeats.append({"source": run.source, "repeats": first[key]})
        else:
            first[key] = run.source
            kept.append(run)
    return kept, repeats


def _rows_key(run: ResultRun) -> tuple[Any, ...]:
    """What makes two runs the same measurement: collective, ranks and every row's size
    and time."""
    return (run.op, run.nranks, tuple((row.size_bytes, row.time_us) for row in run.rows))


def repeat_lines(report: dict[str, Any]) -> list[str]:
    """One line per held-out run left out for being a fitted run or another held-out run,
    and per run to fit that repeats another."""
    return [
        f"held-out run {_repeat_text(r)}: "
        + (
            "left out of the held-out rows, which it would not check"
            if r.get("fitted") is not None
            else "counted once among the held-out rows"
        )
        for r in report.get("held_out_repeats") or []
    ] + [
        (
            f"{shown_path(r['source'])} is given twice"
            if shown_path(r["source"]) == shown_path(r["repeats"])
            else f"{shown_path(r['source'])} repeats {shown_path(r['repeats'])} (the same rows)"
        )
        + ": fitted once"
        for r in report.get("fit_repeats") or []
    ]


def _repeat_text(repeat: dict[str, str | None]) -> str:
    """``X is also a fitted run`` (given as both), ``X repeats the fitted run Y``, ``X is
    given twice as --held-out``, or ``X repeats the held-out run Y``."""
    source = shown_path(str(repeat["source"]))
    fitted = repeat.get("fitted")
    if fitted is None:
        first = shown_path(str(repeat.get("held_out")))
        if source == first:
            return f"{source} is given twice as --held-out"
        return f"{source} repeats the held-out run {first} (the same rows)"
    if source == shown_path(fitted):
        return f"{source} is also a fitted run (given as RESULTS too)"
    return f"{source} repeats the fitted run {shown_path(fitted)} (the same rows)"


def _with_orphans(read: Sequence[ResultRun]) -> list[ResultRun]:
    """The runs of an output that have a usable row, the first of them also carrying the
    rows dropped from its tables that have none (the report still says them)."""
    usable = [run for run in read if run.rows]
    orphans = tuple(row for run in read if not run.rows for row in run.dropped)
    if orphans and usable:
        usable[0] = replace(usable[0], dropped=usable[0].dropped + orphans)
    return usable


def _check_entry_ids(ids: Sequence[str], runs: Sequence[ResultRun]) -> None:
    """Refuse entry ids when no file is a measurements YAML: they would pick nothing.

    Raises:
        ConfigError: One line saying what ``--entry`` takes of nccl-tests outputs.
    """
    if ids and all(run.entry_id is None for run in runs):
        raise ConfigError(
            f"--entry {ids[0]}: an entry id picks an entry of a measurements YAML, and the "
            "results are nccl-tests output (--entry N picks the N-th run of an output "
            "holding several)"
        )


#: Phases ``calibrate`` reports.
CALIBRATE_PHASES = 4


def calibrate(request: CalibrateRequest, progress: Phases = NO_PROGRESS) -> Calibration:
    """Fit, report and write the overlay when asked, reporting ``CALIBRATE_PHASES`` phases
    to ``progress``.

    Raises:
        FabricError: Unreadable results, an unknown topology, runs that do not fit it, or
            an existing output without ``force``.
    """
    if request.output is not None:
        check_target(request.output, request.force)
    if request.algo:
        _forced_algo(request.algo, collective_algorithms())
    if request.nodes is not None and request.nodes < 1:
        raise ConfigError(f"--nodes must be at least 1 (got {request.nodes})")
    if [str(p) for p in request.results + request.held_out].count("-") > 1:
        raise ConfigError("standard input (-) holds one output: give it once")
    progress.phase("reading the results")
    catalog = load_catalog(request.catalog)
    spec = resolve_topology(request.topology, catalog)
    if request.hosts is not None and not placed_by_host(spec):
        raise ConfigError(
            f"--hosts names hosts of an imported cluster (or of a topology of fixed size); "
            f"{spec.id} is built at the runs' node count, its nodes alike (give --nodes)"
        )
    ids, numbers = _entry_kinds(request.entries)
    fit_runs, numbered = _read_runs(request.results, request.op, ids, numbers, catalog)
    # Held-out files are used whole: --entry picks what is fitted, not what checks it.
    check_runs, numbered_check = _read_runs(request.held_out, request.op, [], [], catalog)
    numbered.update(numbered_check)
    _check_entry_ids(ids, fit_runs)
    fit_runs, skipped = _of_this_hardware(fit_runs, spec, catalog, bool(ids))
    if not fit_runs:
        raise ConfigError(_none_match(spec, catalog, skipped))
    fit_runs, fit_repeats = _fitted_once(fit_runs)
    check_runs, repeats = _not_fitted(check_runs, fit_runs, request.held_out)
    check_runs, skipped_check = _of_this_hardware(check_runs, spec, catalog, False)
    skipped += skipped_check
    progress.phase("building the fabrics of the runs")
    fabrics: dict[int, Fabric] = {}
    placed = [_case(r, spec, catalog, fabrics, request, False) for r in fit_runs]
    placed += [_case(r, spec, catalog, fabrics, request, True) for r in check_runs]
    cases = [case for case, _ in placed]
    generations = list(dict.fromkeys(g for f in fabrics.values() for g in f.generations))
    order, latency = _generation_order(catalog, generations)
    progress.phase(f"fitting {len(order)} link generation(s) to {len(cases)} run(s)")
    result = fit_links(
        cases, generations=order, latency_generations=latency, max_generations=MAX_GENERATIONS
    )
    progress.phase("comparing before and after")

    changed = result.changed
    overlay = CalibrationOverlay(
        links={gen: LinkCalibration(**values) for gen, values in changed.items()},
        topology=spec.id,
        fitted_on=tuple(str(p) for p in request.results),
    )
    placements = [placement for _, placement in placed]
    report = _report(spec, request, cases, result, fit_runs + check_runs, placements, numbered)
    report["hardware"] = topology_hardware(spec, catalog)
    report["skipped_entries"] = skipped
    report["held_out_repeats"] = repeats
    report["fit_repeats"] = fit_repeats
    written = False
    if request.output is not None and changed:
        errors = result.errors
        comments = [
            "fabricui calibration overlay (fabricui calibrate); apply with: "
            f"fabricui --calibration {shown_path(request.output.name)} ...",
            f"median |t_pred/t_meas - 1|: fitted rows {pct(errors['fit']['before'])} -> "
            f"{pct(errors['fit']['after'])}, held-out rows "
            f"{pct(errors['held_out']['before'])} -> {pct(errors['held_out']['after'])}",
            *bound_lines(report),
            *_run_comments(report["runs"]),
            *_assumed_comments(report["assumptions"]),
        ]
        write_overlay(request.output, overlay_yaml(overlay, comments), force=request.force)
        written = True
    report["output"] = str(request.output) if written else None
    held = result.errors["held_out"]
    worse = (
        held["before"] is not None and held["after"] is not None and held["after"] > held["before"]
    )
    return Calibration(report, worse)


#: Runs the overlay's header lists before it says how many more there are.
MAX_RUN_COMMENTS = 20


def _run_comments(runs: list[dict[str, Any]]) -> list[str]:
    """The overlay's header lines naming each run as the fit priced it (collective, ranks,
    nodes, the algorithm forced, a ``-g N`` launch): the settings that reproduce its
    fitted times with ``--calibration``."""
    lines = []
    for run in runs[:MAX_RUN_COMMENTS]:
        algo = f", NCCL_ALGO={run['algo']}" if run["algo"] != "auto" else ""
        launch = ""
        if run["single_process"]:
            launch = ", --launch single-process" + (
                f" --gpus-per-thread {run['gpus_per_thread']}" if run["gpus_per_thread"] else ""
            )
        hosts = f", --hosts {ranked_hostlist(run['hosts'])}" if run.get("hosts") else ""
        lines.append(
            f"run {shown_path(run['source'])}: {run['op']}, {run['nranks']} ranks on "
            f"{run['nodes']} node(s){algo}{launch}{hosts}"
        )
    if len(runs) > MAX_RUN_COMMENTS:
        lines.append(f"... and {len(runs) - MAX_RUN_COMMENTS} more runs")
    return lines


def _assumed_comments(assumptions: list[str]) -> list[str]:
    """The overlay's header lines saying what the fit assumed of the runs."""
    lines = [f"assumed: {text}" for text in assumptions[:MAX_RUN_COMMENTS]]
    if len(assumptions) > MAX_RUN_COMMENTS:
        lines.append(f"... and {len(assumptions) - MAX_RUN_COMMENTS} more assumptions")
    return lines


def pct(value: float | None) -> str:
    return "n/a" if value is None else f"{100 * value:.1f}%"


def _report(
    spec: TopologySpec,
    request: CalibrateRequest,
    cases: list[CalibrationCase],
    result: CalibrationResult,
    runs: list[ResultRun],
    placements: list[_Placement],
    numbered: dict[str, int],
) -> dict[str, Any]:
    """The ``--json`` object (the text report renders the same)."""
    at_bounds = result.at_bounds
    links = {}
    for gen in result.before:
        entry: dict[str, Any] = {}
        for name in ("efficiency", "lat_us"):
            entry[name] = {"before": result.before[gen][name], "after": result.after[gen][name]}
        entry["fitted"] = [n for g, n in result.fitted if g == gen]
        entry["status"] = dict(result.status.get(gen, {}))
        entry["at_bound"] = {
            name: {"side": side, "bound": PARAMETERS[name][side == "upper"]}
            for name, side in at_bounds.get(gen, {}).items()
        }
        links[gen] = entry
    runs_out = []
    for case, run, placement, before, after in zip(
        cases, runs, placements, result.predicted_before, result.predicted_after
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
                "nodes": placement.nodes,
                "hosts": list(placement.hosts),
                "devices": [list(devices) for devices in placement.devices],
                "algo": case.algo,
                "single_process": case.single_process,
                "gpus_per_thread": case.gpus_per_thread,
                "entry": run.entry_id,
                "run": numbered.get(run.source),
                "assumptions": list(placement.assumptions),
                "rows": rows,
            }
        )
    return {
        "topology": spec.id,
        "dropped_rows": [
            {"source": run.source, "line": row.line, "why": row.why}
            for run in runs
            for row in run.dropped
        ],
        "files": [str(p) for p in request.results],
        "held_out_files": [str(p) for p in request.held_out],
        "links": links,
        "overlay": result.changed,
        "errors": result.errors,
        "evaluations": result.evaluations,
        "runs": runs_out,
        "assumptions": [text for placement in placements for text in placement.assumptions],
    }


def bound_text(name: str, where: dict[str, Any]) -> str:
    """``efficiency at its lower bound 0.01``: a fitted figure the fit could not take
    further."""
    return f"{name} at its {where['side']} bound {where['bound']:g}"


def bound_lines(report: dict[str, Any]) -> list[str]:
    """One line per generation with a fitted figure on a bound: the runs are outside what
    the model explains, so that figure is not to be trusted."""
    return [
        f"{gen}: {', '.join(bound_text(n, w) for n, w in entry['at_bound'].items())}: the "
        "runs are outside what the model explains with it; do not trust "
        + ("this figure" if len(entry["at_bound"]) == 1 else "these figures")
        for gen, entry in report["links"].items()
        if entry.get("at_bound")
    ]


def dropped_lines(report: dict[str, Any]) -> list[str]:
    """One line per run that had rows left out (NaN or negative figures), saying how many
    and why."""
    by_run: dict[str, list[DroppedRow]] = {}
    for row in report["dropped_rows"]:
        by_run.setdefault(row["source"], []).append(DroppedRow(row["line"], row["why"]))
    return [dropped_summary(source, rows) for source, rows in by_run.items()]
