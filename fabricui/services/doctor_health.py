"""The doctor on the fabric as it is: what the health files' down and degraded links do to a
job's all-reduce, and which of its ranks and hosts they touch.

The job's all-reduce is priced as ``fabricui collective`` prices it (NCCL's pick, at
``PRICED_SIZE_BYTES``) on the fabric as it is and as built; a slower one is a finding with
both figures. The links responsible are found on the routes NCCL's rings take: one ring per
channel, each entering a node at another GPU so that the channels spread over every NIC of
the node (``Group.ring_edges``, what the engine's ring prices), routed and loaded by the
engine's bulk router. A slowed link those flows load is named with the ranks and hosts
whose flows cross it and with what it alone costs them: the rings' time per byte (their
busiest resource's load over its capacity) with that link as it is and every other slowed
link at its built rate, over the same with all of them at their built rate. A link the rings
cross with room to spare slows nothing, and says so; a link that carries nothing as it is
(every NVLink of a GPU down) is named from the rings routed on the fabric as built.

Hosts that lost a NIC cable are named with the NIC their GPUs fall back to; a host that lost
every NIC cable is cut off from the network, and the rings' flows to and from it (which
cannot run) are counted, not routed.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
import numpy.typing as npt

from fabricui.engine.algorithms import channels_for
from fabricui.engine.bulk import bulk_router
from fabricui.engine.collectives import bus_factor
from fabricui.engine.group import Group
from fabricui.engine.routing import Router
from fabricui.fabric.fabric import DeviceKind
from fabricui.fabric.health import health_of
from fabricui.units import format_bytes

if TYPE_CHECKING:
    from fabricui.engine.bulk import BulkRouter
    from fabricui.engine.collectives import Prediction
    from fabricui.fabric.fabric import Fabric
    from fabricui.fabric.health import HealthChange, HealthOverlay
    from fabricui.services.loaded import LoadedFabric

IntArray = npt.NDArray[np.int64]
FloatArray = npt.NDArray[np.float64]
#: Names the hosts of fabric nodes, each once in order of first appearance.
HostNamer = Callable[[npt.ArrayLike], list[str]]

#: Codes the doctor adds on the fabric as it is.
JOB_HEALTH_CODES = {
    "job-all-reduce-slower": (
        "the job's all-reduce, priced as `fabricui collective` prices it, is slower on the "
        "fabric as it is than as built (both figures, and the links that slow it)"
    ),
    "ring-crosses-degraded-link": (
        "NCCL's rings (every channel, over every NIC) cross a link the health files show "
        "degraded: the ranks and hosts whose flows cross it, and what it costs the rings"
    ),
    "ring-crosses-lost-nvlinks": "NCCL's rings cross a GPU with inactive NVLinks",
    "host-lost-a-nic-cable": (
        "a job's host has a NIC whose cable is down; its GPUs share another (none left: the "
        "host is cut off from the network)"
    ),
}
#: Ranks named in one finding before "... and N more".
_SHOWN = 8
#: Size the job's all-reduce is priced at [bytes]: 1 GiB, where bandwidth rather than
#: latency sets the time (nccl-tests' busbw plateau), so a slow link shows in full.
PRICED_SIZE_BYTES = 1 << 30
#: Least relative slowdown called one: the engine is deterministic, so anything above
#: rounding is the overlay's doing; below 1% it changes no decision.
SLOWER = 0.01


@dataclass(frozen=True)
class JobHealthFinding:
    """One way a job meets the fabric's damage."""

    code: str
    """One of ``JOB_HEALTH_CODES``."""
    severity: str
    """``error`` (cannot run), ``warning`` (a slowdown) or ``info`` (crossed, no slowdown)."""
    where: str
    """The link or host (the job, for its all-reduce)."""
    message: str
    """What it does to the job: its ranks, hosts and the bandwidth left."""
    fix: str
    """What to do."""
    ranks: tuple[int, ...]
    """Job ranks whose ring flows cross it (global ranks when no job was placed)."""
    hosts: tuple[str, ...]
    """Their hosts."""
    figures: dict[str, Any] | None = None
    """The numbers behind the message (``figures`` in the JSON when there are any)."""

    def to_json(self) -> dict[str, Any]:
        """Every field (``figures`` only when there are some)."""
        out: dict[str, Any] = {
            "code": self.code,
            "severity": self.severity,
            "where": self.where,
            "message": self.message,
            "fix": self.fix,
            "ranks": list(self.ranks),
            "hosts": list(self.hosts),
        }
        if self.figures is not None:
            out["figures"] = self.figures
        return out


@dataclass(frozen=True)
class AllReducePrice:
    """A job's all-reduce priced on the fabric as it is and as built (NCCL's pick)."""

    size_bytes: int
    """Message size [bytes]."""
    nranks: int
    """Ranks of the job."""
    as_built: dict[str, Any]
    """``time_us``, ``busbw_GBps``, ``pick`` (algorithm/protocol) and ``channels`` as
    built."""
    as_is: dict[str, Any]
    """The same on the fabric as it is."""

    @property
    def slowdown(self) -> float:
        """Time as it is over time as built (1: unchanged)."""
        built = float(self.as_built["time_us"])
        return float(self.as_is["time_us"]) / built if built > 0 else 1.0

    def to_json(self) -> dict[str, Any]:
        """``size_bytes``, ``nranks``, ``as_built``, ``as_is`` and ``slowdown``."""
        return {
            "op": "all_reduce",
            "size_bytes": self.size_bytes,
            "nranks": self.nranks,
            "as_built": self.as_built,
            "as_is": self.as_is,
            "slowdown": round(self.slowdown, 4),
        }

    def line(self) -> str:
        """One line: both bus bandwidths, as ``fabricui collective`` reports them."""
        size = format_bytes(self.size_bytes)
        return (
            f"all_reduce of {size} among {self.nranks} ranks (as `fabricui collective` "
            f"prices it): {self.as_is['busbw_GBps']:.2f} GB/s bus bandwidth as it is "
            f"({self.as_is['pick']}), {self.as_built['busbw_GBps']:.2f} GB/s as built "
            f"({self.as_built['pick']})"
        )


def _figures(prediction: Prediction) -> dict[str, Any]:
    """The one size's time, bus bandwidth, pick and channels of a prediction."""
    choice = prediction.choice
    channels = choice.nccl.channels[0] if choice is not None else None
    return {
        "time_us": round(float(prediction.time_us[0]), 3),
        "busbw_GBps": round(float(prediction.busbw_GBps[0]), 3),
        "pick": prediction.algorithm[0],
        "channels": channels,
    }


def price_all_reduce(
    as_is: LoadedFabric,
    as_built: LoadedFabric,
    ranks: npt.NDArray[np.int64],
    size_bytes: int = PRICED_SIZE_BYTES,
) -> AllReducePrice:
    """The job's all-reduce on both fabrics, with the call ``fabricui collective`` makes
    (``LoadedFabric.collective_on``: every loaded algorithm, NCCL's pick).

    Args:
        as_is: The fabric as the health files say it is.
        as_built: The same topology without them.
        ranks: (n,) global ranks of the job.
        size_bytes: Message size [bytes].

    Raises:
        FabricError: The collective cannot be priced (no algorithm, the memory budget).
    """
    built = as_built.collective_on("all_reduce", ranks, [size_bytes])
    now = as_is.collective_on("all_reduce", ranks, [size_bytes])
    return AllReducePrice(size_bytes, int(len(ranks)), _figures(built), _figures(now))


def job_findings(
    as_is: LoadedFabric,
    as_built: LoadedFabric,
    ranks: npt.NDArray[np.int64],
    host_names: list[str] | None = None,
) -> tuple[AllReducePrice | None, list[JobHealthFinding]]:
    """The job's all-reduce on the fabric as it is and as built, and the findings: its
    slowdown first (when there is one), then the links and hosts (``job_health``).

    Args:
        as_is: The fabric as it is (``--health``).
        as_built: The same topology without the health files.
        ranks: (n,) global ranks in job order.
        host_names: Name of every host (fabric node), when the cluster names them.

    Returns:
        The price (None when the job cannot run: a host is cut off, or one rank), and the
        findings.

    Raises:
        FabricError: The collective cannot be priced (no algorithm, the memory budget).
    """
    fabric = as_is.fabric
    findings = job_health(fabric, ranks, host_names, built=as_built.fabric)
    overlay = health_of(fabric)
    nodes = np.unique(np.asarray(ranks, dtype=np.int64) // fabric.gpus_per_node)
    if overlay is None or len(ranks) < 2 or np.isin(nodes, overlay.cut_off).any():
        return None, findings
    price = price_all_reduce(as_is, as_built, np.asarray(ranks, dtype=np.int64))
    if price.slowdown > 1.0 + SLOWER:
        findings.insert(0, _slower(price, findings, _host_namer(fabric, host_names)(nodes)))
    return price, findings


def _slower(
    price: AllReducePrice, findings: list[JobHealthFinding], hosts: list[str]
) -> JobHealthFinding:
    """The all-reduce's slowdown, naming the links that lengthen the rings (the warnings
    among ``findings``)."""
    slowing = [f for f in findings if f.severity in ("warning", "error")]
    blamed = "what slows NCCL's rings: " + ", ".join(f.where for f in slowing[:_SHOWN])
    if len(slowing) > _SHOWN:
        blamed += f" and {len(slowing) - _SHOWN} more"
    if not slowing:
        blamed = (
            "NCCL's rings cross no link that slows them: the slowdown is on the routes of its pick"
        )
    now, built = price.as_is, price.as_built
    return JobHealthFinding(
        "job-all-reduce-slower",
        "warning",
        f"all_reduce of {format_bytes(price.size_bytes)} on {len(hosts)} host(s)",
        f"the job's all_reduce of {format_bytes(price.size_bytes)} ({price.nranks} ranks) "
        f"runs at {now['busbw_GBps']:.2f} GB/s bus bandwidth on the fabric as it is, "
        f"{built['busbw_GBps']:.2f} GB/s as built: {price.slowdown:.2f}x the time "
        f"({now['time_us'] / 1e3:.2f} ms, not {built['time_us'] / 1e3:.2f} ms; NCCL's pick "
        f"{now['pick']} as it is, {built['pick']} as built); {blamed}",
        "fix the link(s) named, or leave their host(s) out of the job (`fabricui place N "
        "--health FILE` picks around them)",
        tuple(range(price.nranks)),
        tuple(hosts),
        figures=price.to_json(),
    )


def _host_namer(fabric: Fabric, host_names: list[str] | None) -> HostNamer:
    """A function from fabric nodes to the names of their hosts (``n3`` unnamed), each
    once, in the order they first appear."""

    def names(nodes: npt.ArrayLike) -> list[str]:
        flat = np.asarray(nodes, dtype=np.int64).reshape(-1)
        unique, first = np.unique(flat, return_index=True)
        out = []
        for node in unique[np.argsort(first)].tolist():  # distinct hosts: a job's few
            named = host_names[node] if host_names and node < len(host_names) else None
            out.append(named or f"n{node}")
        return out

    return names


def _ranks_text(ranks: list[int], names: list[str]) -> str:
    shown = ", ".join(f"{r} ({n})" for r, n in zip(ranks[:_SHOWN], names[:_SHOWN]))
    more = f" and {len(ranks) - _SHOWN} more" if len(ranks) > _SHOWN else ""
    return shown + more


@dataclass
class _Rings:
    """NCCL's rings of a job routed on one fabric: their flows and the resources each flow
    loads."""

    group: Group
    """The job's ranks on the fabric."""
    src: IntArray
    """(n_flows,) source rank of every routable ring edge of every channel."""
    dst: IntArray
    """(n_flows,) its destination rank."""
    volume: FloatArray
    """(n_flows,) bytes each carries per message byte (all-reduce)."""
    channels: int
    """Rings priced (one per channel the engine's ring spreads over)."""
    cut: IntArray
    """(n_cut, 2) source and destination rank of every ring edge to or from a host cut off
    from the network (not routed)."""
    flow: IntArray
    """(n_entries,) flow of each (flow, resource) pair."""
    res: IntArray
    """(n_entries,) resource (link or aggregate) it loads."""
    router: Router
    """The group's router, sharing its flow incidences with every capacity tried."""

    @classmethod
    def of(cls, fabric: Fabric, ranks: IntArray, cut_off: tuple[int, ...]) -> _Rings:
        """Route the rings of ``ranks``, leaving out the edges that need a cut-off host."""
        group = Group(fabric, ranks, router=Router.for_fabric(fabric))
        channels = channels_for(group)
        src, dst, share = group.ring_edges(channels)
        g = fabric.gpus_per_node
        src, dst = src.astype(np.int64), dst.astype(np.int64)
        cut = (np.isin(src // g, cut_off) | np.isin(dst // g, cut_off)) & (src // g != dst // g)
        edges = np.stack([src[cut], dst[cut]], axis=1)
        src, dst = src[~cut], dst[~cut]
        volume = share[~cut] * bus_factor("all_reduce", group.n)
        # A variant of the router keeps the flows' incidences (``RouteMemo``): each link
        # priced at another rate below reuses them instead of routing the rings again.
        router = group.router.variant(fabric)
        flow, res, _ = bulk_router(router, group.capacity_GBps).weighted_incidence(src, dst)
        return cls(group, src, dst, volume, channels, edges, flow, res, router)

    @property
    def capacity_GBps(self) -> FloatArray:
        """(n_links,) the engine's capacity of every link of the fabric [GB/s]."""
        return self.group.capacity_GBps

    def at(self, capacity_GBps: FloatArray) -> BulkRouter:
        """The engine's bulk router of these rings' routes with other link capacities."""
        return bulk_router(self.router, capacity_GBps)

    def us_per_byte(self, bulk: BulkRouter) -> float:
        """The rings' busiest resource's time per message byte under ``bulk``'s
        capacities [us] (0 without flows)."""
        return bulk.seconds_per_byte(self.src, self.dst, self.volume) if self.src.size else 0.0

    def crossing(self, before: BulkRouter, after: BulkRouter) -> IntArray:
        """Flows that load a resource whose capacity differs between the two, ascending:
        those that cross the links changed (an aggregate holds a changed link when its
        capacity, the sum of its links', changed)."""
        changed = after.resource_capacity_GBps != before.resource_capacity_GBps
        return np.unique(self.flow[changed[self.res]])


def _links_of(fabric: Fabric, change: HealthChange) -> IntArray:
    """The directed links a change slowed: the cable both ways, or a GPU's scale-up links
    (``devices[1] == -1``)."""
    a, b = change.devices
    src, dst = fabric.link_src, fabric.link_dst
    if b != -1:
        return np.flatnonzero(((src == a) & (dst == b)) | ((src == b) & (dst == a)))
    scale_up = (DeviceKind.NVSWITCH, DeviceKind.GPU)
    touches = (src == a) | (dst == a)
    inside = np.isin(fabric.dev_kind[src], scale_up) & np.isin(fabric.dev_kind[dst], scale_up)
    return np.flatnonzero(touches & inside)


def _built_capacity(fabric: Fabric, built: Fabric | None) -> FloatArray | None:
    """(n_links,) the engine's capacity of every link as built, when ``built`` has the same
    links in the same order (no cable removed); else None."""
    if built is None or built.n_links != fabric.n_links:
        return None
    if not (
        np.array_equal(built.link_src, fabric.link_src)
        and np.array_equal(built.link_dst, fabric.link_dst)
    ):
        return None
    capacity: FloatArray = Router.for_fabric(built).capacity_GBps
    return capacity


def job_health(
    fabric: Fabric,
    ranks: npt.NDArray[np.int64],
    host_names: list[str] | None = None,
    built: Fabric | None = None,
) -> list[JobHealthFinding]:
    """The findings for a job's rings on an overlaid fabric (empty on the fabric as built).

    Args:
        fabric: The fabric as it is (``--health``).
        ranks: (n,) global ranks in job order.
        host_names: Name of every host (fabric node), when the cluster names them.
        built: The fabric as built: each slowed link's built rate (without it, its rate
            as it is over the share it kept), and the rings' routes over links that carry
            nothing as it is (without it, those are not named).

    Returns:
        One finding per slowed link the rings cross (a warning where it slows them, info
        where it has room), per lost link they crossed as built, per host that lost a NIC
        cable.
    """
    overlay = health_of(fabric)
    if overlay is None or len(ranks) < 2:
        return []
    ranks = np.asarray(ranks, dtype=np.int64)
    fabrics = [f for f in (fabric, built) if f is not None]
    fresh = [f for f in fabrics if Router.for_fabric(f).memo is None]
    try:
        rings = _Rings.of(fabric, ranks, overlay.cut_off)
        host_of = _host_namer(fabric, host_names)
        out = _link_findings(_Costs(fabric, rings, built), overlay, ranks, host_of)
    finally:
        for routed in fresh:  # the rings' incidences were kept for these findings only
            Router.forget_variants(routed)
    return out + _host_findings(fabric, overlay, ranks, rings, host_of)


def _change_groups(fabric: Fabric, overlay: HealthOverlay) -> list[list[HealthChange]]:
    """The slowed or lost links' changes, one list per link (several cables of one bundle
    read separately are one link), in the changes' order; a NIC's lost cable is the host's
    finding (``_host_findings``)."""
    groups: dict[tuple[int, int], list[HealthChange]] = {}
    for change in overlay.changes:
        a, b = change.devices
        if change.kind not in ("degraded", "down"):
            continue
        if change.factor == 0.0 and b != -1 and fabric.dev_kind[a] == DeviceKind.NIC:
            continue
        groups.setdefault((min(a, b), max(a, b)) if b != -1 else (a, -1), []).append(change)
    return list(groups.values())


@dataclass
class _Link:
    """One slowed or lost link: its changes, what it kept and its links as it is."""

    changes: list[HealthChange]
    """The changes that name it (one per cable of a bundle read separately)."""
    kept: float
    """Share of its bandwidth it keeps (bundle losses add up change by change)."""
    links: IntArray
    """Its directed links in the fabric as it is (none when removed)."""


@dataclass
class _Costs:
    """What the link findings compare: the rings as they are, with each slowed link alone
    at its rate as it is (every other one at its built rate), and as built."""

    fabric: Fabric
    """The fabric as it is."""
    rings: _Rings
    """The job's rings on it."""
    built: Fabric | None
    """The fabric as built."""

    def restored(self, links: list[_Link]) -> FloatArray:
        """(n_links,) capacities with every slowed link at its built rate: the fabric as
        built's when its links are the same, else the rate as it is over the share kept (a
        link that keeps nothing stays as it is then)."""
        capacity = self.rings.capacity_GBps
        built = _built_capacity(self.fabric, self.built)
        out = capacity.copy()
        for link in links:
            if built is not None:
                out[link.links] = built[link.links]
            elif link.kept > 0.0:
                out[link.links] = capacity[link.links] / link.kept
        return out


def _link_findings(
    costs: _Costs, overlay: HealthOverlay, ranks: IntArray, host_of: HostNamer
) -> list[JobHealthFinding]:
    """A finding per slowed link the rings load (who crosses it and what it alone costs
    them), and per lost link they crossed as built (who takes other links)."""
    fabric, rings = costs.fabric, costs.rings
    if not rings.src.size:
        return []
    links = [
        _Link(changes, min(c.factor for c in changes), _links_of(fabric, changes[0]))
        for changes in _change_groups(fabric, overlay)
    ]
    restored = costs.restored(links)
    repaired = rings.at(restored)
    repaired_us = rings.us_per_byte(repaired)
    position = np.argsort(ranks, kind="stable")
    built_rings: list[_Rings] = []
    out = []
    for link in links:
        found = None
        if link.links.size:
            alone = restored.copy()
            alone[link.links] = rings.capacity_GBps[link.links]
            slowed = rings.at(alone)
            hit = rings.crossing(repaired, slowed)
            if hit.size:
                cost = rings.us_per_byte(slowed) / repaired_us if repaired_us > 0 else 1.0
                found = (hit, rings.src[hit], cost)
        if found is None and link.kept == 0.0:
            found = _lost(costs, link, ranks, built_rings)
        if found is None:
            continue
        hit, sources, cost = found
        senders = np.unique(sources)
        job_ranks = position[np.searchsorted(ranks[position], senders)]
        order = np.argsort(job_ranks, kind="stable")
        job_ranks, senders = job_ranks[order], senders[order]
        hosts = tuple(host_of(senders // fabric.gpus_per_node))
        out.append(_link_finding(fabric, link, cost, job_ranks, senders, hosts, hit.size))
    return out


def _lost(
    costs: _Costs, link: _Link, ranks: IntArray, memo: list[_Rings]
) -> tuple[IntArray, IntArray, float] | None:
    """(flows, their sources, cost) of a link that carries nothing as it is, from the
    rings as built: the flows that crossed it there take other links now, and ``cost`` is
    the rings' time per byte as it is over as built (every change together); None when the
    fabric as built is not known, its devices are not the same, or the rings did not cross
    it there either. ``memo`` keeps the rings as built for the next lost link."""
    built, fabric = costs.built, costs.fabric
    if built is None:
        return None
    first = link.changes[0]
    same = all(
        d < built.n_devices and built.device_name(d) == fabric.device_name(d)
        for d in first.devices
        if d != -1
    )
    links = _links_of(built, first) if same else np.zeros(0, dtype=np.int64)
    if not links.size:
        return None
    if not memo:
        memo.append(_Rings.of(built, ranks, ()))
    rings = memo[0]
    if not rings.src.size:
        return None
    as_built = rings.at(rings.capacity_GBps)
    without = rings.capacity_GBps.copy()
    without[links] = 0.0
    hit = rings.crossing(as_built, rings.at(without))
    if not hit.size:
        return None
    base = rings.us_per_byte(as_built)
    now = costs.rings.us_per_byte(costs.rings.at(costs.rings.capacity_GBps))
    return hit, rings.src[hit], now / base if base > 0 else 1.0


def _link_finding(
    fabric: Fabric,
    link: _Link,
    cost: float,
    job_ranks: IntArray,
    senders: IntArray,
    hosts: tuple[str, ...],
    flows: int,
) -> JobHealthFinding:
    """One slowed or lost link the rings cross: ``cost`` is what it costs the rings'
    bandwidth term (``_link_findings``, ``_lost``)."""
    changes, kept = link.changes, link.kept
    first = changes[0]
    a, b = first.devices
    code = "ring-crosses-lost-nvlinks" if b == -1 else "ring-crosses-degraded-link"
    where = first.label
    if len(changes) > 1:
        count = int(fabric.link_count[link.links[0]]) if link.links.size else 0
        where = f"{fabric.device_name(a)} -> {fabric.device_name(b)} ({len(changes)} cables"
        where += f" of {count})" if count else ")"
    names = [fabric.gpu_name(int(r)) for r in senders[:_SHOWN]]
    who = (
        f"NCCL's rings' flows from rank(s) {_ranks_text(job_ranks.tolist(), names)} on "
        f"host(s) {', '.join(hosts[:_SHOWN])}"
    )
    slows = cost > 1.0 + 1e-9
    sources = "; ".join(dict.fromkeys(s for c in changes for s in c.source.split("; ")))
    keeps = f"keeps {kept:.0%} of its bandwidth"
    if any(c.erroring for c in changes):  # a degraded cable that counts errors too
        keeps += " and its error counters are over their threshold"
    if kept == 0.0:
        message = f"{who} cross {where} as built; it carries nothing as it is, so they take " + (
            f"other links: the rings' bandwidth term is {cost:.2f}x what it is as built"
            if slows
            else "other links, with room to spare (the rings are no slower)"
        )
    elif slows:
        message = (
            f"{who} cross {where}, which {keeps}: it slows the "
            f"rings; alone, it makes their bandwidth term {cost:.2f}x what it is as built"
        )
    else:
        message = (
            f"{who} cross {where}, which {keeps}: it has room "
            "(alone, it leaves the rings' busiest link elsewhere), so it does not slow them"
        )
    fix = (
        "leave the host(s) out of the job (`fabricui place N --health FILE` picks around "
        f"them) or fix the link ({sources})"
        if slows
        else f"nothing for this job; fix the link before more traffic needs it ({sources})"
    )
    return JobHealthFinding(
        code,
        "warning" if slows else "info",
        where,
        message,
        fix,
        tuple(int(r) for r in job_ranks),
        hosts,
        figures={
            "bandwidth_kept": round(float(kept), 4),
            "flows": int(flows),
            "rings_slowdown": round(float(cost), 4),
        },
    )


def _host_findings(
    fabric: Fabric, overlay: HealthOverlay, ranks: IntArray, rings: _Rings, host_of: HostNamer
) -> list[JobHealthFinding]:
    """Hosts of the job cut off from the network, then hosts that lost one NIC cable."""
    g = fabric.gpus_per_node
    node_of = ranks // g
    out = []
    for node in overlay.cut_off:
        mine = np.flatnonzero(node_of == node)
        if not mine.size:
            continue
        (name,) = host_of([node])
        touching = (rings.cut // g == node).any(axis=1)
        per_ring = int(touching.sum()) // max(rings.channels, 1)
        out.append(
            JobHealthFinding(
                "host-lost-a-nic-cable",
                "error",
                name,
                f"host {name} lost every NIC cable: it is cut off from the network, its GPUs "
                f"reach only their own node, and the {per_ring} "
                f"flow(s) each of NCCL's {rings.channels} ring(s) has to and from it cannot "
                "run",
                "fix a cable or leave the host out (`fabricui place N --health FILE` picks "
                "around it)",
                tuple(int(i) for i in mine),
                (name,),
            )
        )
    for change in overlay.changes:
        nic = change.devices[0]
        if change.kind != "down" or change.factor != 0.0 or change.devices[1] == -1:
            continue
        if fabric.dev_kind[nic] != DeviceKind.NIC:
            continue
        node = int(fabric.dev_node[nic])
        mine = np.flatnonzero(node_of == node)
        if not mine.size or node in overlay.cut_off:  # said once for the host above
            continue
        nics = sorted({fabric.device_name(int(n)) for n in np.unique(fabric.gpu_nic[ranks[mine]])})
        (name,) = host_of([node])
        out.append(
            JobHealthFinding(
                "host-lost-a-nic-cable",
                "warning",
                change.label,
                f"host {name} lost {change.label}: its GPUs send through "
                f"{', '.join(nics)}, which carry more than their share",
                f"fix the cable or leave the host out ({change.source})",
                tuple(int(i) for i in mine),
                (name,),
            )
        )
    return out
