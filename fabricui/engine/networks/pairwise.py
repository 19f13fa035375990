"""Network links but no table to read routes from (e.g. a plugin's builder).

Flows between domains are routed one by one with ``Router.route`` rather than guessed:
slow, never approximate.
"""

from __future__ import annotations

import numpy as np

from fabricui.engine.graph_routes import pad_rows
from fabricui.engine.networks.base import FloatArray, IntArray, Network, has_network_links
from fabricui.fabric.fabric import Fabric


class PairwiseNetwork(Network):
    """A network routed pair by pair."""

    @staticmethod
    def applies(fabric: Fabric) -> bool:
        """Links beyond the domain blocks."""
        return has_network_links(fabric)

    def segments(
        self, a: IntArray, b: IntArray, aggregate: bool, valiant: bool
    ) -> tuple[IntArray, FloatArray | None]:
        """``Router.route`` for flows between domains, domain routes for the others."""
        flows = self.domain.split(a, b)
        if flows.same.all():
            return flows.local_only(), None
        cross = np.flatnonzero(~flows.same)
        route = self.router.route
        routed = pad_rows([[int(k) for k in route(int(a[i]), int(b[i]))] for i in cross])
        return flows.with_routes(cross, routed), None
