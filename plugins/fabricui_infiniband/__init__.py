"""Built-in plugin: the InfiniBand interconnect (scale-out)."""

from __future__ import annotations

from typing import Callable

from fabricui import hookimpl
from fabricui.engine.types import Interconnect

INFINIBAND = Interconnect(
    name="infiniband",
    families=("infiniband",),
    description="NVIDIA InfiniBand",
)


@hookimpl
def register_interconnects(register: Callable[[Interconnect], None]) -> None:
    """Register the infiniband interconnect.

    Args:
        register: The host's callback.
    """
    register(INFINIBAND)


@hookimpl
def register_collective_algorithms(register: Callable[[object], None]) -> None:
    """Register SHARP in-network all-reduce.

    Args:
        register: The host's callback.
    """
    from fabricui_infiniband.sharp import Sharp

    register(Sharp())
