"""Built-in plugin: PCIe and CPU-socket interconnects (host tier)."""

from __future__ import annotations

from typing import Callable

from fabricui import hookimpl
from fabricui.engine.types import Interconnect

PCIE = Interconnect(
    name="pcie",
    families=("pcie", "cpu"),
    description="PCI Express and CPU socket links",
)


@hookimpl
def register_interconnects(register: Callable[[Interconnect], None]) -> None:
    """Register the pcie interconnect.

    Args:
        register: The host's callback.
    """
    register(PCIE)
