"""Traffic patterns on a requested fabric: max-min fair rates of every flow and the
busiest links."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from fabricui.engine.bulk import BulkRouter
from fabricui.engine.traffic import pattern_flows, simulate_traffic
from fabricui.errors import ConfigError
from fabricui.services import flow_memory
from fabricui.services.command_requests import TrafficRequest
from fabricui.services.jobs import job_of, placeable_ranks
from fabricui.services.progress import NO_PROGRESS, Phases
from fabricui.services.session import load_fabric

if TYPE_CHECKING:
    from fabricui.hwdb.catalog import Catalog
    from fabricui.plugins import PluginHost


#: Phases ``simulate`` reports.
TRAFFIC_PHASES = 3


@dataclass(frozen=True)
class TrafficResult:
    """What ``fabricui traffic`` reports. Flows stay arrays (a million-flow all-to-all is
    named only when a caller asks for every flow)."""

    topology: str
    """Topology id."""
    pattern: str
    """Pattern name."""
    gpus: int
    """GPUs taking part."""
    src_ranks: Any
    """(flows,) global rank each flow leaves."""
    dst_ranks: Any
    """(flows,) global rank each flow enters."""
    rate_GBps: Any
    """(flows,) max-min fair rate of each flow [GB/s]."""
    gpu_names: tuple[str, ...]
    """Name of every global rank (``n0.g3``), indexed by rank."""
    rates: dict[str, float]
    """``min_GBps``, ``median_GBps``, ``max_GBps``, ``total_GBps`` over the flows."""
    busiest_links: tuple[dict[str, Any], ...]
    """The most loaded links: ``link``, ``generation``, ``load_GBps``, ``capacity_GBps``,
    ``utilization``."""

    @property
    def n_flows(self) -> int:
        """Number of flows."""
        return int(len(self.rate_GBps))

    @property
    def flows(self) -> list[tuple[str, str, float]]:
        """Every flow: (source GPU, destination GPU, rate [GB/s]), in flow order."""
        return self._named(slice(None))

    def slowest_flows(self, count: int = 5) -> list[tuple[str, str, float]]:
        """The ``count`` slowest flows, slowest first (ties in flow order)."""
        order = np.argsort(self.rate_GBps, kind="stable")[:count]
        return self._named(order)

    def _named(self, which: Any) -> list[tuple[str, str, float]]:
        """Flows ``which`` (an index array or a slice) with their GPUs' names."""
        names = np.asarray(self.gpu_names, dtype=object)
        return list(
            zip(
                names[self.src_ranks[which]].tolist(),
                names[self.dst_ranks[which]].tolist(),
                self.rate_GBps[which].tolist(),
            )
        )

    def to_json(self) -> dict[str, Any]:
        """The ``fabricui traffic --json`` object."""
        return {
            "topology": self.topology,
            "pattern": self.pattern,
            "gpus": self.gpus,
            "flows": [{"src": a, "dst": b, "rate_GBps": r} for a, b, r in self.flows],
            "rates": self.rates,
            "busiest_links": list(self.busiest_links),
        }


def simulate(
    request: TrafficRequest,
    catalog: Catalog | None = None,
    host: PluginHost | None = None,
    progress: Phases = NO_PROGRESS,
) -> TrafficResult:
    """Route every flow of the pattern and share the links max-min fairly, reporting
    ``TRAFFIC_PHASES`` phases to ``progress``.

    Raises:
        FabricError: Unknown topology, a GPU count or ``top`` out of range, a negative
            ``seed``.
    """
    if request.seed < 0:
        raise ConfigError(f"--seed must be >= 0 (got {request.seed})")
    progress.phase("building the fabric")
    fabric = load_fabric(request.topology, catalog, host)
    job = job_of(fabric, request.hosts)
    members = job.ranks if job is not None else None
    # An imported cluster's empty NVLink-domain slots hold no host: never in a pattern.
    placeable = placeable_ranks(fabric)
    n = (
        len(members)
        if members is not None
        else (placeable.shape[0] if request.gpus is None else request.gpus)
    )
    if not 2 <= n <= placeable.shape[0]:
        raise ConfigError(f"--gpus must be within 2..{placeable.shape[0]} (got {n})")
    if request.top < 1:
        raise ConfigError(f"--top must be at least 1 (got {request.top})")
    group = members if members is not None else placeable[:n]
    bulk = BulkRouter(fabric)
    flow_memory.admit_flows(
        f"traffic {request.pattern} among {n} GPUs",
        n,
        request.pattern,
        flow_memory.traffic_cost(fabric, request.pattern, group, bulk, request.seed),
        lambda most: f"use --gpus {most} or fewer, or --pattern ring / random-pairs",
    )
    src, dst = pattern_flows(request.pattern, group, request.seed)
    progress.phase(f"routing {len(src):,} flows, max-min fair rates")
    report = simulate_traffic(fabric, src, dst, bulk)
    progress.phase("busiest links")
    name = fabric.device_name
    links = tuple(
        {
            "link": f"{name(int(fabric.link_src[k]))}->{name(int(fabric.link_dst[k]))}",
            "generation": fabric.generations[int(fabric.link_gen[k])],
            "load_GBps": float(report.link_load_GBps[k]),
            "capacity_GBps": float(report.link_capacity_GBps[k]),
            "utilization": float(report.link_load_GBps[k] / report.link_capacity_GBps[k]),
        }
        for k in report.busiest_links(request.top)
    )
    rates = report.rate_GBps
    return TrafficResult(
        topology=fabric.spec.id,
        pattern=request.pattern,
        gpus=n,
        src_ranks=np.asarray(src),
        dst_ranks=np.asarray(dst),
        rate_GBps=np.asarray(rates, dtype=float),
        gpu_names=tuple(fabric.gpu_name(rank) for rank in range(fabric.n_gpus)),
        rates={
            "min_GBps": float(rates.min()),
            "median_GBps": float(np.median(rates)),
            "max_GBps": float(rates.max()),
            "total_GBps": float(rates.sum()),
        },
        busiest_links=links,
    )


@dataclass(frozen=True)
class Heat:
    """How busy every device is under a traffic pattern: for the map's heat colours."""

    pattern: str
    """Pattern name."""
    utilization: Any
    """(n_devices,) highest load / capacity over the links each device sends or receives
    on (0 when none carries traffic)."""
    busiest: str
    """The busiest link and its load against its achievable capacity (bandwidth x
    efficiency, as ``traffic`` says), as a line for the legend."""


def heat(fabric: Any, pattern: str, ranks: Any = None) -> Heat:
    """Route ``pattern`` among ``ranks`` (every GPU by default) with max-min fair rates and
    take each device's busiest link.

    Raises:
        FabricError: A pattern too big for the memory budget (one line, what fits).
    """
    group = placeable_ranks(fabric) if ranks is None else np.asarray(ranks)
    bulk = BulkRouter(fabric)
    flow_memory.admit_flows(
        f"heat of {pattern} among {len(group)} GPUs",
        len(group),
        pattern,
        flow_memory.traffic_cost(fabric, pattern, group, bulk),
        lambda most: "choose the ring pattern, or fewer nodes",
    )
    src, dst = pattern_flows(pattern, group)
    report = simulate_traffic(fabric, src, dst, bulk)
    with np.errstate(divide="ignore", invalid="ignore"):
        util = np.where(
            report.link_capacity_GBps > 0, report.link_load_GBps / report.link_capacity_GBps, 0.0
        )
    per_device = np.zeros(fabric.n_devices)
    np.maximum.at(per_device, fabric.link_src, util)
    np.maximum.at(per_device, fabric.link_dst, util)
    top = report.busiest_links(1)
    busiest = ""
    if top.size:
        k = int(top[0])
        name = fabric.device_name
        busiest = (
            f"busiest {name(int(fabric.link_src[k]))}->{name(int(fabric.link_dst[k]))} "
            # achievable (bandwidth x efficiency): the path panel lists the raw bandwidth
            f"{util[k]:.0%} of {report.link_capacity_GBps[k]:.0f} GB/s achievable"
        )
    return Heat(pattern, per_device, busiest)
