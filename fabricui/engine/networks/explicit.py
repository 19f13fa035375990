"""An imported cluster's own switch graph (``net.layout: explicit``), routed per leaf pair.

One route per flow as the router picks it, and loads spread over every route it could
pick, shared by every flow of the leaf pair (``graph_routes.ExplicitFlows``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from fabricui.engine.graph_routes import ExplicitFlows, Incidence
from fabricui.engine.networks.base import (
    FloatArray,
    IntArray,
    Network,
    has_network_links,
)
from fabricui.engine.route_rows import row_of_cells

if TYPE_CHECKING:
    from fabricui.engine.networks.domain import DomainRoutes
    from fabricui.engine.routing import Router
    from fabricui.fabric.fabric import Fabric


class ExplicitNetwork(Network):
    """A fabric whose network is an explicit switch graph."""

    def __init__(
        self, fabric: Fabric, router: Router, domain: DomainRoutes, capacity_GBps: FloatArray
    ) -> None:
        super().__init__(fabric, router, domain, capacity_GBps)
        self._graph = ExplicitFlows(fabric, router)

    @staticmethod
    def applies(fabric: Fabric) -> bool:
        """Network links laid out ``explicit``."""
        net = fabric.spec.net
        return has_network_links(fabric) and net is not None and net.layout == "explicit"

    def segments(
        self, a: IntArray, b: IntArray, aggregate: bool, valiant: bool
    ) -> tuple[IntArray, FloatArray | None]:
        """One route per flow (loads come from ``incidence``)."""
        return self.domain.rows_routing_apart(a, b, self._graph.paths), None

    def incidence(self, a: IntArray, b: IntArray) -> Incidence | None:
        """Flows between domains load their own links and their leaf pair's spread (one
        shared group per pair); flows inside a domain their domain route."""
        g = self.domain.gpus
        same = (a // g) == (b // g)
        rows = np.flatnonzero(~same)
        if not rows.size:
            return None
        inc = self._graph.incidence(a[rows], b[rows], a.shape[0], rows)
        local = np.flatnonzero(same & (a != b))
        pair = self.domain.shifted(a[local], b[local])
        keep = pair >= 0
        return Incidence(
            n_flows=inc.n_flows,
            flow=np.concatenate([inc.flow, local[row_of_cells(keep)]]),
            res=np.concatenate([inc.res, pair[keep]]),
            weight=None,
            group=inc.group,
            group_ptr=inc.group_ptr,
            group_res=inc.group_res,
            group_weight=inc.group_weight,
        )
