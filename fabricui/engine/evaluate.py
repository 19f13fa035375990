"""Wiring: validated inputs in, the figures every view shows out (paths for now)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from fabricui.engine.algorithms import core_algorithms
from fabricui.engine.bulk import line_rate_bulk_router
from fabricui.engine.collectives import Prediction, predict
from fabricui.engine.group import Group
from fabricui.engine.nccl.picks import NcclSettings, narrowed_by_nccl_lists, refuse_settings
from fabricui.engine.paths import (
    Hop,
    describe_hops,
    path_latency_us,
    transfer_time_us,
)
from fabricui.engine.routing import Router
from fabricui.engine.types import CollectiveAlgorithm
from fabricui.errors import EngineError
from fabricui.fabric.fabric import Fabric


@dataclass(frozen=True)
class PathReport:
    """A routed path between two GPUs and its figures."""

    topology: str
    """Topology id."""
    src: str
    """Source GPU (``n0.g0``)."""
    dst: str
    """Destination GPU."""
    src_rank: int
    """Global rank of the source GPU."""
    dst_rank: int
    """Global rank of the destination GPU."""
    hops: tuple[Hop, ...]
    """The hops in order."""
    bottleneck_GBps: float
    """Bandwidth a transfer gets at the narrowest hop, per direction [GB/s]: the link's, or
    the parallel equal links' it spreads over there (a leaf's uplinks)."""
    bottleneck_hop: int
    """Index of the (first) narrowest hop."""
    latency_us: float
    """Sum of link and forwarding latencies [us]."""
    size_bytes: int | None = None
    """Message size asked for, if any [bytes]."""
    transfer_us: float | None = None
    """``latency + size / bottleneck`` when a size was given [us]."""

    @property
    def bottleneck_link(self) -> str:
        """``from->to`` of the narrowest hop."""
        hop = self.hops[self.bottleneck_hop]
        return f"{hop.src}->{hop.dst}"

    def to_json(self) -> dict[str, Any]:
        """The ``fabricui path --json`` object."""
        hop = self.hops[self.bottleneck_hop]
        out: dict[str, Any] = {
            "topology": self.topology,
            "src": self.src,
            "dst": self.dst,
            "hops": [
                {
                    "from": h.src,
                    "to": h.dst,
                    "link": h.link,
                    "count": h.count,
                    "bw_GBps": h.bw_GBps,
                    "routes": h.routes,
                    "spread_GBps": h.transfer_GBps,
                    "lat_us": h.lat_us,
                    "from_model": h.src_model,
                    "to_model": h.dst_model,
                }
                for h in self.hops
            ],
            "bottleneck_GBps": self.bottleneck_GBps,
            "bottleneck_link": self.bottleneck_link,
            "bottleneck_generation": hop.link,
            "latency_us": self.latency_us,
        }
        if self.transfer_us is not None:
            out["size_bytes"] = self.size_bytes
            out["transfer_us"] = self.transfer_us
        return out


def _bottleneck_hop(fabric: Fabric, hops: tuple[Hop, ...]) -> int:
    """Index of the narrowest hop; among equally narrow ones a network hop (the NIC's port
    rather than the on-die or PCIe hop that feeds it at the same rate), else the first."""
    narrowest = min(h.transfer_GBps for h in hops)
    tied = [i for i, h in enumerate(hops) if h.transfer_GBps <= narrowest * (1 + 1e-9)]
    records = {r.id: r for r in fabric.generation_records}
    network = [i for i in tied if getattr(records.get(hops[i].link), "tier", "") == "scale-out"]
    return (network or tied)[0]


def evaluate_path(
    fabric: Fabric,
    src: int,
    dst: int,
    size_bytes: int | None = None,
    router: Router | None = None,
) -> PathReport:
    """Route between two GPUs and compute the path's figures.

    Args:
        fabric: The fabric.
        src: Global rank of the source GPU (names are parsed where users type them:
            ``fabric.ids.parse_gpu_id``).
        dst: Global rank of the destination GPU.
        size_bytes: Optional message size for the transfer time [bytes].
        router: A router to reuse (its caches), else a new one.

    Returns:
        The path report.

    Raises:
        EngineError: A rank outside the fabric, identical endpoints, or a negative size.
    """
    a, b = int(src), int(dst)
    for rank in (a, b):
        if not 0 <= rank < fabric.n_gpus:
            raise EngineError(f"no GPU rank {rank} in {fabric.spec.id} ({fabric.n_gpus} GPUs)")
    if a == b:
        raise EngineError(f"source and destination are the same GPU ({fabric.gpu_name(a)})")
    if size_bytes is not None and size_bytes < 0:
        raise EngineError(f"size must not be negative (got {size_bytes})")
    router = router or Router.for_fabric(fabric)
    links = router.route(a, b)
    latency = path_latency_us(fabric, links)
    # A transfer spreads over a NIC's ports and over equal-cost cables (NCCL's channels on
    # ECMP or adaptive routing): each hop gives it what its share of links carries.
    shares = line_rate_bulk_router(router).link_shares(a, b)
    hops = tuple(describe_hops(fabric, links, shares))
    position = _bottleneck_hop(fabric, hops)
    bw = hops[position].transfer_GBps
    return PathReport(
        topology=fabric.spec.id,
        src=fabric.gpu_name(a),
        dst=fabric.gpu_name(b),
        src_rank=a,
        dst_rank=b,
        hops=hops,
        bottleneck_GBps=bw,
        bottleneck_hop=position,
        latency_us=latency,
        size_bytes=size_bytes,
        transfer_us=None if size_bytes is None else transfer_time_us(size_bytes, latency, bw),
    )


def algorithms_for_env(
    env: dict[str, Any] | None = None, extra: Iterable[CollectiveAlgorithm] = ()
) -> list[CollectiveAlgorithm]:
    """Core algorithms plus ``extra`` ones (the plugins', passed in by the service layer),
    minus those an NCCL environment disables.

    ``NCCL_NVLS_ENABLE=0`` removes NVLS algorithms; ``NCCL_ALGO`` is honoured by the caller
    passing ``algo``.

    Args:
        env: NCCL environment variables of a run.
        extra: Further candidate algorithms (NVLS, SHARP ... from plugins).

    Returns:
        The candidate algorithms.
    """
    algorithms = [*core_algorithms(), *extra]
    env = env or {}
    if str(env.get("NCCL_NVLS_ENABLE", "1")) == "0":
        algorithms = [a for a in algorithms if not a.name.startswith("nvls")]
    return algorithms


def evaluate_collective(
    fabric: Fabric,
    op: str,
    size_bytes: npt.ArrayLike,
    ranks: npt.ArrayLike | None = None,
    algorithms: list[CollectiveAlgorithm] | None = None,
    algo: str = "auto",
    single_process: bool = False,
    router: Router | None = None,
    library_version: tuple[int, int, int] | None = None,
    nccl_env: Mapping[str, str] | None = None,
    gpus_per_thread: int | None = None,
) -> Prediction:
    """Predict a collective on a fabric.

    Args:
        fabric: The fabric.
        op: Collective name (``OPS``).
        size_bytes: Sizes [bytes], nccl-tests convention.
        ranks: Global ranks of the group (default: every GPU).
        algorithms: Candidate algorithms (default: the core ones; the service layer adds the
            plugins').
        algo: ``auto`` or an algorithm name.
        single_process: One process drives every GPU of a node.
        router: A router to share.
        library_version: NCCL release of the run (``(2, 23, 4)``) for defaults that changed
            between releases (``parse_library_version``); None: the newest release modelled.
        nccl_env: The run's NCCL environment (``NCCL_ALGO``, ``NCCL_PROTO``, channel bounds
            ...), read as NCCL reads it.
        gpus_per_thread: With ``single_process``, the GPUs one thread drives when fewer
            than a node's (``Group.gpus_per_thread``).

    Returns:
        Per-size prediction: NCCL's pick (``time_us``) and the best pick (``choice``).
    """
    group = Group(
        fabric,
        np.arange(fabric.n_gpus) if ranks is None else ranks,
        router=router,
        single_process=single_process,
        library_version=library_version,
        nccl_env=nccl_env,
        gpus_per_thread=gpus_per_thread,
    )
    return predict(group, op, size_bytes, algorithms or algorithms_for_env(), algo=algo)


#: The size the settings check prices at [bytes]: whether a candidate runs does not
#: depend on the size (a core algorithm's time is finite at every size or at none).
CHECK_SIZE_BYTES = 1 << 20


def check_collective_settings(
    fabric: Fabric,
    op: str,
    ranks: npt.ArrayLike,
    single_process: bool = False,
    library_version: tuple[int, int, int] | None = None,
    nccl_env: Mapping[str, str] | None = None,
    gpus_per_thread: int | None = None,
    algorithms: list[CollectiveAlgorithm] | None = None,
    router: Router | None = None,
) -> None:
    """Refuse a collective's NCCL release and environment as ``evaluate_collective``
    refuses them, without pricing anything (``picks.refuse_settings``): a fraction of a
    prediction's time, so settings can be checked as they are typed.

    What NCCL_ALGO and NCCL_PROTO leave a library whose tuner is not modelled (RCCL) is
    known only once its candidates are priced: given ``algorithms``, they are, at one size
    (``CHECK_SIZE_BYTES``), and settings that leave it nothing are refused as the
    prediction refuses them.

    Without ``router``, the group routes on a router of its own, not the fabric's shared
    one: the check may run while a prediction routes on that one, whose caches are not
    shared between threads. A caller that serialises the shared router's use passes it, and
    what a prediction routed is not routed again.

    Args:
        fabric: The fabric.
        op: Collective name (``OPS``).
        ranks: Global ranks of the group.
        single_process: One process drives every GPU of a node.
        library_version: NCCL release of the run; None: the newest release modelled.
        nccl_env: The run's NCCL environment.
        gpus_per_thread: With ``single_process``, the GPUs one thread drives.
        algorithms: The prediction's candidate algorithms (core and plugin ones), to price
            where the settings narrow a library whose tuner is not modelled; None: not
            priced.
        router: The router to route on, used by no other thread meanwhile; None: one of
            its own.

    Raises:
        EngineError: A malformed setting or release, or settings the library refuses for
            ``op`` on these ranks (the line ``evaluate_collective`` raises).
    """
    group = Group(
        fabric,
        ranks,
        router=router or Router(fabric),
        single_process=single_process,
        library_version=library_version,
        nccl_env=nccl_env,
        gpus_per_thread=gpus_per_thread,
    )
    settings = NcclSettings.of(group.library_version, group.nccl_env)
    refuse_settings(group, op, settings)
    if algorithms is not None and narrowed_by_nccl_lists(group, op, settings):
        predict(group, op, [CHECK_SIZE_BYTES], algorithms, nccl=settings)
