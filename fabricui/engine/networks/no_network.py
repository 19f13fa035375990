"""No network between scale-up domains (a single node): flows stay inside their domain."""

from __future__ import annotations

from fabricui.engine.networks.base import FloatArray, IntArray, Network
from fabricui.errors import EngineError
from fabricui.fabric.fabric import Fabric


class NoNetwork(Network):
    """Domain routes only; a flow between domains is an error."""

    @staticmethod
    def applies(fabric: Fabric) -> bool:
        """Any fabric (the last kind tried)."""
        return True

    def segments(
        self, a: IntArray, b: IntArray, aggregate: bool, valiant: bool
    ) -> tuple[IntArray, FloatArray | None]:
        """Every flow's domain route.

        Raises:
            EngineError: A flow between two domains.
        """
        flows = self.domain.split(a, b)
        if not flows.same.all():
            raise EngineError(f"{self.fabric.spec.id}: no network between nodes")
        return flows.local_only(), None
