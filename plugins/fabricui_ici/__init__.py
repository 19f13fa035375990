"""Built-in plugin: TPU-style inter-chip interconnect (ICI) for direct 3D-torus fabrics."""

from __future__ import annotations

from typing import Callable

from fabricui import hookimpl
from fabricui.engine.types import Interconnect

ICI = Interconnect(
    name="ici",
    families=("ici",),
    description="Google TPU inter-chip interconnect (direct links in a 3D torus)",
)


@hookimpl
def register_interconnects(register: Callable[[Interconnect], None]) -> None:
    """Register the ici interconnect.

    Args:
        register: The host's callback.
    """
    register(ICI)


@hookimpl
def register_collective_algorithms(register: Callable[[object], None]) -> None:
    """Register per-dimension torus rings.

    Args:
        register: The host's callback.
    """
    from fabricui_ici.torus import TorusRings

    register(TorusRings())
