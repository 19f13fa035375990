"""Built-in plugin: the AMD xGMI (Infinity Fabric) interconnect (scale-up)."""

from __future__ import annotations

from typing import Callable

from fabricui import hookimpl
from fabricui.engine.types import Interconnect

XGMI = Interconnect(
    name="xgmi",
    families=("xgmi",),
    description="AMD Infinity Fabric (xGMI) GPU links",
)


@hookimpl
def register_interconnects(register: Callable[[Interconnect], None]) -> None:
    """Register the xgmi interconnect.

    Args:
        register: The host's callback.
    """
    register(XGMI)
