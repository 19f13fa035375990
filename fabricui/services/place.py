"""Pick the hosts for the next job: N free hosts whose traffic stays lowest in the tree.

Slurm's topology/tree plugin prefers the fewest, lowest switches that hold a job's nodes and
topology/block whole blocks (NVLink domains); the same idea here, on the imported fabric
itself rather than a topology.conf: hosts are grouped by what they share,

1. a scale-up (NVLink) domain, when the fabric's hosts share one;
2. a leaf group: hosts whose NIC ports are cabled to the same leaf switches (on a
   rail-optimized fabric, a scalable unit: one leaf per rail);
3. a pod: leaf groups under the same spines;
4. the whole fabric (through the cores);

and the pick is the smallest group at the lowest level that holds N free hosts (best fit,
so larger groups stay whole for larger jobs), filled from its fullest subgroups. Hosts
that are not free (drained, down, allocated, running a ``--jobs`` job), that the health
overlay cuts off from the network (every NIC cable down) or whose NIC cable it marks down
or degraded, or behind a leaf whose uplinks are degraded, are left out or taken last.

``max_tier`` says how high the pick's traffic climbs: 0 inside one scale-up domain, 1 below
the leaves (every rail's ports on one leaf: with PXN, cross-rail traffic moves over NVLink
first), 2 through spines, 3 through cores. The pick is priced with the collective engine
against a random pick of as many free hosts.
"""

from __future__ import annotations

import dataclasses
import os
import random
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from fabricui.engine.bulk import BulkRouter
from fabricui.engine.evaluate import evaluate_collective
from fabricui.engine.routing import Router
from fabricui.errors import ConfigError, FabricError
from fabricui.fabric.fabric import NETWORK_SWITCHES, DeviceKind
from fabricui.fabric.health import MARKS, health_of
from fabricui.importers.common import UNRECOGNISED, ParseError
from fabricui.importers.hostlist import compress, expand, name_lines, natural_key
from fabricui.importers.reading import read_output
from fabricui.importers.slurm_jobs import SlurmJob, SlurmJobs
from fabricui.importers.slurm_nodes import SlurmNodes
from fabricui.services.health import read_health
from fabricui.services.jobs import place_job, unknown_hosts
from fabricui.services.requests import TopologyRequest
from fabricui.services.session import collective_algorithms, load_fabric
from fabricui.units import format_bytes

if TYPE_CHECKING:
    from fabricui.fabric.fabric import Fabric
    from fabricui.hwdb.catalog import Catalog
    from fabricui.plugins import PluginHost

#: Tier names by ``max_tier``.
TIER_NAMES = ("one scale-up domain", "below the leaves", "through spines", "through cores")
#: Collectives the pick is priced with [bytes].
PRICE_SIZE = 2**30
#: What ``--jobs`` reads, for a file that is none of it.
JOBS_ADVICE = "give `squeue`, `scontrol show job` or `sacct` output"
#: Most GPUs an all-to-all price is computed for (a million flows take about a second).
MAX_ALLTOALL_GPUS = 512
#: Why a host ``--health`` leaves no NIC cable to is left out.
CUT_OFF = "cut off from the network"
#: Most characters of a cluster's hosts shown when a file names none of them.
MAX_HOSTS_SHOWN_CHARS = 60


@dataclass(frozen=True)
class PlaceRequest:
    """``fabricui place N``."""

    topology: TopologyRequest
    """The fabric (an imported cluster with host names)."""
    count: int
    """Hosts wanted."""
    free: str | None = None
    """A ``sinfo``/``scontrol show node`` output file, a file of host names one per line
    (``scontrol show hostnames``), or a hostlist of free hosts (None: every host of the
    fabric)."""
    jobs: str | None = None
    """A ``squeue``/``scontrol show job``/``sacct`` output of the running jobs: their hosts
    are not free, and the uplinks they share with the pick are priced."""
    seed: int = 0
    """Seed of the random pick the result is compared with."""
    price: bool = True
    """Price the pick and a random one (the collective engine)."""


@dataclass
class Group:
    """Hosts that share a level of the fabric."""

    key: tuple[Any, ...]
    """What they share (a domain, the leaves, the spines)."""
    hosts: list[int] = field(default_factory=list)
    """Host indices (cluster order)."""


@dataclass(frozen=True)
class Placement:
    """The hosts picked and what their traffic crosses."""

    topology: str
    """Topology id."""
    count: int
    """Hosts asked for."""
    hosts: tuple[str, ...]
    """The pick."""
    max_tier: int
    """0 one scale-up domain, 1 below the leaves, 2 spines, 3 cores."""
    leaves: tuple[str, ...]
    """Leaf switches the pick's NICs are cabled to."""
    spines: tuple[str, ...]
    """Spines above them the pick's traffic may cross (empty at tier 1 and below)."""
    free: int
    """Free hosts the pick was made from."""
    left_out: dict[str, list[str]]
    """Hosts not considered, by reason (``not in the fabric``, ``running jobs``, ``cut off
    from the network``, ``link down``, ``link degraded`` ...)."""
    price: dict[str, Any]
    """``{op: {"pick": busbw, "random": busbw}}`` [GB/s] at ``size_bytes``, and the random
    pick's hosts and max tier."""
    shared: list[dict[str, Any]]
    """Running jobs whose ring shares network links with the pick's: ``id``, ``hosts``,
    ``links`` shared, the pick's slowest ring flow ``alone_GBps`` and ``together_GBps``
    [GB/s]."""
    notes: list[str]
    """Assumptions and gaps."""
    warnings: list[str] = field(default_factory=list)
    """What the inputs leave unsaid or wrong (running jobs' hosts the cluster lacks), one
    line each; the command prints them on stderr."""

    def to_json(self) -> dict[str, Any]:
        """``hosts`` and ``max_tier`` first, then what the pick crosses and its price."""
        return {
            "hosts": list(self.hosts),
            "max_tier": self.max_tier,
            "tier": TIER_NAMES[self.max_tier],
            "hostlist": compress(self.hosts),
            "topology": self.topology,
            "count": self.count,
            "free": self.free,
            "leaves": list(self.leaves),
            "spines": list(self.spines),
            "left_out": {k: v for k, v in self.left_out.items() if v},
            "price": self.price,
            "shared_uplinks": self.shared,
            "notes": list(self.notes),
            "warnings": list(self.warnings),
        }

    def summary(self) -> str:
        """A few lines: the hostlist, the tier, the price against a random pick."""
        lines = [
            f"{self.count} host(s) on {self.topology} ({self.free} free): {compress(self.hosts)}",
            f"  max tier {self.max_tier}: traffic stays {TIER_NAMES[self.max_tier]} "
            f"({len(self.leaves)} leaf switch(es)"
            + (f", {len(self.spines)} spine(s)" if self.spines else "")
            + ")",
        ]
        for op, figures in self.price.get("ops", {}).items():
            lines.append(
                f"  {op} {figures['size']} over {figures['gpus']} GPUs: {figures['pick']:.1f} "
                f"GB/s busbw; a random pick of as many hosts: {figures['random']:.1f} GB/s"
            )
        random_pick = self.price.get("random_pick")
        if random_pick:
            lines.append(
                f"  (random pick, seed {random_pick['seed']}: max tier {random_pick['max_tier']}, "
                f"{compress(random_pick['hosts'])})"
            )
        for job in self.shared:
            lines.append(
                f"  shares {job['links']} network link(s) with job {job['id']} ({job['hosts']} "
                f"host(s)): the pick's slowest ring flow gets {job['alone_GBps']:.1f} GB/s alone, "
                f"{job['together_GBps']:.1f} GB/s while both rings run (max-min fair)"
            )
        for reason, names in self.left_out.items():
            if names:
                lines.append(f"  left out ({reason}): {compress(names)}")
        lines += [f"  note: {n}" for n in self.notes]
        return "\n".join(lines)


class _Layout:
    """The fabric's hosts and what each shares: domain, leaves per NIC, spines."""

    def __init__(self, fabric: Fabric) -> None:
        self.fabric = fabric
        if fabric.torus is not None or fabric.dragonfly is not None:
            layout = "torus" if fabric.torus is not None else "dragonfly"
            raise ConfigError(
                f"place picks hosts by the tiers of a fat-tree (leaf, spine, core); "
                f"{fabric.spec.id}'s network is a {layout}: not modelled"
            )
        names, self.per_node = fabric.host_layout
        self.names = list(names)
        self.index = {n: i for i, n in enumerate(self.names) if n}
        kinds = fabric.dev_kind
        src, dst = fabric.link_src, fabric.link_dst
        is_switch = np.isin(kinds, NETWORK_SWITCHES)
        up = np.flatnonzero((kinds[src] == DeviceKind.NIC) & is_switch[dst])
        self.leaf_of_nic = {int(src[k]): int(dst[k]) for k in up}
        self.cable_of_nic = {int(src[k]): int(k) for k in up}
        between = np.flatnonzero(is_switch[src] & is_switch[dst])
        self.above: dict[int, set[int]] = {}
        self.uplinks: dict[int, list[int]] = {}
        tier = {int(DeviceKind.LEAF): 1, int(DeviceKind.SPINE): 2, int(DeviceKind.CORE): 3}
        for k in between:
            a, b = int(src[k]), int(dst[k])
            if tier.get(int(kinds[b]), 0) > tier.get(int(kinds[a]), 0):
                self.above.setdefault(a, set()).add(b)
                self.uplinks.setdefault(a, []).append(int(k))
        self.pxn = Router.for_fabric(fabric).proxy is not None
        self.domain = fabric.hosts_per_domain

    def nics(self, host: int) -> list[int]:
        """NIC devices of a host, in rail order."""
        node, slot = divmod(host, self.per_node)
        devices = self.fabric.host_device_ids(node)
        nics = [int(d) for d in devices if self.fabric.dev_kind[d] == DeviceKind.NIC]
        if self.per_node > 1:
            per = len(nics) // self.per_node
            nics = nics[slot * per : (slot + 1) * per]
        return nics

    def leaves(self, host: int) -> tuple[int, ...]:
        """The leaf of each of the host's NICs (-1: no cable)."""
        return tuple(self.leaf_of_nic.get(n, -1) for n in self.nics(host))

    def spines(self, leaves: Iterable[int]) -> frozenset[int]:
        """Switches directly above any of ``leaves``."""
        out: set[int] = set()
        for leaf in leaves:
            out |= self.above.get(leaf, set())
        return frozenset(out)

    def domain_of(self, host: int) -> int:
        """The scale-up domain of a host."""
        return (host // self.per_node) // self.domain

    def max_tier(self, hosts: list[int]) -> int:
        """How high the traffic among ``hosts`` climbs (see the module docstring)."""
        if len({self.domain_of(h) for h in hosts}) <= 1:
            return 0
        rails = [self.leaves(h) for h in hosts]
        width = max(len(r) for r in rails)
        if self.pxn:
            groups = [{r[k] for r in rails if k < len(r) and r[k] >= 0} for k in range(width)]
        else:
            groups = [{leaf for r in rails for leaf in r if leaf >= 0}]
        if all(len(g) <= 1 for g in groups):
            return 1
        for group in groups:
            members = sorted(group)
            for i, a in enumerate(members):
                for b in members[i + 1 :]:
                    if not (self.above.get(a, set()) & self.above.get(b, set())):
                        return 3
        return 2


def _free_hosts(
    request: PlaceRequest, layout: _Layout, notes: list[str]
) -> tuple[set[int], list[str]]:
    """Host indices that are free, and the hosts a ``sinfo`` or host-name file names that
    the fabric lacks (other partitions).

    Raises:
        ConfigError: A path that is not a readable Slurm node listing or host-name file, a
            file none of whose nodes are in the fabric, or a hostlist naming hosts the
            fabric lacks.
    """
    if request.free is None:
        return set(layout.index.values()), []
    topology = layout.fabric.spec.id
    value = request.free
    if not _is_path(value):
        try:
            names = list(dict.fromkeys(expand(value)))
        except ParseError as exc:
            raise ConfigError(f"--free: {exc.message} (or name a sinfo output file)") from None
        unknown = [n for n in names if n not in layout.index]
        if unknown:
            alone = len(names) == 1 and not set(value) & set(",[")
            hint = " (and no file of that name)" if alone else ""
            shown = unknown_hosts(unknown, list(layout.index))
            raise ConfigError(f"--free: {len(unknown)} host(s) not in {topology}: {shown}{hint}")
        return {layout.index[n] for n in names}, []
    listed = _host_name_file(value, layout, notes)
    if listed is not None:
        return listed
    example = compress(list(layout.index)[:4])
    result = _slurm_listing(
        "--free",
        value,
        f"give `sinfo` or `scontrol show node` output, a file of host names one per line "
        f"(`scontrol show hostnames`), or the free hosts as a hostlist value (--free {example})",
    )
    if not isinstance(result.value, SlurmNodes):
        raise ConfigError(
            f"--free {value}: {result.format} output; give sinfo or `scontrol show node` "
            "output, a file of host names, or a hostlist"
        )
    listing = result.value
    everyone = list(dict.fromkeys(n.name for n in listing.nodes))
    if not any(n in layout.index for n in everyone):
        shown = _not_on_cluster(everyone, layout)
        raise ConfigError(
            f"--free {value}: none of its {len(everyone)} node(s) is in {topology}: {shown}"
        )
    names = listing.free()
    busy = len(listing.nodes) - len(names)
    notes.append(
        f"{len(names)} of {len(listing.nodes)} node(s) of {Path(value).name} are free ({busy} not)"
    )
    free = {layout.index[n] for n in names if n in layout.index}
    unknown = [n for n in names if n not in layout.index]
    return free, unknown


def _host_name_file(
    path: str, layout: _Layout, notes: list[str]
) -> tuple[set[int], list[str]] | None:
    """(free host indices, names the fabric lacks) of a ``--free`` file of host names, one
    per line (``scontrol show hostnames``, hostlists allowed); None when the file is not
    one (or cannot be read: the Slurm listing reader says why).

    Raises:
        ConfigError: A malformed hostlist line, or none of the names is in the fabric.
    """
    try:
        text, origin = read_output(path)
    except ParseError:
        return None
    try:
        names = name_lines(text)
    except ParseError as exc:
        raise ConfigError(f"--free {exc.located(origin)}") from None
    if names is None:
        return None
    if not any(n in layout.index for n in names):
        shown = _not_on_cluster(names, layout)
        raise ConfigError(
            f"--free {origin}: none of its {len(names)} host name(s) is in "
            f"{layout.fabric.spec.id}: {shown}"
        )
    notes.append(f"{len(names)} free host(s) listed in {Path(path).name}")
    free = {layout.index[n] for n in names if n in layout.index}
    return free, [n for n in names if n not in layout.index]


def _not_on_cluster(names: list[str], layout: _Layout) -> str:
    """A file's host names none of which is on the cluster, as ``--hosts`` lists unknown
    hosts (a few, the nearest cluster names), or the cluster's own hosts when none is near:
    what the two clusters' names look like side by side."""
    known = list(layout.index)
    shown = unknown_hosts(names, known)
    if shown != unknown_hosts(names, []):  # a nearest name was found
        return shown
    theirs = compress(known)
    if len(theirs) > MAX_HOSTS_SHOWN_CHARS:
        theirs = f"{compress(known[:4])} and {len(known) - 4} more"
    return f"{shown} ({layout.fabric.spec.id}'s hosts: {theirs})"


def _is_path(value: str) -> bool:
    """Whether ``--free`` names a file: host names hold no ``/``, and a name that exists
    is read as the file it is (a missing or mistyped path is an error, not a host)."""
    return "/" in value or os.sep in value or os.path.lexists(value)


@dataclass(frozen=True)
class _Listing:
    """A Slurm output read for ``--free`` or ``--jobs``."""

    format: str
    """The format recognised."""
    value: Any
    """The importer's result."""


def _slurm_listing(flag: str, path: str, advice: str) -> _Listing:
    """Read a ``--free``/``--jobs`` file (format recognised), errors naming ``flag``;
    ``advice``: what to give instead of a file no tool's output is recognised in.

    Raises:
        ConfigError: Missing, a directory, unreadable or not recognised.
    """
    try:
        report = read_health([path])
    except FabricError as exc:  # read_health names --health; this file came with ``flag``
        message = exc.message.removeprefix("--health ")
        if message.startswith(f"{path}: {UNRECOGNISED}"):
            message = f"{path}: {UNRECOGNISED}: {advice}"
        raise ConfigError(f"{flag} {message}") from None
    item = report.inputs[0]
    return _Listing(item.format, item.result)


def _job_listing(path: str) -> SlurmJobs:
    """The jobs of a ``--jobs`` file.

    Raises:
        ConfigError: Missing, unreadable, or not a job listing.
    """
    result = _slurm_listing("--jobs", path, JOBS_ADVICE)
    if not isinstance(result.value, SlurmJobs):
        raise ConfigError(f"--jobs {path}: {result.format} output; {JOBS_ADVICE}")
    return result.value


def _running(request: PlaceRequest, layout: _Layout, warnings: list[str]) -> list[SlurmJob]:
    """Running jobs of ``--jobs`` with their hosts on the cluster (empty without it): a job
    listing of another cluster would otherwise free nothing and price nothing, unsaid.

    Raises:
        ConfigError: Not a job listing, or running jobs none of whose hosts is on the
            cluster (a file with no running job is fine: nothing is busy).
    """
    if request.jobs is None:
        return []
    listing = _job_listing(request.jobs)
    warnings += [f"--jobs {request.jobs}: {w}" for w in listing.warnings]
    running = listing.running()
    hosts = list(dict.fromkeys(n for job in running for n in job.nodes))
    off = [n for n in hosts if n not in layout.index]
    if hosts and len(off) == len(hosts):
        raise ConfigError(
            f"--jobs {request.jobs}: none of the {len(hosts)} host(s) of its {len(running)} "
            f"running job(s) is in {layout.fabric.spec.id}: {_not_on_cluster(hosts, layout)}"
        )
    if off:
        warnings.append(
            f"--jobs {request.jobs}: {len(off)} of the {len(hosts)} host(s) of its running "
            f"jobs {'is' if len(off) == 1 else 'are'} not in {layout.fabric.spec.id} and "
            f"{'is' if len(off) == 1 else 'are'} left out: {unknown_hosts(off, [])}"
        )
    kept = [
        dataclasses.replace(job, nodes=[n for n in job.nodes if n in layout.index])
        for job in running
    ]
    return [job for job in kept if job.nodes]


def _with_reasons(message: str, left_out: dict[str, int], warnings: list[str]) -> str:
    """``message`` with how many hosts each reason left out (``not free in sinfo.txt 366,
    running jobs 5, link down 2``) and the inputs' warnings, so that a refusal says where
    the hosts went."""
    reasons = ", ".join(f"{why} {count}" for why, count in left_out.items() if count)
    said = f"{message} (left out: {reasons})" if reasons else message
    return "; ".join([said, *warnings])


def jobs_hosts_off_fabric(fabric: Fabric, path: str) -> list[str]:
    """The hosts of the running jobs of a ``--jobs`` file that the fabric lacks, in the
    file's order (what ``running_job_ranks`` leaves out).

    Raises:
        ConfigError: The file is not a job listing.
        ParseError: The file cannot be read.
    """
    layout = _Layout(fabric)
    hosts = [n for job in _job_listing(path).running() for n in job.nodes]
    return [n for n in dict.fromkeys(hosts) if n not in layout.index]


def no_running_job_said(fabric: Fabric, path: str) -> str:
    """What a ``--jobs`` file none of whose running jobs is on the fabric says in place of
    its jobs, in the explorer (notification, line above the map) and its reports:
    ``no running job on h100-ib-cluster's hosts in squeue.txt`` (a listing of another
    cluster), or ``no running job in squeue.txt``. What matters comes before the path,
    which a narrow line cuts.

    Raises:
        ConfigError: The file is not a job listing.
        ParseError: The file cannot be read.
    """
    where = f" on {fabric.spec.id}'s hosts" if jobs_hosts_off_fabric(fabric, path) else ""
    return f"no running job{where} in {path}"


def running_job_ranks(fabric: Fabric, path: str) -> list[tuple[str, list[str], np.ndarray]]:
    """(job id, its hosts on the fabric, their GPUs' global ranks) of every running job of a
    ``squeue``/``scontrol show job``/``sacct`` output; hosts the fabric lacks are skipped.

    Raises:
        ConfigError: The file is not a job listing, or the fabric names no hosts.
        ParseError: The file cannot be read.
    """
    layout = _Layout(fabric)
    out = []
    for job in _job_listing(path).running():
        hosts = [n for n in job.nodes if n in layout.index]
        if hosts:
            out.append((job.id, hosts, place_job(fabric, ",".join(hosts)).ranks))
    return out


def _health_penalty(layout: _Layout) -> tuple[dict[int, str], set[int]]:
    """Hosts whose NIC cable the overlay marks (host -> worst mark), and leaves whose
    uplinks it marks degraded or down."""
    overlay = health_of(layout.fabric)
    if overlay is None:
        return {}, set()
    marks = overlay.link_marks
    hosts: dict[int, str] = {}
    for host in layout.index.values():
        worst = 0
        for nic in layout.nics(host):
            k = layout.cable_of_nic.get(nic)
            worst = max(worst, int(marks[k]) if k is not None else MARKS.index("down"))
            mark = overlay.device_marks.get(nic)
            if mark:
                worst = max(worst, MARKS.index(mark))
        if worst:
            hosts[host] = MARKS[worst]
    leaves = {
        leaf
        for leaf, links in layout.uplinks.items()
        if any(marks[k] >= MARKS.index("degraded") for k in links)
    }
    return hosts, leaves


def _cut_off_hosts(layout: _Layout) -> set[int]:
    """Hosts the health overlay cuts off from the network (every NIC cable down): no flow
    leaves them, whatever their other links' marks say."""
    overlay = health_of(layout.fabric)
    if overlay is None or not overlay.cut_off:
        return set()
    nodes = set(overlay.cut_off)
    return {h for h in layout.index.values() if h // layout.per_node in nodes}


def pick(layout: _Layout, free: set[int], count: int, bad_leaves: set[int]) -> list[int]:
    """The best-fit pick of ``count`` hosts among ``free`` (see the module docstring).

    Raises:
        ConfigError: Fewer free hosts than asked for.
    """
    if count > len(free):
        raise ConfigError(f"{count} host(s) asked for, {len(free)} free")
    ordered = sorted(free)

    def worse(hosts: list[int]) -> int:
        """Hosts behind a leaf with degraded uplinks (taken last)."""
        return sum(1 for h in hosts if set(layout.leaves(h)) & bad_leaves)

    levels: list[dict[tuple[Any, ...], list[int]]] = []
    if layout.domain > 1:
        levels.append(_grouped(ordered, lambda h: (layout.domain_of(h),)))
    levels.append(_grouped(ordered, lambda h: tuple(sorted(set(layout.leaves(h))))))
    levels.append(_grouped(ordered, lambda h: tuple(sorted(layout.spines(layout.leaves(h))))))
    for level in levels:
        fits = [hosts for hosts in level.values() if len(hosts) >= count]
        if fits:
            best = min(fits, key=lambda hosts: (worse(hosts) > 0, len(hosts), hosts[0]))
            return _fill(layout, best, count, bad_leaves)
    return _fill(layout, ordered, count, bad_leaves)


def _grouped(hosts: list[int], key: Any) -> dict[tuple[Any, ...], list[int]]:
    out: dict[tuple[Any, ...], list[int]] = {}
    for h in hosts:
        out.setdefault(key(h), []).append(h)
    return out


def _fill(layout: _Layout, hosts: list[int], count: int, bad_leaves: set[int]) -> list[int]:
    """``count`` of ``hosts``: from their fullest leaf groups first (fewest leaves), hosts
    behind degraded uplinks last."""
    groups = _grouped(hosts, lambda h: tuple(sorted(set(layout.leaves(h)))))
    order = sorted(
        groups.values(),
        key=lambda g: (bool(set(layout.leaves(g[0])) & bad_leaves), -len(g), g[0]),
    )
    chosen: list[int] = []
    for group in order:
        chosen += group[: count - len(chosen)]
        if len(chosen) >= count:
            break
    return sorted(chosen)


def place(
    request: PlaceRequest, catalog: Catalog | None = None, host: PluginHost | None = None
) -> Placement:
    """Pick ``request.count`` hosts and price them against a random pick.

    Raises:
        ConfigError: A fabric without host names, bad ``--free``/``--jobs``, too few free hosts.
        FabricError: The topology or a health file cannot be loaded.
    """
    if request.count < 1:
        raise ConfigError(f"the host count must be at least 1 (got {request.count})")
    if request.seed < 0:
        raise ConfigError(f"--seed must be >= 0 (got {request.seed})")
    fabric = load_fabric(request.topology, catalog, host)
    layout = _Layout(fabric)
    notes: list[str] = []
    warnings: list[str] = []
    free, unknown = _free_hosts(request, layout, notes)
    # Hosts a --free file does not give as free (busy, drained or not listed): counted when
    # the pick cannot be made, as every reason below is (a hostlist names its hosts itself).
    unfree = {}
    if request.free is not None and _is_path(request.free):
        unfree[f"not free in {Path(request.free).name}"] = len(layout.index) - len(free)
    left_out: dict[str, list[str]] = {"not in the fabric": unknown}
    running = _running(request, layout, warnings)
    busy = {layout.index[n] for job in running for n in job.nodes}
    left_out["running jobs"] = [layout.names[h] for h in sorted(busy & free)]  # type: ignore[misc]
    free -= busy
    cut = _cut_off_hosts(layout)
    left_out[CUT_OFF] = [layout.names[h] for h in sorted(cut & free)]  # type: ignore[misc]
    free -= cut
    marked, bad_leaves = _health_penalty(layout)
    for mark in ("down", "degraded", "errors"):
        hit = sorted(h for h in free if marked.get(h) == mark)
        left_out[f"link {mark}"] = [layout.names[h] for h in hit]  # type: ignore[misc]
        free -= set(hit)
    try:
        chosen = pick(layout, free, request.count, bad_leaves)
    except ConfigError as exc:  # say why hosts were left out, and what the inputs lacked
        counts = {**unfree, **{why: len(hosts) for why, hosts in left_out.items()}}
        raise ConfigError(_with_reasons(exc.message, counts, warnings)) from None
    tier = layout.max_tier(chosen)
    leaf_devs = sorted({leaf for h in chosen for leaf in layout.leaves(h) if leaf >= 0})
    spine_devs = sorted(layout.spines(leaf_devs)) if tier >= 2 else []
    name = fabric.device_name
    names = [layout.names[h] for h in chosen]
    placement = Placement(
        topology=fabric.spec.id,
        count=request.count,
        hosts=tuple(n for n in names if n),
        max_tier=tier,
        leaves=tuple(sorted((name(d) for d in leaf_devs), key=natural_key)),
        spines=tuple(sorted((name(d) for d in spine_devs), key=natural_key)),
        free=len(free),
        left_out=left_out,
        price={},
        shared=[],
        notes=notes,
        warnings=warnings,
    )
    if request.price:
        _price(placement, layout, free, request, host)
        _shared(placement, layout, running, host)
    return placement


def _ranks(layout: _Layout, hosts: list[str]) -> np.ndarray:
    return place_job(layout.fabric, ",".join(hosts)).ranks


def _busbw(layout: _Layout, op: str, ranks: np.ndarray, host: PluginHost | None) -> float:
    prediction = evaluate_collective(
        layout.fabric, op, [PRICE_SIZE], ranks=ranks, algorithms=collective_algorithms(host=host)
    )
    return float(prediction.busbw_GBps[0])


def _price(
    placement: Placement,
    layout: _Layout,
    free: set[int],
    request: PlaceRequest,
    host: PluginHost | None,
) -> None:
    """The pick's all-reduce (and, up to ``MAX_ALLTOALL_GPUS``, all-to-all) bus bandwidth
    against a random pick of as many free hosts."""
    rng = random.Random(request.seed)
    pool = sorted(free | {layout.index[h] for h in placement.hosts})
    other = sorted(rng.sample(pool, len(placement.hosts)))
    other_names = [layout.names[h] or "" for h in other]
    mine = _ranks(layout, list(placement.hosts))
    theirs = _ranks(layout, other_names)
    ops = ["all_reduce"]
    if len(mine) <= MAX_ALLTOALL_GPUS:
        ops.append("all_to_all")
    figures = {}
    if len(mine) > 1:
        for op in ops:
            figures[op] = {
                "size": format_bytes(PRICE_SIZE),
                "gpus": int(len(mine)),
                "pick": _busbw(layout, op, mine, host),
                "random": _busbw(layout, op, theirs, host),
            }
    placement.price.update(
        {
            "size_bytes": PRICE_SIZE,
            "ops": figures,
            "random_pick": {
                "seed": request.seed,
                "hosts": other_names,
                "max_tier": layout.max_tier(other),
            },
        }
    )


def _shared(
    placement: Placement, layout: _Layout, running: list[SlurmJob], host: PluginHost | None
) -> None:
    """For every running job whose ring shares network links with the pick's ring (leaf
    uplinks, spine and core cables): both rings priced together with max-min fair rates
    (the traffic engine) against the pick's alone."""
    if not running or placement.max_tier < 2:
        return

    router = BulkRouter(layout.fabric)
    first = layout.fabric.domains * layout.fabric.node_links
    mine = _ranks(layout, list(placement.hosts))
    my_links = _ring_links(router, mine, first)
    for job in running:
        hosts = job.nodes  # those on the cluster (_running)
        if len(hosts) < 2:
            continue
        theirs = _ranks(layout, hosts)
        common = my_links & _ring_links(router, theirs, first)
        if not common:
            continue
        alone, together = _contention(router, mine, theirs)
        placement.shared.append(
            {
                "id": job.id,
                "hosts": len(hosts),
                "links": len(common),
                "alone_GBps": alone,
                "together_GBps": together,
            }
        )


def _ring_links(router: Any, ranks: np.ndarray, first: int) -> set[int]:
    """Network links (ids from ``first``) a ring over ``ranks`` routes through."""
    paths = router.paths(ranks, np.roll(ranks, -1))
    return {int(k) for k in np.unique(paths) if k >= first}


def _contention(router: Any, mine: np.ndarray, theirs: np.ndarray) -> tuple[float, float]:
    """The slowest flow rate of the pick's ring [GB/s], alone and with the other job's ring
    on the same fabric (max-min fair rates, the traffic engine)."""
    src, dst = mine, np.roll(mine, -1)
    alone = float(router.max_min_rates(src, dst)[0].min())
    both_src = np.concatenate([src, theirs])
    both_dst = np.concatenate([dst, np.roll(theirs, -1)])
    rates, _ = router.max_min_rates(both_src, both_dst)
    return alone, float(rates[: len(src)].min())
