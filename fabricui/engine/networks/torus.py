"""A torus of chips (``net.layout: torus``) routed from its table.

Each flow takes its one dimension-order route (``Torus.paths``), so its resources are
plain links: no aggregates, no domain templates.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from fabricui.engine.networks.base import FloatArray, IntArray, Network

if TYPE_CHECKING:
    from fabricui.engine.networks.domain import DomainRoutes
    from fabricui.engine.routing import Router
    from fabricui.fabric.fabric import Fabric
    from fabricui.fabric.torus import Torus


class TorusNetwork(Network):
    """A fabric with a ``Torus`` table."""

    def __init__(
        self, fabric: Fabric, router: Router, domain: DomainRoutes, capacity_GBps: FloatArray
    ) -> None:
        super().__init__(fabric, router, domain, capacity_GBps)
        assert fabric.torus is not None
        self.table: Torus = fabric.torus

    @staticmethod
    def applies(fabric: Fabric) -> bool:
        """A torus table."""
        return fabric.torus is not None

    def segments(
        self, a: IntArray, b: IntArray, aggregate: bool, valiant: bool
    ) -> tuple[IntArray, FloatArray | None]:
        """Every flow's dimension-order route, the same for paths and loads."""
        return self.table.paths(a, b), None
