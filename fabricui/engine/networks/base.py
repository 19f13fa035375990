"""What the bulk router asks of one kind of network (``Network``).

The bulk router (``engine/bulk.py``) answers the same questions on every fabric: paths,
loads, max-min rates. How a flow crosses the network between scale-up domains, and which
resources beyond the links that crossing loads, depends on the kind of network; each kind
is one ``Network`` subclass, and ``networks.network_kind`` picks a fabric's.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import TYPE_CHECKING

import numpy as np
import numpy.typing as npt

if TYPE_CHECKING:
    from fabricui.engine.graph_routes import Incidence
    from fabricui.engine.networks.domain import DomainRoutes
    from fabricui.engine.routing import Router
    from fabricui.fabric.fabric import Fabric

IntArray = npt.NDArray[np.int64]
FloatArray = npt.NDArray[np.float64]
BoolArray = npt.NDArray[np.bool_]


class Network(ABC):
    """One kind of network: its routes between domains and its aggregate resources.

    Resources are the fabric's links (ids ``0 .. n_links - 1``) followed by the kind's
    aggregates, in the order of ``aggregate_capacity_GBps``: each a set of equal-cost links
    that adaptive routing spreads a flow over evenly, with the sum of their capacities
    (exact for even spreading, and it turns one flow into a short, fixed list of
    resources).

    Args:
        fabric: The fabric.
        router: Its per-pair router (templates, PXN proxies, single routes).
        domain: Routes inside a scale-up domain, shared with the bulk router.
        capacity_GBps: (n_links,) capacity of each link for loads and rates [GB/s].
    """

    def __init__(
        self, fabric: Fabric, router: Router, domain: DomainRoutes, capacity_GBps: FloatArray
    ) -> None:
        self.fabric = fabric
        self.router = router
        self.domain = domain
        self.capacity_GBps = capacity_GBps
        self.aggregate_capacity_GBps: list[FloatArray] = []
        """Capacities of the aggregates [GB/s], in resource order after the links."""

    @staticmethod
    @abstractmethod
    def applies(fabric: Fabric) -> bool:
        """True when this kind routes ``fabric``; asked only when the kinds before it in
        ``networks.KINDS`` did not apply."""

    @abstractmethod
    def segments(
        self, a: IntArray, b: IntArray, aggregate: bool, valiant: bool
    ) -> tuple[IntArray, FloatArray | None]:
        """(n_flows, width) link or resource ids of every flow, -1 padded, and the bytes
        each carries per byte of its flow (None: 1 everywhere).

        Args:
            a: (n_flows,) source ranks (checked).
            b: (n_flows,) destination ranks.
            aggregate: Resources (links and aggregates) for loads, else one route per flow.
            valiant: Route flows through intermediate groups (dragonfly only).
        """

    def incidence(self, a: IntArray, b: IntArray) -> Incidence | None:
        """Loads of the flows with shared parts kept as groups (``Incidence``), or None
        to take them from ``segments``."""
        return None

    def modes(self) -> tuple[bool, ...]:
        """Routing modes adaptive routing chooses from (False: minimal, True: Valiant)."""
        return (False,)

    def spread_aggregates(self, resource_load: FloatArray, link_load: FloatArray) -> None:
        """Add each aggregate's load onto its links, as adaptive routing spreads it.

        Args:
            resource_load: (n_resources,) load of every link and aggregate.
            link_load: (n_links,) per-link load, changed in place.
        """
        return None

    def unfold_aggregates(self, load: FloatArray) -> FloatArray:
        """``load`` with aggregates that must be judged link by link spread onto their
        links (and zeroed), for the busiest resource; unchanged by default."""
        return load


def every_gpu_has_nic(fabric: Fabric) -> bool:
    """True when every GPU of a domain block has a NIC (the template tables need one)."""
    return bool((fabric.gpu_nic[: fabric.gpus_per_domain] >= 0).all())


def has_network_links(fabric: Fabric) -> bool:
    """True when the fabric has links beyond its domain blocks."""
    return fabric.n_links > fabric.domains * fabric.node_links
