"""Built-in plugin: Ethernet interconnects: RoCE, plain TCP and GPUDirect-TCPXO (scale-out)."""

from __future__ import annotations

from typing import Callable

from fabricui import hookimpl
from fabricui.engine.types import Interconnect

ETHERNET = Interconnect(
    name="ethernet",
    families=("roce", "ethernet", "tcpxo"),
    description="Ethernet: RoCE, TCP and GPUDirect-TCPXO",
)


@hookimpl
def register_interconnects(register: Callable[[Interconnect], None]) -> None:
    """Register the ethernet interconnect.

    Args:
        register: The host's callback.
    """
    register(ETHERNET)
