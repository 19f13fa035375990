"""Network links but no table to read routes from (e.g. a plugin's builder).

Flows between domains are routed one by one with ``Router.route`` rather than guessed:
slow, never approximate.
"""

from __future__ import annotations

from fabricui.engine.networks.base import FloatArray, IntArray, Network, has_network_links
from fabricui.engine.route_rows import pad_rows
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
        return self.domain.rows_routing_apart(a, b, self._routed_one_by_one), None

    def _routed_one_by_one(self, a: IntArray, b: IntArray) -> IntArray:
        """(n, width) ``Router.route`` of each pair, -1 padded."""
        route = self.router.route
        return pad_rows([[int(k) for k in route(int(x), int(y))] for x, y in zip(a, b)])
